"""The Rafal agent: persona text and tools."""
