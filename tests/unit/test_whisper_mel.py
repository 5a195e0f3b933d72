"""The short window's features: the silence after the speech filled in, never computed, and
exactly what faster-whisper's extractor makes of the padded window."""

from __future__ import annotations

import numpy as np
import pytest
from faster_whisper.feature_extractor import FeatureExtractor

from voice.engines.whisper_mel import window_features

RATE = 16_000


def _speech(seconds: float, *, seed: int = 1, quiet_tail_s: float = 0.0) -> np.ndarray:
    """A voice-like clip: a few harmonics under noise, then a quiet (not silent) tail."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    voice = 0.3 * np.sin(2 * np.pi * 180 * t) + 0.1 * np.sin(2 * np.pi * 720 * t) + 0.05 * rng.standard_normal(len(t))
    tail = 0.002 * rng.standard_normal(int(quiet_tail_s * RATE))
    return np.concatenate([voice, tail]).astype(np.float32)


def _padded(extractor: FeatureExtractor, samples: np.ndarray, window_s: int) -> np.ndarray:
    """What decode_short computed before: the extractor over the whole padded window."""
    padded = np.pad(samples, (0, window_s * RATE - len(samples)))
    return np.asarray(extractor(padded, padding=0))[:, : window_s * 100]


class _Counting:
    """The extractor, recording how many samples it was given each time."""

    def __init__(self) -> None:
        self.inner = FeatureExtractor()
        self.n_fft = self.inner.n_fft
        self.lengths: list[int] = []

    def __call__(self, waveform: np.ndarray, padding: int = 160) -> np.ndarray:
        self.lengths.append(len(waveform))
        return np.asarray(self.inner(waveform, padding=padding))


@pytest.mark.parametrize(
    ("seconds", "tail_s", "window_s"),
    [
        (1.3, 0.0, 15),
        (2.7, 0.56, 15),
        (0.2, 0.0, 15),
        (3.0, 0.5, 10),
        (13.9, 0.0, 15),
        (20.0, 0.3, 22),
        (14.97, 0.0, 15),
    ],
)
def test_the_features_are_the_padded_windows_bit_for_bit(seconds: float, tail_s: float, window_s: int) -> None:
    extractor = FeatureExtractor()
    samples = _speech(seconds, quiet_tail_s=tail_s)
    assert np.array_equal(window_features(extractor, samples, window_s), _padded(extractor, samples, window_s))


def test_a_silent_clip_is_the_padded_windows_too() -> None:
    extractor = FeatureExtractor()
    silence = np.zeros(RATE, dtype=np.float32)
    assert np.array_equal(window_features(extractor, silence, 15), _padded(extractor, silence, 15))


def test_only_the_speech_goes_through_the_extractor() -> None:
    extractor = _Counting()
    samples = _speech(2.0, quiet_tail_s=0.5)
    features = window_features(extractor, samples, 15)
    assert features.shape == (80, 1500)
    assert extractor.lengths == [len(samples) + 2 * extractor.n_fft]  # not the 15 s window's 240,000
