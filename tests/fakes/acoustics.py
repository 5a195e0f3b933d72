"""Measures on produced speech, for tests that check how a voice sounds rather than what
it was asked: the pitch (median fundamental frequency by autocorrelation), the length of
the speech without the silence after it, that silence, and the loudness."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRAME_S = 0.04
HOP_S = 0.01
PITCH_MIN_HZ = 70.0
PITCH_MAX_HZ = 400.0
VOICED_CORRELATION_MIN = 0.5
SILENCE = 0.002  # |sample| below this (of full scale) counts as silence
LOUD_FRAME_RMS = 0.02


@dataclass(frozen=True, slots=True)
class Sound:
    pitch_hz: float
    speech_s: float
    pause_s: float
    rms: float


def samples_of(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float64) / 32768.0


def median_pitch(x: np.ndarray, rate: int) -> float:
    frame, hop = int(FRAME_S * rate), int(HOP_S * rate)
    shortest, longest = int(rate / PITCH_MAX_HZ), int(rate / PITCH_MIN_HZ)
    found = []
    for start in range(0, len(x) - frame, hop):
        w = x[start : start + frame] - x[start : start + frame].mean()
        if np.sqrt(np.mean(w**2)) < LOUD_FRAME_RMS / 2:
            continue
        ac = np.correlate(w, w, "full")[frame - 1 :]
        if ac[0] <= 0:
            continue
        lag = shortest + int(np.argmax(ac[shortest:longest]))
        if ac[lag] / ac[0] > VOICED_CORRELATION_MIN:
            found.append(rate / lag)
    return float(np.median(found)) if found else 0.0


def measure(pcm: bytes, rate: int) -> Sound:
    x = samples_of(pcm)
    loud = np.nonzero(np.abs(x) > SILENCE)[0]
    first, last = (int(loud[0]), int(loud[-1]) + 1) if len(loud) else (0, 0)
    speech = x[first:last]
    return Sound(
        pitch_hz=median_pitch(speech, rate),
        speech_s=(last - first) / rate,
        pause_s=(len(x) - last) / rate,
        rms=float(np.sqrt(np.mean(speech**2))) if len(speech) else 0.0,
    )
