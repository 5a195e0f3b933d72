"""The phone line's signal path (`voice.phone_line.LineSignal`): 24 kHz in, 8 kHz out, nothing
above the line's Nyquist folded back into the band, nothing below its lower edge kept,
speech passed at a phone's level, and a stream cut in parts heard as one."""

from __future__ import annotations

import numpy as np

from voice.phone_line import LINE_RATE, LineSignal, soft_limit

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
