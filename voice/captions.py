"""Captions: the words of both sides sent to the client as transcript events (docs/sockets.md#speaker-protocol).

`UserCaptions` sends the person's own words the moment speech-to-text finalises them, so a
speaker or call page can show what was heard.

`AssistantCaptions` sits right after the TTS and sends each of Ava's sentences as its
audio starts. The TTS announces a sentence (an `AggregatedTextFrame`) just before that
sentence's audio, in the same ordered stream, so a caption sent then reaches the client
with its audio. Ava's processor also sends a caption per sentence ahead of the speech,
but the TTS lets only the first through at once and holds the others until its audio is
done, so they would arrive after the whole reply had been heard. Here each of those is
held (or dropped, when it comes after its sentence) and sent when its sentence is
announced; a caption whose sentence was never spoken still goes, at the reply's end.
"""

from __future__ import annotations

from collections import Counter

from pipecat.frames.frames import (
    AggregatedTextFrame,
    Frame,
    LLMFullResponseEndFrame,
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
        # Ava's captions that came before their sentence was spoken, by text, in order.
        self._early: dict[str, list[OutputTransportMessageFrame]] = {}
        # Sentences captioned here whose caption from Ava's processor is still due.
        self._late: Counter[str] = Counter()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, AggregatedTextFrame) and not isinstance(frame, TTSTextFrame) and frame.text.strip():
                await self._caption(frame)
            elif (text := _assistant_caption_text(frame)) is not None:
                self._hold_or_drop(text.strip(), frame)
                return
            elif isinstance(frame, LLMFullResponseEndFrame):
                await self._flush()  # a caption whose sentence was never spoken still goes, late
        await self.push_frame(frame, direction)

    def _hold_or_drop(self, text: str, frame: Frame) -> None:
        if self._late[text] > 0:
            self._late[text] -= 1  # its sentence was already captioned with its audio
        else:
            assert isinstance(frame, OutputTransportMessageFrame)
            self._early.setdefault(text, []).append(frame)

    async def _caption(self, frame: AggregatedTextFrame) -> None:
        text = frame.text.strip()
        held = self._early.get(text)
        if held:
            caption = held.pop(0)
        else:
            message: dict[str, str] = {"type": "transcript", "role": "assistant", "text": text}
            emotion = emotion_of(str(frame.text_type))
            if emotion:
                message["emotion"] = emotion
            caption = OutputTransportMessageFrame(message=message)
            self._late[text] += 1
        caption.interruptible = frame.interruptible  # a goodbye's caption survives with its audio
        await self.push_frame(caption)

    async def _flush(self) -> None:
        early, self._early = self._early, {}
        self._late.clear()
        for frames in early.values():
            for caption in frames:
                await self.push_frame(caption)
