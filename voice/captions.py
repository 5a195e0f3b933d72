"""Sends the person's own words back to the client as a transcript event, the moment
speech-to-text finalises them, so a speaker or call page can show what was heard."""

from __future__ import annotations

from pipecat.frames.frames import Frame, OutputTransportMessageUrgentFrame, TranscriptionFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor


class UserCaptions(FrameProcessor):
    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame) and frame.text.strip():
            message = {"type": "transcript", "role": "user", "text": frame.text.strip()}
            await self.push_frame(OutputTransportMessageUrgentFrame(message=message))
        await self.push_frame(frame, direction)
