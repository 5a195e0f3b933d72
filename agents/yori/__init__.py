"""The Yori agent: persona text and tools."""
