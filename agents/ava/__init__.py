"""The Ava agent: persona text and tools."""
