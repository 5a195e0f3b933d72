"""The Yori agent: persona text, tools, the `MusicPlayer` port and its adapters."""
