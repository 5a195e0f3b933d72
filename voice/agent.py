"""Ava's seat in the voice pipeline: where an LLM service would sit in a Pipecat bot.

At the end of each user turn the aggregator hands over an `LLMContextFrame`; this
processor runs the person's words as a turn through the same router, runtime, thread and
wallet as text (the `VoiceTurn` it is given), then speaks the reply sentence by sentence,
each carrying its emotion as the frame's `text_type` so the TTS can colour it.

The turn runs as its own task. A barge-in cancels what is being spoken, never the turn:
the thread writes finish, only the now-stale speech is dropped. A reply that ends with
`#end#` is spoken uninterruptibly, then the worker is asked to end, which hangs up after
the last audio byte.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pipecat.frames.frames import (
    AggregatedTextFrame,
    EndWorkerFrame,
    Frame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    OutputTransportMessageFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from agents import SpokenReply
from voice.prosody import text_type_for

# The person's words in, what Ava says back out (None: the turn could not run).
VoiceTurn = Callable[[str], Awaitable[SpokenReply | None]]


def last_user_text(frame: LLMContextFrame) -> str:
    """The newest user message in the aggregator's context, as plain text."""
    for message in reversed(frame.context.get_messages()):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content: Any = message.get("content")
        if isinstance(content, str):
            return content.strip()
        if isinstance(content, list):
            return " ".join(p.get("text", "") for p in content if isinstance(p, dict)).strip()
    return ""


def caption(role: str, text: str, emotion: str | None = None) -> OutputTransportMessageFrame:
    """A transcript event for the client (docs/sockets.md#speaker-protocol); emotions travel as words, never as tags."""
    message: dict[str, str] = {"type": "transcript", "role": role, "text": text}
    if emotion:
        message["emotion"] = emotion
    return OutputTransportMessageFrame(message=message)


class AvaVoiceAgent(FrameProcessor):
    """Runs one voice turn per finished user turn and speaks its reply."""

    def __init__(self, turn: VoiceTurn, *, on_end_call: Callable[[], None] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._turn = turn
        self._on_end_call = on_end_call
        # Bumped by every barge-in: a reply computed for an older generation is stale.
        self._generation = 0
        self._ending = False

    def can_generate_metrics(self) -> bool:
        return True

    @property
    def ending(self) -> bool:
        """A goodbye is under way: nothing more will be said on this call."""
        return self._ending

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            text = last_user_text(frame)
            if text and not self._ending:
                self.create_task(self._respond(text, self._generation), name="ava-voice-turn")
            return
        if isinstance(frame, InterruptionFrame):
            self._generation += 1
        await self.push_frame(frame, direction)

    async def _respond(self, text: str, generation: int) -> None:
        await self.start_ttfb_metrics()
        reply = await self._turn(text)
        await self.stop_ttfb_metrics()
        if reply is None or self._ending:
            return
        if generation != self._generation and not reply.end_call:
            return  # the person spoke over us meanwhile: the thread has it, the speech is stale
        await self.speak(reply)

    async def speak(self, reply: SpokenReply) -> None:
        """Speak a reply; a goodbye (#end#) cannot be interrupted and ends the call."""
        ending = reply.end_call
        if ending:
            self._ending = True
            if self._on_end_call is not None:
                self._on_end_call()
        frames: list[Frame] = [LLMFullResponseStartFrame()]
        for segment in reply.segments:
            frames.append(caption("assistant", segment.text, segment.emotion))
            frames.append(AggregatedTextFrame(segment.text, text_type_for(segment.emotion)))
        frames.append(LLMFullResponseEndFrame())
        for frame in frames:
            if ending:
                frame.interruptible = False
            await self.push_frame(frame)
        if ending:
            await self.push_frame(EndWorkerFrame(reason="agent_ended"))
