"""The usage meter turns Pipecat's STT/TTS usage metrics into billed slices, charged off
the frame path: a slow charge holds up no frame, and a call's end waits for every charge."""

from __future__ import annotations

import asyncio
import time

import pytest
from pipecat.frames.frames import BotStoppedSpeakingFrame, Frame, MetricsFrame, TextFrame
from pipecat.metrics.metrics import STTUsage, STTUsageMetricsData, TTSUsageMetricsData
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.tests.utils import run_test

from ledger import VoiceUsage
from voice.usage import UsageMeter


async def test_usage_is_billed_in_slices_at_each_end_of_speech() -> None:
    billed: list[tuple[int, VoiceUsage]] = []

    async def bill(slice_index: int, usage: VoiceUsage) -> None:
        billed.append((slice_index, usage))

    stt = STTUsageMetricsData(
        processor="WhisperSTTService#1", model="whisper-tiny.en", value=STTUsage(audio_seconds=1.5)
    )
    tts = TTSUsageMetricsData(processor="EspeakTTSService#1", model=None, value=42)
    await run_test(
        UsageMeter(bill),
        frames_to_send=[
            MetricsFrame(data=[stt]),
            MetricsFrame(data=[tts]),
            BotStoppedSpeakingFrame(),
            MetricsFrame(data=[tts]),
        ],
    )
    assert billed[0] == (1, VoiceUsage("whisper-tiny.en", 1500, "EspeakTTSService", 42))
    assert billed[1] == (2, VoiceUsage("whisper-tiny.en", 0, "EspeakTTSService", 42)), "the rest at the end"
    assert len(billed) == 2


class _Arrivals(FrameProcessor):
    """Notes when each text frame came through, as the transport out would send it."""

    def __init__(self) -> None:
        super().__init__()
        self.at: dict[str, float] = {}

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TextFrame):
            self.at[frame.text] = time.monotonic()
        await self.push_frame(frame, direction)


async def test_a_slow_charge_holds_up_no_frame_and_the_calls_end_waits_for_every_charge() -> None:
    charge_s = 0.4
    billed: list[tuple[int, VoiceUsage, float]] = []

    async def bill(slice_index: int, usage: VoiceUsage) -> None:
        await asyncio.sleep(charge_s)  # the database taking its time
        billed.append((slice_index, usage, time.monotonic()))

    tts = TTSUsageMetricsData(processor="EspeakTTSService#1", model=None, value=10)
    arrivals = _Arrivals()
    frames: list[Frame] = []
    for n in range(3):
        frames += [MetricsFrame(data=[tts]), BotStoppedSpeakingFrame(), TextFrame(f"after {n + 1}")]
    frames.append(MetricsFrame(data=[tts]))  # said and not yet billed when the call ends
    await run_test(Pipeline([UsageMeter(bill), arrivals]), frames_to_send=frames)
    ended = time.monotonic()

    # Every frame went on while the first charge was still being written (three charges
    # in line: awaited in the frame path, the last frame would wait for all three) ...
    assert len(arrivals.at) == 3 and max(arrivals.at.values()) < billed[0][2], (arrivals.at, billed)
    # ... and the call's end waited until every slice, the rest included, was charged, in order.
    assert [n for n, _, _ in billed] == [1, 2, 3, 4]
    assert billed[-1][2] <= ended
    assert sum(u.tts_characters for _, u, _ in billed) == 4 * 10, "every character, once"


async def test_a_failed_charge_is_logged_and_the_next_slice_still_charged(caplog: pytest.LogCaptureFixture) -> None:
    billed: list[int] = []

    async def bill(slice_index: int, usage: VoiceUsage) -> None:
        if slice_index == 1:
            raise ConnectionError("the database is away")
        billed.append(slice_index)

    tts = TTSUsageMetricsData(processor="EspeakTTSService#1", model=None, value=10)
    frames = [MetricsFrame(data=[tts]), BotStoppedSpeakingFrame(), MetricsFrame(data=[tts])]
    await run_test(UsageMeter(bill), frames_to_send=frames)
    assert billed == [2]
    assert any("voice slice 1 not charged now" in r.getMessage() for r in caplog.records)


async def test_charges_slower_than_the_ends_wait_still_all_finish_after_the_call() -> None:
    billed: list[int] = []
    all_billed = asyncio.Event()

    async def bill(slice_index: int, usage: VoiceUsage) -> None:
        await asyncio.sleep(0.3)
        billed.append(slice_index)
        if len(billed) == 2:
            all_billed.set()

    tts = TTSUsageMetricsData(processor="EspeakTTSService#1", model=None, value=10)
    frames = [MetricsFrame(data=[tts]), BotStoppedSpeakingFrame(), MetricsFrame(data=[tts])]
    await run_test(UsageMeter(bill, flush_wait_s=0.05), frames_to_send=frames)
    assert len(billed) < 2, "the call's end waited only as long as it may"
    async with asyncio.timeout(5):
        await all_billed.wait()
    assert billed == [1, 2]
