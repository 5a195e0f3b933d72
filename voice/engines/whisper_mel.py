"""Whisper's log-mel features of an utterance in its window, worked out over the speech only.

Whisper hears a window (15 s at least through the short window, voice/engines/whisper.py)
of which a command fills two or three seconds; the rest is silence added after it. The
features of that silence are known without computing them: a frame whose samples are all
zero has no energy in any band, so after the log and Whisper's floor (eight decades under
the loudest band of the clip) every band of it holds the floor. faster-whisper's extractor
still runs its STFT and mel filters over the whole padded window: 15-27 ms of the ~200 ms a
guess at a command takes on this machine (BENCHMARKS.md, "Toward 300 ms offline").

`window_features` runs the same extractor over the speech and enough zeros after it for
its last frames to be silence throughout, then fills the rest of the window with the value
those frames hold. The floor is the clip's: the silence's own -10 (log10 of the extractor's
clip) is below it unless the clip is silent, and then every frame is -10 either way. The
result is the extractor's own output for the padded window, bit for bit
(tests/unit/test_whisper_mel.py), so Whisper hears exactly what it heard before.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

HOP_SAMPLES = 160  # Whisper's mel frames: one every 10 ms at 16 kHz


class MelExtractor(Protocol):
    """faster-whisper's `FeatureExtractor`, as far as it is used here."""

    n_fft: int

    def __call__(self, waveform: np.ndarray, padding: int = ...) -> np.ndarray: ...


def window_features(extractor: MelExtractor, samples: np.ndarray, window_s: int) -> np.ndarray:
    """The log-mel features (n_mels x window_s * 100) of `samples` (16 kHz, float) followed by
    silence up to `window_s` seconds, as `extractor` computes them for the padded window."""
    frames = window_s * 16_000 // HOP_SAMPLES
    # Two FFT lengths of zeros: the extractor's last frame (centred at most 2 hops before the
    # end) then lies wholly in them, whatever the speech's own end was.
    head = extractor(np.pad(samples.astype(np.float32), (0, 2 * extractor.n_fft)), padding=0)
    if head.shape[1] >= frames:  # no silence to fill: the speech fills the window
        return np.asarray(extractor(np.pad(samples, (0, max(0, window_s * 16_000 - len(samples)))), padding=0))[
            :, :frames
        ]
    features = np.empty((head.shape[0], frames), dtype=head.dtype)
    features[:, : head.shape[1]] = head
    features[:, head.shape[1] :] = head[:, -1:]  # a silent frame: every band at the clip's floor
    return features
