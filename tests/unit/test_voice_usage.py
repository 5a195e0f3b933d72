"""The usage meter turns Pipecat's STT/TTS usage metrics into billed slices."""

from __future__ import annotations

from pipecat.frames.frames import BotStoppedSpeakingFrame, MetricsFrame
from pipecat.metrics.metrics import STTUsage, STTUsageMetricsData, TTSUsageMetricsData
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
