"""A call's voice turn as spans (voice/tracing.py), with Pipecat's own `run_test`: the taps
and Ava's processor in a pipeline whose TTS says each sentence as one audio frame. The
chat turn run inside is a child of the voice turn; a barge-in ends the voice turn as
interrupted while the chat turn under it still finishes. (The whole door, exported to a
collector, is tests/e2e/test_traces_otlp.py.)"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import get_current_span
from pipecat.frames.frames import (
    AggregatedTextFrame,
    DataFrame,
    Frame,
    InterruptionFrame,
    LLMContextFrame,
    OutputAudioRawFrame,
    TranscriptionFrame,
    TTSTextFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.tests.utils import SleepFrame, run_test

from agents import SpokenReply, parse_spoken
from telemetry import span
from voice.agent import AvaVoiceAgent, VoiceTurn
from voice.tracing import CallTrace


class OneFrameTTS(FrameProcessor):
    """Says each sentence as one frame of silence, right after announcing it, as a TTS does."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, AggregatedTextFrame) and not isinstance(frame, TTSTextFrame):
            await self.push_frame(OutputAudioRawFrame(b"\x00\x00" * 320, 16_000, 1))


def _call(turn: VoiceTurn) -> Pipeline:
    trace = CallTrace(call_id="call_1", channel="voice", person_id="usr_1")
    heard, turns, spoken = trace.taps()
    return Pipeline([heard, turns, AvaVoiceAgent(turn), OneFrameTTS(), spoken])


def _spoken_turn() -> list[Frame]:
    return [
        VADUserStartedSpeakingFrame(start_secs=0.1),
        UserStartedSpeakingFrame(),
        SleepFrame(0.4),  # the VAD's stop comes its stop wait after the speech: longer than that
        VADUserStoppedSpeakingFrame(stop_secs=0.2),
        TranscriptionFrame("turn on the bedroom light", "usr_1", "2026-01-01T00:00:00"),
        UserStoppedSpeakingFrame(),
        LLMContextFrame(context=LLMContext([{"role": "user", "content": "turn on the bedroom light"}])),
    ]


def _tree(spans: InMemorySpanExporter) -> tuple[ReadableSpan, dict[str, list[ReadableSpan]], dict[int, str]]:
    finished = spans.get_finished_spans()
    root = next(s for s in finished if s.name == "voice turn")
    in_trace = [s for s in finished if s.context.trace_id == root.context.trace_id]
    parents = {s.context.span_id: s.name for s in in_trace}
    by_name: dict[str, list[ReadableSpan]] = {}
    for s in in_trace:
        by_name.setdefault(s.name, []).append(s)
    return root, by_name, parents


def _attributes(s: ReadableSpan) -> dict[str, Any]:
    return dict(s.attributes or {})


async def test_a_spoken_turn_is_a_voice_turn_with_the_chat_turn_inside(spans: InMemorySpanExporter) -> None:
    async def turn(text: str) -> SpokenReply:
        with span("turn", channel="voice"):
            return parse_spoken("Done, the light is on. #relieved# Sleep well! #affectionate#")

    await run_test(_call(turn), frames_to_send=[*_spoken_turn(), SleepFrame(0.3)])

    root, by_name, parents = _tree(spans)
    assert root.parent is None
    assert _attributes(root) == {
        "avagenc.call": "call_1",
        "avagenc.channel": "voice",
        "avagenc.person": "usr_1",
        "avagenc.sentences": 2,
    }
    for name in ("speech", "stt", "turn end", "first audio", "turn"):
        (only,) = by_name[name]
        assert only.parent is not None and parents[only.parent.span_id] == "voice turn", name
    assert [_attributes(s)["avagenc.index"] for s in by_name["tts"]] == [1, 2]
    (speech,) = by_name["speech"]
    (first_audio,) = by_name["first audio"]
    assert root.start_time == speech.start_time and speech.end_time == first_audio.start_time
    assert root.end_time is not None and first_audio.end_time is not None and first_audio.end_time <= root.end_time


async def test_a_barge_in_ends_the_voice_turn_and_the_chat_turn_still_finishes(spans: InMemorySpanExporter) -> None:
    finished: list[str] = []

    async def slow_turn(text: str) -> SpokenReply:
        with span("turn", channel="voice"):
            await asyncio.sleep(0.3)
            finished.append(text)
            return parse_spoken("Here is a long answer. #neutral#")

    await run_test(
        _call(slow_turn), frames_to_send=[*_spoken_turn(), SleepFrame(0.1), InterruptionFrame(), SleepFrame(0.5)]
    )

    assert finished == ["turn on the bedroom light"]
    root, by_name, parents = _tree(spans)
    assert _attributes(root)["avagenc.interrupted"] is True
    assert _attributes(root)["avagenc.sentences"] == 0
    assert "tts" not in by_name and "first audio" not in by_name, "nothing was said"
    (chat,) = by_name["turn"]
    assert chat.parent is not None and parents[chat.parent.span_id] == "voice turn"
    assert root.end_time is not None and chat.end_time is not None and root.end_time < chat.end_time


@dataclass
class NoteFired(DataFrame):
    """Stands for a wake note firing mid-call: the test's cue to say its reply unprompted."""


class Waker(FrameProcessor):
    """Says a wake note's reply on the call, as `CallSession.say` does, inside a `wake` root."""

    def __init__(self, trace: CallTrace, agent: AvaVoiceAgent) -> None:
        super().__init__()
        self._trace, self._agent = trace, agent

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, NoteFired):
            with span("wake", root=True, note="note_1"):
                reply = parse_spoken("Time to stretch, Budi! #affectionate# Your legs will thank you. #neutral#")
                await self._agent.speak(reply, traced=self._trace.unprompted())
            return
        await self.push_frame(frame, direction)


async def test_what_ava_says_unprompted_is_a_say_span_under_the_wake(spans: InMemorySpanExporter) -> None:
    async def no_turn(text: str) -> SpokenReply:
        raise AssertionError("nobody spoke")

    trace = CallTrace(call_id="call_1", channel="voice", person_id="usr_1")
    agent = AvaVoiceAgent(no_turn)
    heard, turns, spoken = trace.taps()
    pipeline = Pipeline([Waker(trace, agent), heard, turns, agent, OneFrameTTS(), spoken])
    await run_test(pipeline, frames_to_send=[NoteFired(), SleepFrame(0.3)])

    finished = spans.get_finished_spans()
    wake = next(s for s in finished if s.name == "wake")
    in_trace = {s.context.span_id: s for s in finished if s.context.trace_id == wake.context.trace_id}
    (say,) = [s for s in in_trace.values() if s.name == "say"]
    assert say.parent is not None and in_trace[say.parent.span_id] is wake
    assert _attributes(say) == {
        "avagenc.call": "call_1",
        "avagenc.channel": "voice",
        "avagenc.person": "usr_1",
        "avagenc.sentences": 2,
    }
    sentences = [s for s in in_trace.values() if s.name == "tts"]
    assert [_attributes(s)["avagenc.index"] for s in sentences] == [1, 2]
    assert all(s.parent is not None and in_trace[s.parent.span_id] is say for s in sentences)
    assert "first audio" not in {s.name for s in in_trace.values()}, "nobody spoke before it"
    # The exchange a billed slice of the call's speech would hang under.
    latest = trace.latest()
    assert latest is not None and not latest.recording, "ended with its reply"
    assert get_current_span(latest.context).get_span_context().span_id == say.context.span_id
