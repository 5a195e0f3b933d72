"""Ava's seat in the voice pipeline: where an LLM service would sit in a Pipecat bot.

At the end of each user turn the aggregator hands over an `LLMContextFrame`; this
processor runs the person's words as a turn through the same router, runtime, thread and
wallet as text (the `VoiceTurn` it is given), then speaks the reply sentence by sentence,
each carrying its emotion as the frame's `text_type` so the TTS can colour it.

The turn runs as its own task. While it runs, each sentence is spoken the moment the
model has finished writing it (`LiveSpeech`, which the call's turn reads with `live_speech`),
so the first words go out before the answer is over, and an acknowledgement said with a
handoff is heard while the specialist works. A barge-in stops the generation being
spoken (`LiveSpeech.stop`) and drops what is left of it; the turn still writes down and
charges what was generated. Every sentence, whoever says it (the turn as it goes, the
reply at its end, a wake note or the idle prompt through `speak`), goes to the voice
through one place that holds the interruption lock, so a barge-in stops any of them the
same way. A reply that ends with `#end#` is spoken uninterruptibly, then the worker is
asked to end, which hangs up after the last audio byte.

On a traced call the turn runs inside its voice turn's span (voice.tracing), which came
on the frame that ended the person's turn, so the chat turn's spans are its children; each
sentence and the reply's end carry it on to the output, where it is ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
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

from agents import Segment, SpokenReply
from voice.prosody import text_type_for
from voice.tracing import VoiceTurnTrace, turn_of

# The person's words in, what Ava says back out (None: the turn could not run).
VoiceTurn = Callable[[str], Awaitable[SpokenReply | None]]


@dataclass(frozen=True, slots=True)
class LiveSpeech:
    """How a running voice turn speaks as it goes: `say` a finished sentence now; `stop`
    is set when the person speaks over it (the turn stops generating)."""

    say: Callable[[Segment], None]
    stop: asyncio.Event


class _Speaking:
    """What `SPEAKING` holds: the turn's `LiveSpeech` while the turn runs, nothing after.

    Whatever copies the context during the turn keeps this box, not the speech: asyncpg's
    statement cache schedules each new statement's expiry with the context of the turn that
    prepared it, for five minutes, and a `LiveSpeech` held there kept the whole call (its
    agent, pipeline and engines' buffers) alive that long after the hang-up: the calls in
    sequence of bench/call_memory.py (BENCHMARKS.md "Scale")."""

    __slots__ = ("live",)

    def __init__(self, live: LiveSpeech) -> None:
        self.live: LiveSpeech | None = live


# Set while the agent awaits a turn, so the turn (voice.calls.voice_turn) can speak as it goes.
SPEAKING: ContextVar[_Speaking | None] = ContextVar("ava_live_speech", default=None)


def live_speech() -> LiveSpeech | None:
    """The running voice turn's `LiveSpeech`, None outside one (or once it has ended)."""
    box = SPEAKING.get()
    return None if box is None else box.live


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
        self._stop: asyncio.Event | None = None  # the generation being spoken, if any
        # A sentence's frames go out whole before a barge-in's interruption or not at all:
        # pushing yields (observers, event handlers), and a sentence checked as current and
        # pushed after the interruption had passed was spoken after it
        # (docs/sockets.md#voice-pipeline).
        self._pushing = asyncio.Lock()

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
            traced = turn_of(frame)
            if text and not self._ending:
                self.create_task(self._respond(text, self._generation, traced), name="ava-voice-turn")
            elif traced is not None:
                traced.end()  # nothing to run: the turn is over as it began
            return
        if isinstance(frame, InterruptionFrame):
            async with self._pushing:  # after a sentence being pushed, so it goes before this
                self._generation += 1
                if self._stop is not None:
                    self._stop.set()  # the generation being spoken stops where it is
        await self.push_frame(frame, direction)

    async def _respond(self, text: str, generation: int, traced: VoiceTurnTrace | None = None) -> None:
        await self.start_ttfb_metrics()
        said: asyncio.Queue[Segment | None] = asyncio.Queue()
        stop = asyncio.Event()
        self._stop = stop

        def say(segment: Segment) -> None:
            if generation == self._generation and not self._ending:
                said.put_nowait(segment)
            else:
                stop.set()

        speaker = self.create_task(self._speak_as_said(said, generation, traced), name="ava-voice-speaker")
        box = _Speaking(LiveSpeech(say, stop))
        token = SPEAKING.set(box)
        try:
            # The chat turn (a task the call's turn starts) inherits the voice turn's span.
            with traced.span.inside() if traced is not None else contextlib.nullcontext():
                reply = await self._turn(text)
        finally:
            box.live = None  # copies of this context keep nothing of the call from now on
            SPEAKING.reset(token)
            said.put_nowait(None)
            started = await speaker
            if self._stop is stop:
                self._stop = None
        if not started:
            await self.stop_ttfb_metrics()
        if reply is None or self._ending or (generation != self._generation and not reply.end_call):
            # Nothing (more) to say: the turn could not run, a goodbye is under way, or
            # the person spoke over us meanwhile (the thread has it, the speech is stale).
            async with self._pushing:
                if started:
                    await self.push_frame(_stamped(LLMFullResponseEndFrame(), traced))
                elif traced is not None:
                    traced.end()
            return
        await self.speak(reply, started=started, traced=traced, generation=generation)

    async def _speak_as_said(
        self, said: asyncio.Queue[Segment | None], generation: int, traced: VoiceTurnTrace | None
    ) -> bool:
        """Speaks each sentence as the turn says it; True when anything was spoken."""
        started = False
        while (segment := await said.get()) is not None:
            if await self._say_sentence(segment, generation, traced, opened=started) and not started:
                started = True
                await self.stop_ttfb_metrics()
        return started

    async def speak(
        self,
        reply: SpokenReply,
        *,
        started: bool = False,
        traced: VoiceTurnTrace | None = None,
        generation: int | None = None,
    ) -> None:
        """Speak a reply (the rest of one begun as it was said, when `started`; the voice
        turn `traced`, when it answers one; the barge-in `generation` it belongs to, by
        default the current one, as for a wake note or the idle prompt). A barge-in stops
        it where it is: the sentence being handed over goes whole, the rest is dropped. A
        goodbye (#end#) cannot be interrupted and ends the call."""
        ending = reply.end_call
        if ending:
            self._ending = True
            if self._on_end_call is not None:
                self._on_end_call()
        if generation is None:
            generation = self._generation
        opened = started
        for segment in reply.segments:
            if not await self._say_sentence(segment, generation, traced, opened=opened, goodbye=ending):
                break  # the person spoke over it: nothing more of it is said
            opened = True
        async with self._pushing:
            if not opened and reply.segments:
                if traced is not None:
                    traced.end()  # interrupted before its first sentence: nothing to close
                return
            frames: list[Frame] = [] if opened else [LLMFullResponseStartFrame()]
            frames.append(_stamped(LLMFullResponseEndFrame(), traced))
            await self._push_all(frames, goodbye=ending)
        if ending:
            await self.push_frame(EndWorkerFrame(reason="agent_ended"))

    async def _say_sentence(
        self,
        segment: Segment,
        generation: int,
        traced: VoiceTurnTrace | None,
        *,
        opened: bool,
        goodbye: bool = False,
    ) -> bool:
        """The one place a sentence is handed to the voice, whoever says it (a turn as it
        goes, a reply at its end, a wake note, the idle prompt): under the interruption
        lock, so it goes out whole before a barge-in or not at all, and only while
        `generation` is current (a goodbye always). True when it went out."""
        async with self._pushing:
            if not goodbye and (generation != self._generation or self._ending):
                return False
            frames: list[Frame] = [] if opened else [LLMFullResponseStartFrame()]
            frames.append(caption("assistant", segment.text, segment.emotion))
            frames.append(_stamped(AggregatedTextFrame(segment.text, text_type_for(segment.emotion)), traced))
            await self._push_all(frames, goodbye=goodbye)
        return True

    async def _push_all(self, frames: list[Frame], *, goodbye: bool) -> None:
        for frame in frames:
            if goodbye:
                frame.interruptible = False
            await self.push_frame(frame)


def _stamped(frame: Frame, traced: VoiceTurnTrace | None) -> Frame:
    """`frame`, marked as the voice turn's when there is one (a sentence is stamped as
    handed to the TTS now)."""
    return traced.stamp(frame) if traced is not None else frame
