"""The Rafal agent: persona text, tools, the `Workspace` port and its adapters."""
