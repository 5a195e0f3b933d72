"""The Zee agent: persona text and tools."""
