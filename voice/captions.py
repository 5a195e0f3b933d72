"""Captions: the words of both sides sent to the client as transcript events (§9.2).

`UserCaptions` sends the person's own words the moment speech-to-text finalises them, so a
speaker or call page can show what was heard.

`AssistantCaptions` sits right after the TTS and sends each of Ava's sentences as its
audio starts. The TTS announces a sentence (an `AggregatedTextFrame`) just before that
sentence's audio, in the same ordered stream, so a caption sent then reaches the client
with its audio. Ava's processor also sends a caption per sentence ahead of the speech,
but the TTS holds frames it does not speak until its audio is done, so those arrive
after the whole reply has been heard; once a sentence has been captioned here, its late
twin is dropped. A caption whose sentence was never spoken (nothing to say aloud) still
goes through when it arrives.
"""

from __future__ import annotations

from collections import Counter

from pipecat.frames.frames import (
    AggregatedTextFrame,
    Frame,
    OutputTransportMessageFrame,
    OutputTransportMessageUrgentFrame,
    TranscriptionFrame,
    TTSTextFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voice.prosody import emotion_of


class UserCaptions(FrameProcessor):
    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame) and frame.text.strip():
            message = {"type": "transcript", "role": "user", "text": frame.text.strip()}
            await self.push_frame(OutputTransportMessageUrgentFrame(message=message))
        await self.push_frame(frame, direction)


def _assistant_caption_text(frame: Frame) -> str | None:
    if not isinstance(frame, OutputTransportMessageFrame) or isinstance(frame, OutputTransportMessageUrgentFrame):
        return None
    message = frame.message
    if isinstance(message, dict) and message.get("type") == "transcript" and message.get("role") == "assistant":
        text = message.get("text")
        return text if isinstance(text, str) else None
    return None


class AssistantCaptions(FrameProcessor):
    """Sends each spoken sentence's caption as its audio starts (place it after the TTS)."""

    def __init__(self) -> None:
        super().__init__()
        # Sentences captioned here whose late caption from Ava's processor is still due.
        self._sent: Counter[str] = Counter()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, AggregatedTextFrame) and not isinstance(frame, TTSTextFrame) and frame.text.strip():
                await self._caption(frame)
            elif (text := _assistant_caption_text(frame)) is not None and self._sent[text.strip()] > 0:
                self._sent[text.strip()] -= 1
                return  # already shown with its audio
        await self.push_frame(frame, direction)

    async def _caption(self, frame: AggregatedTextFrame) -> None:
        text = frame.text.strip()
        message: dict[str, str] = {"type": "transcript", "role": "assistant", "text": text}
        emotion = emotion_of(str(frame.text_type))
        if emotion:
            message["emotion"] = emotion
        caption = OutputTransportMessageFrame(message=message)
        caption.interruptible = frame.interruptible  # a goodbye's caption survives with its audio
        self._sent[text] += 1
        await self.push_frame(caption)
