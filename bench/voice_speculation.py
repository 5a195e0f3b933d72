"""Does speculative transcription shorten the wait? The same utterances through the call's
STT, VAD and turn end, with speculation and without, in this process.

For each utterance (espeak-ng speech streamed in 20 ms frames at real time, then silence),
the time from the VAD's stop (the person has been quiet for `stop_secs`) to the end of the
user turn (the moment Ava would start) is measured twice: with the VAD telling the STT about
pauses (the product), and with the listener off (Whisper starts only at the stop). The
baseline is the second, measured in the same run, alternating per utterance so load drifts
hit both alike. Printed as Markdown; exit 0 when every turn ended with the
right words.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from pipecat.audio.utils import create_stream_resampler
from pipecat.audio.vad.vad_analyzer import VADState
from pipecat.frames.frames import Frame, InputAudioRawFrame, LLMContextFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair, LLMUserAggregatorParams
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.tests.utils import SleepFrame, run_test
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from bench.report import write
from voice.agent import last_user_text
from voice.engines.espeak import synthesize
from voice.engines.whisper import WIDEBAND_WINDOW_MIN_S, WhisperSTTService, preload_whisper
from voice.pipeline import PauseAwareVAD, TurnTiming, call_vad, turn_stop

RATE = 16_000
STEP = int(RATE * 0.02) * 2
SAYINGS = (
    ("turn on the bedroom light", "bedroom"),
    ("thank you", "thank"),
    ("play some music in the living room", "music"),
    ("what can you do", "can you do"),
    ("turn off the living room light", "living room"),
    ("good morning", "morning"),
)


class _TurnEnd(FrameProcessor):
    def __init__(self) -> None:
        super().__init__()
        self.at: list[tuple[float, str]] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            self.at.append((time.monotonic(), last_user_text(frame)))
        await self.push_frame(frame, direction)


class _TimedVAD(PauseAwareVAD):
    stopped_at: float | None = None

    async def analyze_audio(self, buffer: bytes) -> VADState:
        before = self._last_state
        state = await super().analyze_audio(buffer)
        if state == VADState.QUIET and before != VADState.QUIET:
            self.stopped_at = time.monotonic()
        return state


async def _pcm(text: str) -> bytes:
    pcm, rate = await synthesize(text)
    resampler = create_stream_resampler()
    return await resampler.resample(pcm, rate, RATE) + await resampler.flush()


async def one_turn(speech: bytes, *, speculate: bool, timing: TurnTiming, counts: dict[str, int]) -> tuple[float, str]:
    """VAD stop -> user turn end (seconds) and the turn's text; adds the STT's speculation
    counts to `counts`."""
    stt = WhisperSTTService(window_min_s=WIDEBAND_WINDOW_MIN_S)  # English through the product's window
    base = call_vad(timing, stt if speculate else None)
    vad = _TimedVAD(listener=base.listener, pause_s=timing.pause_s, params=base.params)
    user_turns = LLMContextAggregatorPair(
        LLMContext(),
        user_params=LLMUserAggregatorParams(
            vad_analyzer=vad,
            user_turn_strategies=UserTurnStrategies(stop=[turn_stop(timing)]),  # the call's own turn end
            empty_user_turn=None,
        ),
    )
    end = _TurnEnd()
    audio = bytes(int(0.5 * RATE) * 2) + speech + bytes(int(2.5 * RATE) * 2)
    frames: list[Frame] = []
    for i in range(0, len(audio), STEP):
        frames += [InputAudioRawFrame(audio[i : i + STEP], RATE, 1), SleepFrame(sleep=0.02)]
    await run_test(
        Pipeline([stt, user_turns.user(), end]),
        frames_to_send=frames,
        pipeline_params=PipelineParams(audio_in_sample_rate=RATE),
    )
    for name, count in stt.speculations.items():
        counts[name] = counts.get(name, 0) + count
    if vad.stopped_at is None or not end.at:
        return float("nan"), ""
    return end.at[0][0] - vad.stopped_at, end.at[0][1]


async def run(rounds: int) -> tuple[str, bool]:
    preload_whisper()
    timing = TurnTiming()
    clips = [(await _pcm(text), text, expected) for text, expected in SAYINGS]
    counts: dict[str, int] = {}
    await one_turn(clips[0][0], speculate=False, timing=timing, counts={})  # warm-up, not counted
    await one_turn(clips[0][0], speculate=True, timing=timing, counts={})
    waits: dict[bool, list[float]] = {True: [], False: []}
    ok = True
    lines = ["| utterance | with speculation ms | without ms |", "|---|---:|---:|"]
    for index in range(rounds * len(clips)):
        speech, text, expected = clips[index % len(clips)]
        row = {}
        order = (True, False) if index % 2 == 0 else (False, True)  # drift hits both alike
        for speculate in order:
            wait_s, heard = await one_turn(speech, speculate=speculate, timing=timing, counts=counts)
            ok = ok and expected in heard.lower()
            waits[speculate].append(wait_s)
            row[speculate] = wait_s
        lines.append(f"| {text} | {row[True] * 1000:.0f} | {row[False] * 1000:.0f} |")
    with_s, without_s = (statistics.median(waits[flag]) for flag in (True, False))
    head = [
        f"VAD stop -> user turn end, median over {len(waits[True])} utterances: "
        f"**{with_s * 1000:.0f} ms with speculation, {without_s * 1000:.0f} ms without** "
        f"(stop_secs {timing.vad_stop_s} s, pause {timing.pause_s} s, then {timing.finished_timeout_s} s "
        f"for finished words, {timing.speech_timeout_s} s otherwise). Speculations: {counts.get('started', 0)} "
        f"started, {counts.get('used', 0)} used, {counts.get('discarded', 0)} discarded.",
        "",
    ]
    return "\n".join(head + lines) + "\n", ok


def main() -> None:
    parser = argparse.ArgumentParser(description="Speculative transcription against none, same utterances.")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the six utterances")
    args = parser.parse_args()
    text, ok = asyncio.run(run(args.rounds))
    sys.stdout.write(text)
    write("voice_speculation", text)
    if not ok:
        print("a turn ended without the words said", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
