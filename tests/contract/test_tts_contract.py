"""One suite over every voice behind Pipecat's `TTSService` (the TTS port): what the
pipeline relies on holds for espeak-ng, the neural voice and Google's streaming voice
alike (the last through its real adapter, against the simulated Google API of
bench.cloudsim.speech over gRPC on 127.0.0.1).

Each voice gets the per-sentence SSML from `voice.prosody` through the same transforms the
composition root installs, inside a real Pipecat pipeline (`run_test`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from pipecat.frames.frames import (
    AggregatedTextFrame,
    ErrorFrame,
    Frame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    MetricsFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
)
from pipecat.metrics.metrics import TTSUsageMetricsData
from pipecat.pipeline.worker import PipelineParams
from pipecat.services.tts_service import TTSService
from pipecat.tests.utils import run_test

from bench.cloudsim.speech import SimulatedSpeech, throwaway_credentials
from voice.engines.espeak import EspeakTTSService
from voice.engines.google import ProsodyGoogleTTSService, pause_tag
from voice.engines.hibari import HibariTTSService, preload_hibari
from voice.prosody import PROSODY, emotion_to_ssml, strip_stray_tags, text_type_for

TRANSFORMS = [("*", emotion_to_ssml), ("*", strip_stray_tags)]
VOICES: dict[str, Callable[[], TTSService]] = {
    "espeak": lambda: EspeakTTSService(text_transforms=TRANSFORMS),
    "neural": lambda: HibariTTSService(text_transforms=TRANSFORMS),
}


# Voices that can say an emotion's loudness (streaming Google voices take no volume).
LOUDNESS = sorted(VOICES)


@pytest.fixture(scope="module")
def credentials(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return throwaway_credentials(tmp_path_factory.mktemp("speech") / "key.json")


@pytest.fixture
async def simulated_google() -> AsyncIterator[SimulatedSpeech]:
    async with SimulatedSpeech() as speech:
        yield speech


@pytest.fixture(params=[*sorted(VOICES), "google-streaming"])
def voice(request: pytest.FixtureRequest) -> Callable[[], TTSService]:
    if request.param != "google-streaming":
        return VOICES[request.param]
    endpoint = request.getfixturevalue("simulated_google").endpoint
    key = str(request.getfixturevalue("credentials"))
    return lambda: ProsodyGoogleTTSService(credentials_path=key, endpoint=endpoint, text_transforms=TRANSFORMS)


async def _speak(voice: Callable[[], TTSService], text: str, emotion: str | None, rate: int = 16_000) -> list[Frame]:
    down, _ = await run_test(
        voice(),
        frames_to_send=[
            LLMFullResponseStartFrame(),
            AggregatedTextFrame(text, text_type_for(emotion)),
            LLMFullResponseEndFrame(),
        ],
        pipeline_params=PipelineParams(audio_out_sample_rate=rate, enable_metrics=True, enable_usage_metrics=True),
    )
    return list(down)


def _pcm(frames: Sequence[Frame]) -> bytes:
    return b"".join(f.audio for f in frames if isinstance(f, TTSAudioRawFrame))


@pytest.mark.parametrize("rate", [8_000, 16_000, 24_000])
async def test_a_sentence_is_spoken_at_the_pipeline_rate_in_order(voice: Callable[[], TTSService], rate: int) -> None:
    frames = await _speak(voice, "Phew, that worked!", "relieved", rate)
    assert not [f for f in frames if isinstance(f, ErrorFrame)]
    kinds = [type(f) for f in frames]
    assert kinds.index(TTSStartedFrame) < kinds.index(TTSAudioRawFrame) < kinds.index(TTSStoppedFrame)
    audio = [f for f in frames if isinstance(f, TTSAudioRawFrame)]
    assert {f.sample_rate for f in audio} == {rate} and {f.num_channels for f in audio} == {1}
    assert all(len(f.audio) == 2 * int(rate * 0.04) for f in audio[:-1]), "chunks of 40 ms"
    samples = np.frombuffer(_pcm(frames), dtype=np.int16).astype(np.float64)
    assert 0.5 < len(samples) / rate < 4.0 and np.sqrt(np.mean(samples**2)) > 300


async def test_usage_counts_the_characters_billed_never_our_ssml(
    voice: Callable[[], TTSService], request: pytest.FixtureRequest
) -> None:
    frames = await _speak(voice, "Phew, that worked!", "relieved")
    usage = [d for f in frames if isinstance(f, MetricsFrame) for d in f.data if isinstance(d, TTSUsageMetricsData)]
    if request.node.callspec.params["voice"] != "google-streaming":
        assert [u.value for u in usage] == [len("Phew, that worked!")]  # the words heard
        return
    # Google bills the characters it receives, the pause tag after the words among them:
    # what the call's meter counts is what Google bills (docs/money.md#voice-seconds).
    (seen,) = request.getfixturevalue("simulated_google").syntheses
    tag = pause_tag(PROSODY["relieved"].pause_ms)
    assert [u.value for u in usage] == [seen.characters] == [len(f"Phew, that worked! {tag}")]


async def test_a_stray_tag_makes_no_sound(voice: Callable[[], TTSService]) -> None:
    clean = _pcm(await _speak(voice, "Phew, that worked!", "relieved"))
    tagged = _pcm(await _speak(voice, "Phew, #smug# that worked! #end#", "relieved"))
    assert tagged == clean


async def test_emotions_are_heard_in_the_pace(voice: Callable[[], TTSService]) -> None:
    sentence = "I really did not expect that to happen today."
    furious = _pcm(await _speak(voice, sentence, "furious"))
    devastated = _pcm(await _speak(voice, sentence, "devastated"))
    assert len(devastated) > 1.2 * len(furious), "grief is slower than anger"


@pytest.mark.parametrize("name", LOUDNESS)
async def test_emotions_are_heard_in_the_loudness(name: str) -> None:
    voice = VOICES[name]
    sentence = "I really did not expect that to happen today."
    furious = _pcm(await _speak(voice, sentence, "furious"))
    devastated = _pcm(await _speak(voice, sentence, "devastated"))

    def loudness(pcm: bytes) -> float:
        samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float64)
        return float(np.sqrt(np.mean(samples**2)))

    assert loudness(furious) > 2 * loudness(devastated)


@pytest.fixture(autouse=True, scope="module")
def _voices_loaded() -> None:
    """Load the neural voice before the first sentence, as a server does at startup: loaded
    inside a sentence on a busy machine, it can outlast Pipecat's 3 s wait for first audio."""
    preload_hibari()
