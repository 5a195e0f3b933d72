"""One spoken request, one trace: the voice pipeline's stages of a call's turn as spans
around the chat turn's own (docs/operations.md#traces).

    voice turn   (avagenc.call, avagenc.channel, avagenc.person; avagenc.sentences,
    │             avagenc.interrupted when the person spoke over it)
    ├── speech       the person speaking, as the VAD heard it
    ├── stt          from the end of the speech to its final transcript
    ├── turn end     from the end of the speech to the decision that the turn is over
    ├── turn         the chat turn (chat/turns.py): routing, runs, model calls, tools, charges
    ├── first audio  from the end of the speech to the reply's first audio frame out
    └── tts          each sentence: handed to the TTS, to its first audio frame out (avagenc.index)

The voice turn is not one block of code. `TurnTap` (between the user aggregator and Ava)
opens it when the person's turn ends (an `LLMContextFrame`), dated back to when their
speech started, with the speech, recognition and turn-end children it now knows, and hangs
it on that frame; Ava runs the chat turn inside it (so the chat's spans are its children)
and hangs it on each sentence she hands the TTS and on her reply's end; `SpeechTap` (after
the TTS) records each sentence's first audio and ends the turn with its reply, or at a
barge-in, or with the call. `HearingTap` (after the STT) notes when the final transcript
came.

What Ava says on the call unprompted (a wake note's reply, "are you still there?", a
goodbye) is not a voice turn: the call's `say` (voice.session) opens a `say` span under
whatever trace is current where it is asked (a wake note's `wake` root, chat/wakes.py; the
call clock's `idle prompt`), or a root of its own, and its sentences' `tts` spans come the
same way. Each slice of the call's speech billed (voice.shared) is a `voice charge` span
under the latest of these, the exchange it bills.

The taps run in direct mode: no queue or task of their own, one function call per frame
and no span per audio frame. With no exporter every span is a non-recording one.
"""

from __future__ import annotations

import time
from typing import Any

from pipecat.frames.frames import (
    AggregatedTextFrame,
    CancelFrame,
    EndFrame,
    Frame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    OutputAudioRawFrame,
    TranscriptionFrame,
    TTSTextFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from telemetry import OpenSpan, begin, here

# Where a frame carries the voice turn it belongs to (Pipecat's per-frame metadata).
TURN_KEY = "avagenc.voice_turn"
_SENTENCE_KEY = "avagenc.sentence"  # (index in the turn, handed to the TTS at, ns)
_SPOKEN_OVER_KEY = "avagenc.spoken_over"  # on a barge-in: the turns open when it began


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class VoiceTurnTrace:
    """One voice turn's span, carried by its frames from Ava to the output."""

    def __init__(self, span: OpenSpan, *, speech_end_ns: int | None, on_end: CallTrace) -> None:
        self.span = span
        self._speech_end_ns = speech_end_ns
        self._call = on_end
        self._sentences = 0
        self._first_audio = False
        self.ended = False

    def stamp(self, frame: Frame) -> Frame:
        """Mark `frame` as this turn's: a sentence handed to the TTS now, or its reply's end."""
        frame.metadata[TURN_KEY] = self
        if isinstance(frame, AggregatedTextFrame):
            self._sentences += 1
            frame.metadata[_SENTENCE_KEY] = (self._sentences, time.time_ns())
        return frame

    def audio_out(self, sentence: tuple[int, int], at_ns: int) -> None:
        """A sentence's first audio frame went out (and, the first time, the reply's)."""
        index, handed_ns = sentence
        self.span.record("tts", start_ns=handed_ns, end_ns=at_ns, index=index)
        if not self._first_audio and self._speech_end_ns is not None:  # said unprompted: no speech before it
            self._first_audio = True
            self.span.record("first audio", start_ns=self._speech_end_ns, end_ns=at_ns)

    def end(self, *, interrupted: bool = False) -> None:
        if self.ended:
            return
        self.ended = True
        self._call.forget(self)
        self.span.end(sentences=self._sentences, interrupted=interrupted or None)


class CallTrace:
    """A call's voice turns: what the taps heard since the last turn, and the turns still open."""

    def __init__(self, *, call_id: str, channel: str, person_id: str) -> None:
        self._call_id, self._channel, self._person_id = call_id, channel, person_id
        self._open: list[VoiceTurnTrace] = []
        self._latest: OpenSpan | None = None
        self._speech_start_ns: int | None = None
        self._speech_end_ns: int | None = None
        self._transcript_ns: int | None = None
        self._in_user_turn = False

    def taps(self) -> tuple[FrameProcessor, FrameProcessor, FrameProcessor]:
        """The processors to place after the STT, before Ava and after the TTS."""
        return HearingTap(self), TurnTap(self), SpeechTap(self)

    def speech_started(self, at_ns: int) -> None:
        # Speech that never became a turn (a cough, a barge-in that was dropped) is not
        # this turn's start: a start outside a user turn replaces the one before it.
        if not self._in_user_turn or self._speech_start_ns is None:
            self._speech_start_ns = at_ns
        self._speech_end_ns = None

    def speech_stopped(self, at_ns: int) -> None:
        self._speech_end_ns = at_ns

    def user_turn(self, *, started: bool) -> None:
        self._in_user_turn = started

    def transcribed(self, at_ns: int) -> None:
        self._transcript_ns = at_ns

    def open(self) -> VoiceTurnTrace:
        """The person's turn is over and goes to Ava: its span, dated from their speech."""
        now = time.time_ns()
        start = self._speech_start_ns if self._speech_start_ns is not None else now
        end = max(self._speech_end_ns, start) if self._speech_end_ns is not None else now
        span = begin(
            "voice turn", start_ns=min(start, now), call=self._call_id, channel=self._channel, person=self._person_id
        )
        if self._speech_start_ns is not None and self._speech_end_ns is not None:
            span.record("speech", start_ns=start, end_ns=end)
        if self._transcript_ns is not None:
            span.record("stt", start_ns=min(end, self._transcript_ns), end_ns=self._transcript_ns)
        span.record("turn end", start_ns=min(end, now), end_ns=now)
        self._speech_start_ns = self._speech_end_ns = self._transcript_ns = None
        self._in_user_turn = False
        return self._opened(VoiceTurnTrace(span, speech_end_ns=min(end, now), on_end=self))

    def unprompted(self) -> VoiceTurnTrace:
        """Ava says something nobody asked for just now: a `say` span under the trace
        current here (a wake note's), or a root, ended with its reply like a voice turn."""
        span = begin("say", within=here(), call=self._call_id, channel=self._channel, person=self._person_id)
        return self._opened(VoiceTurnTrace(span, speech_end_ns=None, on_end=self))

    def _opened(self, turn: VoiceTurnTrace) -> VoiceTurnTrace:
        self._open.append(turn)
        self._latest = turn.span
        return turn

    def latest(self) -> OpenSpan | None:
        """The last voice turn or unprompted speech opened: the exchange a billed slice of
        the call's speech belongs to (None before anything was said)."""
        return self._latest

    def forget(self, turn: VoiceTurnTrace) -> None:
        if turn in self._open:
            self._open.remove(turn)

    def open_turns(self) -> list[VoiceTurnTrace]:
        return list(self._open)

    def end_all(self, *, interrupted: bool = False) -> None:
        """End every open turn: the person spoke over them, or the call is over."""
        for turn in list(self._open):
            turn.end(interrupted=interrupted)


def turn_of(frame: Frame) -> VoiceTurnTrace | None:
    """The voice turn a frame belongs to, if a traced call's turn stamped it."""
    turn = frame.metadata.get(TURN_KEY)
    return turn if isinstance(turn, VoiceTurnTrace) else None


class _Tap(FrameProcessor):
    def __init__(self, trace: CallTrace, **kwargs: Any) -> None:
        super().__init__(enable_direct_mode=True, **kwargs)
        self._trace = trace


class HearingTap(_Tap):
    """After the STT: when each final transcript came."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame) and direction is FrameDirection.DOWNSTREAM and frame.text.strip():
            self._trace.transcribed(time.time_ns())
        await self.push_frame(frame, direction)


class TurnTap(_Tap):
    """Between the user aggregator and Ava: the speech as the VAD heard it, and the voice
    turn opened on the frame that ends the person's turn."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction is FrameDirection.DOWNSTREAM:
            # The VAD decides a start `start_secs` into the speech and a stop `stop_secs`
            # into the quiet after it: the speech itself began and ended that much earlier.
            if isinstance(frame, VADUserStartedSpeakingFrame):
                self._trace.speech_started(time.time_ns() - _ns(frame.start_secs))
            elif isinstance(frame, VADUserStoppedSpeakingFrame):
                self._trace.speech_stopped(time.time_ns() - _ns(frame.stop_secs))
            elif isinstance(frame, UserStartedSpeakingFrame):
                self._trace.user_turn(started=True)
            elif isinstance(frame, UserStoppedSpeakingFrame):
                self._trace.user_turn(started=False)
            elif isinstance(frame, LLMContextFrame) and not frame.speculation:
                self._trace.open().stamp(frame)
            elif isinstance(frame, InterruptionFrame):
                # The turns it speaks over: not one opened after it, before it reaches the output.
                frame.metadata[_SPOKEN_OVER_KEY] = self._trace.open_turns()
        await self.push_frame(frame, direction)


class SpeechTap(_Tap):
    """After the TTS: each sentence's first audio out, and the end of the voice turn with
    its reply (or at a barge-in, or with the call)."""

    def __init__(self, trace: CallTrace, **kwargs: Any) -> None:
        super().__init__(trace, **kwargs)
        self._announced: tuple[VoiceTurnTrace, tuple[int, int]] | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InterruptionFrame):
            self._announced = None
            spoken_over = frame.metadata.get(_SPOKEN_OVER_KEY)
            if isinstance(spoken_over, list):
                for turn in spoken_over:
                    turn.end(interrupted=True)
            else:
                self._trace.end_all(interrupted=True)
        elif isinstance(frame, (EndFrame, CancelFrame)):
            self._trace.end_all()
        elif direction is FrameDirection.DOWNSTREAM:
            if isinstance(frame, OutputAudioRawFrame):
                if self._announced is not None:
                    speaking, index = self._announced
                    self._announced = None
                    speaking.audio_out(index, time.time_ns())
            elif isinstance(frame, AggregatedTextFrame) and not isinstance(frame, TTSTextFrame):
                # The TTS announces each sentence just before its audio (voice.captions).
                announced, sentence = turn_of(frame), frame.metadata.get(_SENTENCE_KEY)
                self._announced = (announced, sentence) if announced is not None and sentence is not None else None
            elif isinstance(frame, LLMFullResponseEndFrame) and (replied := turn_of(frame)) is not None:
                replied.end()
        await self.push_frame(frame, direction)
