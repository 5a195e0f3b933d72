"""The voice doors: the Pipecat pipeline, speech engines, prosody and hang-up."""
