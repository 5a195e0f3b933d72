"""The phone line's signal path (`voice.phone_line.LineSignal`): 24 kHz in, 8 kHz out, nothing
above the line's Nyquist folded back into the band, nothing below its lower edge kept,
speech passed at a phone's level, and a stream cut in parts heard as one. The way in
(`LineUpsampler`): the caller's 8 kHz up to 16 kHz at once, 4 ms late, the band kept and its
images gone, in the phone serializer."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any

import numpy as np
from pipecat.frames.frames import InputAudioRawFrame

from voice.phone import StreamStart, phone_serializer
from voice.phone_line import LINE_RATE, PIPELINE_RATE, LineSignal, LineUpsampler, soft_limit

RATE_IN = 24_000


def tone(hz: float, seconds: float = 1.0, level: float = 0.5, rate: int = RATE_IN) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    return bytes((level * np.sin(2 * np.pi * hz * t) * 32767).astype("<i2").tobytes())


async def through(pcm: bytes, *, parts: int = 25, gain: float = 1.0) -> np.ndarray:
    line = LineSignal(gain=gain)
    step = len(pcm) // parts // 2 * 2
    out = b"".join([await line.feed(pcm[i : i + step], RATE_IN) for i in range(0, len(pcm), step)])
    out += await line.flush()
    return np.frombuffer(out, dtype="<i2").astype(np.float64) / 32768.0


def level_db(samples: np.ndarray) -> float:
    middle = samples[len(samples) // 4 : -len(samples) // 4]  # away from the edges
    return float(20 * np.log10(np.sqrt(np.mean(middle**2)) + 1e-12))


async def test_the_line_runs_at_8_khz_and_keeps_the_length() -> None:
    out = await through(tone(1_000))
    assert abs(len(out) - LINE_RATE) <= 2


async def test_a_tone_above_4_khz_does_not_fold_back_into_the_band() -> None:
    """Naive decimation would turn 5 kHz into a 3 kHz whistle at nearly full level."""
    passed = level_db(await through(tone(1_000)))
    for hz in (4_500, 5_000, 7_000, 11_000):
        assert level_db(await through(tone(hz))) < passed - 80, hz


async def test_the_band_is_300_to_3400_hz() -> None:
    reference = level_db(await through(tone(1_000)))
    assert abs(level_db(await through(tone(3_000))) - reference) < 1.0
    assert abs(level_db(await through(tone(500))) - reference) < 1.0
    assert level_db(await through(tone(100))) < reference - 20


async def test_a_stream_fed_in_parts_equals_one_fed_whole() -> None:
    pcm = tone(800) + tone(1_700)
    # Within int16 rounding, done twice (the resampler's output, then the line's).
    assert np.allclose(await through(pcm, parts=1), await through(pcm, parts=40), atol=3 / 32768)


def test_loud_peaks_bend_instead_of_clipping() -> None:
    samples = np.linspace(-3.0, 3.0, 1001)
    limited = soft_limit(samples)
    assert np.all(np.abs(limited) < 1.0)
    assert np.all(np.diff(limited) > 0), "still monotonic: no flat tops"
    quiet = np.linspace(-0.5, 0.5, 11)
    assert np.array_equal(soft_limit(quiet), quiet)


async def upsampled(pcm: bytes, *, step: int = 320) -> np.ndarray:
    """8 kHz PCM16 up to 16 kHz in 20 ms frames, as the phone serializer brings a call up."""
    up = LineUpsampler()
    out = b""
    for i in range(0, len(pcm), step):
        part = await up.resample(pcm[i : i + step], LINE_RATE, PIPELINE_RATE)
        assert len(part) == 2 * len(pcm[i : i + step]), "every frame comes out whole, at once"
        out += part
    return np.frombuffer(out, dtype="<i2").astype(np.float64) / 32768.0


async def test_the_way_in_is_4_ms_late_where_pipecats_held_52_ms() -> None:
    click = np.zeros(LINE_RATE, dtype="<i2")
    click[800] = 20_000  # 100 ms in
    out = await upsampled(click.tobytes())
    late_ms = (int(np.argmax(np.abs(out))) - 2 * 800) / PIPELINE_RATE * 1000
    assert 0 <= late_ms <= 4, late_ms


async def test_the_way_in_keeps_the_band_and_drops_its_images() -> None:
    def spectrum_db(samples: np.ndarray, hz: float) -> float:
        middle = samples[PIPELINE_RATE // 4 :]
        bins = np.abs(np.fft.rfft(middle * np.hanning(len(middle))))
        freqs = np.fft.rfftfreq(len(middle), 1 / PIPELINE_RATE)
        return float(20 * np.log10(bins[np.argmin(np.abs(freqs - hz))] + 1e-12))

    for hz in (300, 1_000, 3_000, 3_400, 3_500):
        out = await upsampled(tone(hz, rate=LINE_RATE))
        assert abs(level_db(out) - level_db(np.frombuffer(tone(hz, rate=LINE_RATE), "<i2") / 32768.0)) < 0.1, hz
        # Upsampling leaves a mirror image of each tone at 8 kHz - f; the filter removes it.
        assert spectrum_db(out, LINE_RATE - hz) < spectrum_db(out, hz) - 80, hz


async def test_the_way_in_fed_in_frames_equals_one_fed_whole() -> None:
    pcm = tone(800, rate=LINE_RATE) + tone(2_100, rate=LINE_RATE)
    assert np.array_equal(await upsampled(pcm, step=len(pcm)), await upsampled(pcm, step=320))


async def test_the_phone_serializer_brings_each_media_frame_up_at_once() -> None:
    serializer = phone_serializer(StreamStart("MZ1", "CA1", {}))
    setup: Any = SimpleNamespace(audio_in_sample_rate=PIPELINE_RATE)  # all the serializer reads of it
    await serializer.setup(setup)
    assert isinstance(serializer._input_resampler, LineUpsampler)
    ulaw = base64.b64encode(bytes([0x2A]) * 160).decode()  # 20 ms of a loud μ-law sample
    frame = await serializer.deserialize(json.dumps({"event": "media", "media": {"payload": ulaw}}))
    assert isinstance(frame, InputAudioRawFrame)
    assert frame.sample_rate == PIPELINE_RATE and len(frame.audio) == 2 * 320, "20 ms in, 20 ms out"
