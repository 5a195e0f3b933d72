"""The faint noise a phone line's empty upper band is filled with before Whisper hears it
(voice/engines/band_fill.py): only above the line's edge, at its level, the same every time."""

from __future__ import annotations

import numpy as np

from voice.engines.band_fill import FILL_DBFS, FILL_FROM_HZ, RATE, band_filled


def _tone(hz: float, seconds: float = 1.0, level: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    tone: np.ndarray = (level * np.sin(2 * np.pi * hz * t)).astype(np.float32)
    return tone


def _band_rms(samples: np.ndarray, low: float, high: float) -> float:
    spectrum = np.fft.rfft(samples.astype(np.float64))
    freqs = np.fft.rfftfreq(len(samples), 1 / RATE)
    kept = np.where((freqs >= low) & (freqs < high), spectrum, 0)
    return float(np.sqrt(np.mean(np.fft.irfft(kept, len(samples)) ** 2)))


def test_the_empty_upper_band_gets_noise_at_its_level_and_the_speech_band_is_untouched() -> None:
    speech = _tone(1_000)
    filled = band_filled(speech)
    upper_dbfs = 20 * np.log10(_band_rms(filled, FILL_FROM_HZ, RATE / 2))
    assert abs(upper_dbfs - FILL_DBFS) < 0.5
    assert _band_rms(filled - speech, 0, FILL_FROM_HZ - 50) < 1e-6
    assert filled.dtype == np.float32 and len(filled) == len(speech)


def test_the_same_audio_is_filled_the_same_way_every_time() -> None:
    speech = _tone(440, 0.7)
    assert np.array_equal(band_filled(speech), band_filled(speech))


def test_nothing_stays_nothing() -> None:
    assert len(band_filled(np.zeros(0, dtype=np.float32))) == 0
