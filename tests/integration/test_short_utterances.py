"""Nothing short a person says is lost: the call's VAD hears one-word answers and "thank
you" whatever frame the speech starts on, in a robotic and a natural voice.

The VAD decides speech on 32 ms windows; where the word falls across them changes what it
sees, so each word is tried at several offsets (as it would land in a real call)."""

from __future__ import annotations

import pytest
from pipecat.audio.utils import create_stream_resampler
from pipecat.audio.vad.vad_analyzer import VADState

from voice.engines.espeak import synthesize
from voice.engines.hibari import synthesize_neural
from voice.pipeline import TurnTiming, call_vad

RATE = 16_000
FRAME_BYTES = 640  # 20 ms
OFFSETS = range(0, 1024, 128)  # bytes of extra silence before the word: 0-28 ms


async def _pcm(text: str, neural: bool) -> bytes:
    pcm, rate = await (synthesize_neural(text) if neural else synthesize(text))
    resampler = create_stream_resampler()
    return await resampler.resample(pcm, rate, RATE) + await resampler.flush()


@pytest.mark.parametrize("neural", [False, True], ids=["espeak", "neural"])
@pytest.mark.parametrize("word", ["thank you", "no", "hi", "stop", "wait"])
async def test_a_short_word_starts_the_persons_speech_at_every_offset(word: str, neural: bool) -> None:
    speech = await _pcm(word, neural)
    missed = []
    for offset in OFFSETS:
        vad = call_vad(TurnTiming())
        vad.set_sample_rate(RATE)
        audio = bytes(RATE + offset) + speech + bytes(2 * RATE)
        states = {await vad.analyze_audio(audio[i : i + FRAME_BYTES]) for i in range(0, len(audio), FRAME_BYTES)}
        if VADState.SPEAKING not in states:
            missed.append(offset)
    assert not missed, f"{word!r} went unheard at offsets {missed}"
