"""What tracing a call costs the voice pipeline: the three taps of voice/tracing.py with
tracing on and off, per frame and per live call (docs/operations.md#traces).

The taps sit in every call's pipeline whether or not an operator exports traces, and run
in direct mode: one function call per frame, no queue or task. This bench drives a call's
frames (the person's audio all the time, Ava's while she speaks, and each turn's VAD,
transcript, context, sentence and reply-end frames) through the three taps chained as
they are in a call, with Ava's stamping done where her processor does it, in three modes,
block by block in a rotating order in one process so machine noise lands on all three:

- `plain`: three pass-through processors of the same kind (the Pipecat cost with no
  tracing code), the floor;
- `off`: the taps, no exporter (OpenTelemetry's non-recording spans: the default);
- `on`: the taps, the SDK's tracer provider with its batching processor and an exporter
  that encodes each batch in OTLP's protobuf and drops it (all of an export but the
  network), flushed at the end of each block so its thread's work is in the block.

Time is the process's CPU time (every thread's: the batching thread's encoding counts),
per frame; "% of a core per call" is that times the frames a call pushes per second.
Switching modes swaps the tracer `telemetry.traces` opens spans on, since OpenTelemetry
allows one global provider per process; the product itself never swaps it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loguru import logger
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from pipecat.frames.frames import (
    AggregatedTextFrame,
    Frame,
    InputAudioRawFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    OutputAudioRawFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

import telemetry.traces
from bench.report import write
from voice.tracing import CallTrace, turn_of

RESULTS = Path(__file__).parent / "results"
FRAME_S = 0.02  # Pipecat's 20 ms audio frames, in and out
RATE = 16_000
MODES = ("plain", "off", "on")


class _Encoded:
    """An exporter in all but the network: each batch encoded to OTLP protobuf, then dropped."""

    def __init__(self) -> None:
        self.spans = 0
        self.bytes = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        self.bytes += len(encode_spans(spans).SerializeToString())
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


class _Pass(FrameProcessor):
    """A direct-mode pass-through, as the taps are, without their tracing."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(enable_direct_mode=True, **kwargs)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)


class _Sink(FrameProcessor):
    def __init__(self) -> None:
        super().__init__(enable_direct_mode=True)
        self.frames = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        self.frames += 1


def _chain(mode: str) -> tuple[FrameProcessor, _Sink]:
    if mode == "plain":
        stages: list[FrameProcessor] = [_Pass(), _Pass(), _Pass()]
    else:
        stages = list(CallTrace(call_id="call_bench", channel="voice", person_id="usr_bench").taps())
    sink = _Sink()
    for before, after in zip([*stages], [*stages[1:], sink], strict=True):
        before.link(after)
    return stages[0], sink


def _audio_in() -> InputAudioRawFrame:
    return InputAudioRawFrame(b"\x00\x00" * int(RATE * FRAME_S), RATE, 1)


def _audio_out() -> OutputAudioRawFrame:
    return OutputAudioRawFrame(b"\x00\x00" * int(RATE * FRAME_S), RATE, 1)


async def _exchange(head: FrameProcessor, *, speech_s: float, reply_s: float, sentences: int) -> float:
    """One exchange of a call: the person speaks, falls quiet, Ava answers in `sentences`
    sentences over `reply_s` of audio, while the person's microphone streams throughout.
    Returns the call seconds it stands for."""
    down = FrameDirection.DOWNSTREAM
    push = head.queue_frame
    await push(VADUserStartedSpeakingFrame(start_secs=0.1), down)
    await push(UserStartedSpeakingFrame(), down)
    for _ in range(int(speech_s / FRAME_S)):
        await push(_audio_in(), down)
    await push(VADUserStoppedSpeakingFrame(stop_secs=0.2), down)
    await push(TranscriptionFrame("words", "usr_bench", "2026-01-01T00:00:00"), down)
    await push(UserStoppedSpeakingFrame(), down)
    context = LLMContextFrame(context=LLMContext([{"role": "user", "content": "words"}]))
    await push(context, down)
    turn = turn_of(context)  # what Ava's processor carries on to her sentences
    per_sentence = int(reply_s / FRAME_S) // sentences
    for _ in range(sentences):
        sentence: Frame = AggregatedTextFrame("A sentence.", "neutral")
        await push(turn.stamp(sentence) if turn is not None else sentence, down)
        for _ in range(per_sentence):
            await push(_audio_in(), down)  # the microphone never stops
            await push(_audio_out(), down)
    end: Frame = LLMFullResponseEndFrame()
    await push(turn.stamp(end) if turn is not None else end, down)
    return speech_s + per_sentence * sentences * FRAME_S


async def _block(mode: str, exchanges: int, provider: TracerProvider, proxy: Any) -> tuple[float, int, float]:
    """(CPU seconds, frames, call seconds) of `exchanges` exchanges in `mode`."""
    telemetry.traces._tracer = provider.get_tracer("avagenc") if mode == "on" else proxy
    head, sink = _chain(mode)
    call_s = 0.0
    started = time.process_time()
    for _ in range(exchanges):
        call_s += await _exchange(head, speech_s=2.0, reply_s=3.0, sentences=2)
    if mode == "on":
        provider.force_flush()
    spent = time.process_time() - started
    return spent, sink.frames, call_s


async def measure(rounds: int, exchanges: int) -> tuple[dict[str, list[float]], float, _Encoded]:
    """µs of CPU per frame in each block, by mode, and the frames a call pushes per second."""
    exporter = _Encoded()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))  # type: ignore[arg-type]  # an exporter in all but name
    proxy = telemetry.traces._tracer
    per_frame: dict[str, list[float]] = {mode: [] for mode in MODES}
    frames_per_s = 0.0
    try:
        for mode in MODES:  # warm every path once, unmeasured
            await _block(mode, 2, provider, proxy)
        for index in range(rounds):
            order = MODES[index % 3 :] + MODES[: index % 3]
            for mode in order:
                spent, frames, call_s = await _block(mode, exchanges, provider, proxy)
                per_frame[mode].append(spent / frames * 1e6)
                frames_per_s = frames / call_s
    finally:
        telemetry.traces._tracer = proxy
        provider.shutdown()
    return per_frame, frames_per_s, exporter


def report(per_frame: dict[str, list[float]], frames_per_s: float, exporter: _Encoded, args: argparse.Namespace) -> str:
    median = {mode: statistics.median(values) for mode, values in per_frame.items()}
    lines = [
        f"# Trace cost on the voice pipeline's taps ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"`python -m bench.trace_cost --rounds {args.rounds} --exchanges {args.exchanges}`: "
        f"{args.rounds} rounds of {args.exchanges} exchanges per mode (2 s speech, 3 s reply in 2 sentences), "
        f"{frames_per_s:.0f} frames per call second; {exporter.spans} spans encoded, {exporter.bytes} bytes.",
        "",
        "| mode | µs CPU per frame (median) | min | max | % of a core per live call |",
        "|---|---|---|---|---|",
    ]
    for mode in MODES:
        values = per_frame[mode]
        core = median[mode] * frames_per_s / 1e6 * 100
        lines.append(f"| {mode} | {median[mode]:.2f} | {min(values):.2f} | {max(values):.2f} | {core:.3f} % |")
    taps = (median["off"] - median["plain"]) * frames_per_s / 1e6 * 100
    tracing = (median["on"] - median["off"]) * frames_per_s / 1e6 * 100
    lines += [
        "",
        f"The taps with tracing off cost {median['off'] - median['plain']:+.2f} µs per frame over plain "
        f"pass-throughs ({taps:+.3f} % of a core per call); exporting costs "
        f"{median['on'] - median['off']:+.2f} µs per frame more ({tracing:+.3f} % of a core per call).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=9, help="blocks per mode, in a rotating order")
    parser.add_argument("--exchanges", type=int, default=40, help="exchanges of a call per block")
    parser.add_argument("--out", type=Path, default=RESULTS / "trace_cost.md")
    args = parser.parse_args()
    logger.remove()  # Pipecat's debug lines (one per link) would bury the report
    logger.add(sys.stderr, level="WARNING")
    per_frame, frames_per_s, exporter = asyncio.run(measure(args.rounds, args.exchanges))
    text = report(per_frame, frames_per_s, exporter, args)
    write(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
