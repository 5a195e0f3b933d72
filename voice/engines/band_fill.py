"""A phone line's empty upper band, filled with a faint noise before Whisper hears it.

A phone call reaches the recogniser as 8 kHz speech brought up to 16 kHz: nothing at all
above 4 kHz. Whisper was trained on full-band audio, where even silence has a noise floor
up there; an upper band of digital nothing is itself unlike anything it heard, and through
the short window (voice/engines/whisper.py) it flipped more words on phone audio than the
30 s window did. A faint noise above `FILL_FROM_HZ`, at `FILL_DBFS`, gives the band the
floor Whisper expects, and the short window then hears phone audio about as well as the
30 s window in a third of the time (BENCHMARKS.md, "The phone door": louder fills and
fainter ones misheard more). The noise is seeded, so the same audio is always heard the
same way.
"""

from __future__ import annotations

import numpy as np

RATE = 16_000  # the recogniser's rate: what this fills is 16 kHz audio
FILL_DBFS = -60.0  # the noise's level, RMS relative to full scale
FILL_FROM_HZ = 3_900  # just under the line's 4 kHz edge
SEED = 0
MAX_SAMPLES = 35 * RATE  # a transform over the longest utterance the short window takes, and then some


def band_filled(samples: np.ndarray) -> np.ndarray:
    """`samples` (float, 16 kHz, full scale 1.0) with the faint noise added above `FILL_FROM_HZ`."""
    assert len(samples) <= MAX_SAMPLES, "one utterance at a time"
    if not len(samples):
        return samples
    noise = np.random.default_rng(SEED).standard_normal(len(samples))
    spectrum = np.fft.rfft(noise)
    spectrum[np.fft.rfftfreq(len(noise), 1 / RATE) < FILL_FROM_HZ] = 0
    upper = np.fft.irfft(spectrum, len(noise))
    upper *= 10 ** (FILL_DBFS / 20) / max(1e-12, float(np.sqrt(np.mean(upper**2))))
    filled: np.ndarray = np.clip(samples + upper, -1.0, 1.0).astype(np.float32)
    return filled
