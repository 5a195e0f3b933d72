"""A phone line both ways: the caller's 8 kHz brought up to what the pipeline hears without
delaying it, and Ava's voice made for the line: 8 kHz, band-limited without aliasing, at a
phone's loudness, with Twilio `mark`s after each sentence (docs/sockets.md#phone-stream).

*The way in* (`LineUpsampler`, the phone serializer's input resampler): the VAD and Whisper
hear 16 kHz, the line brings 8 kHz. Pipecat's stream resampler (SoX at very high quality)
holds back about 52 ms of every stream behind its long filter, so the VAD heard the end of a
caller's speech 52 ms after a speaker's (BENCHMARKS.md, "The phone at the speaker's pace,
again"). The line has nothing above 4 kHz to keep apart from its images, so a short
linear-phase half-band filter (4 ms of delay) does the same work: its images of the band
of a tone at 3.5 kHz or lower are more than 80 dB down (`tests/unit/test_phone_line.py`), and the
narrowband bench hears clips brought up either way with the same words.

A phone line carries 300-3,400 Hz at 8 kHz in μ-law. The voice is synthesised at its own
rate (24 kHz for the neural voice) and brought down here once:

- *Low-pass and resampling in one step*: a SoX resampler at its very-high-quality setting,
  whose anti-alias filter passes up to about 3.65 kHz and stops everything from the new
  Nyquist (4 kHz) on, so nothing above it folds back into the band as a whistle (a 5 kHz
  tone comes out more than 100 dB down; `tests/unit/test_phone_line.py`). The resampler
  keeps its filter history for the whole sentence, whatever the pauses between the voice's
  parts (Pipecat's default clears it after 0.2 s without audio, which cuts a click into a
  sentence whose second clause took longer than that to synthesise), and is flushed at the
  sentence's end, so its last few milliseconds are not lost.
- *High-pass at the line's lower edge*: a linear-phase FIR cuts what the network's own
  filter would cut below 300 Hz, so the level and the limiter below act on what the caller
  actually hears.
- *Loudness*: a fixed gain brings the neural voice's sentences (each brought to one loudness
  by the voice itself) to about -20 dBm0, the nominal level of speech on a telephone
  network, and a soft limit keeps peaks below μ-law's overload point instead of clipping.
  μ-law's steps grow with the level, so a voice far below nominal loses its quiet sounds and
  one far above it distorts; BENCHMARKS.md gives the measured levels.

Marks: after each sentence's audio the door sends Twilio a `mark` (`ava-<n>`). Twilio
echoes a mark back once the audio before it has been played to the caller, and on `clear`
(a barge-in) it drops what was buffered and echoes every mark still pending at once, so
the server knows which sentences the caller really heard.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pipecat.audio.resamplers.base_audio_resampler import BaseAudioResampler
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    InterruptionFrame,
    OutputTransportMessageFrame,
    TTSAudioRawFrame,
    TTSStoppedFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

LINE_RATE = 8_000
PIPELINE_RATE = 16_000  # what the VAD and Whisper hear: the line's rate, doubled
# The way in: a windowed-sinc low-pass at the line's Nyquist, at 16 kHz. 127 taps (odd,
# linear phase) delay by 63 samples, 3.9 ms; Kaiser's beta 8 keeps the images ~80 dB down
# past a transition of about +-330 Hz around 4 kHz.
UP_TAPS = 127
UP_KAISER_BETA = 8.0
HIGH_PASS_HZ = 300
HIGH_PASS_TAPS = 101  # odd, linear phase: 6 ms of delay at 8 kHz, about 250 Hz of transition
# Active speech level of the neural voice's sentences after the high-pass (median over Ava's
# 36 replies and name sentences in bench.voice_narrowband: -24.1 dBm0 at a gain of 0.82,
# BENCHMARKS.md), and the level a telephone network expects speech at. dBm0 is dBFS (RMS)
# + 6.18 for μ-law: a full-scale sine is +3.17 dBm0.
VOICE_ACTIVE_DBFS = -28.6
LINE_ACTIVE_DBM0 = -20.0
DBM0_FROM_DBFS = 6.18
LINE_GAIN = 10 ** ((LINE_ACTIVE_DBM0 - DBM0_FROM_DBFS - VOICE_ACTIVE_DBFS) / 20)
SOFT_LIMIT = 0.7  # linear up to here, then bending towards full scale (μ-law overloads at +3.17 dBm0)


def _high_pass_taps(rate: int = LINE_RATE, cutoff_hz: float = HIGH_PASS_HZ, taps: int = HIGH_PASS_TAPS) -> np.ndarray:
    """A windowed-sinc high-pass: a delayed impulse minus the matching low-pass."""
    n = np.arange(taps) - (taps - 1) / 2
    low = 2 * cutoff_hz / rate * np.sinc(2 * cutoff_hz / rate * n) * np.blackman(taps)
    low /= low.sum()
    high = -low
    high[(taps - 1) // 2] += 1.0
    taps_out: np.ndarray = high.astype(np.float64)
    return taps_out


_HIGH_PASS = _high_pass_taps()


def _up_taps(taps: int = UP_TAPS, beta: float = UP_KAISER_BETA) -> np.ndarray:
    """The way in's low-pass at 16 kHz, cut at 4 kHz, its gain 2 (every other sample is a zero)."""
    n = np.arange(taps) - (taps - 1) / 2
    low = 0.5 * np.sinc(0.5 * n) * np.kaiser(taps, beta)
    result: np.ndarray = (2 * low / low.sum()).astype(np.float64)
    return result


_UP = _up_taps()


class LineUpsampler(BaseAudioResampler):
    """8 kHz PCM16 from the line to 16 kHz as it comes, 3.9 ms late (`UP_TAPS`), every input
    sample's two outputs given at once: nothing waits for the next frame. Its history is kept
    across the gaps between frames (Twilio sends one every 20 ms, silence included).
    Any other pair of rates goes to Pipecat's resampler."""

    def __init__(self) -> None:
        self._history = np.zeros(len(_UP) - 1, np.float64)
        self._other: BaseAudioResampler | None = None

    async def resample(self, audio: bytes, in_rate: int, out_rate: int) -> bytes:
        if in_rate == out_rate:
            return audio
        if (in_rate, out_rate) != (LINE_RATE, PIPELINE_RATE):
            self._other = self._other or create_stream_resampler()
            other: bytes = await self._other.resample(audio, in_rate, out_rate)
            return other
        samples = np.frombuffer(audio[: len(audio) - len(audio) % 2], dtype="<i2").astype(np.float64)
        if not len(samples):
            return b""
        stuffed = np.zeros(2 * len(samples), np.float64)
        stuffed[::2] = samples
        return self._filter(stuffed)

    def _filter(self, stuffed: np.ndarray) -> bytes:
        joined = np.concatenate([self._history, stuffed])
        out = np.convolve(joined, _UP, mode="valid")
        self._history = joined[len(joined) - len(self._history) :]
        return bytes(np.clip(np.round(out), -32768, 32767).astype("<i2").tobytes())

    async def flush(self) -> bytes:
        """The delay's worth still in the filter, and a fresh start."""
        tail = self._filter(np.zeros((len(_UP) - 1) // 2, np.float64))
        await self.reset()
        return tail

    async def reset(self) -> None:
        self._history[:] = 0.0
        if self._other is not None:
            await self._other.reset()  # type: ignore[no-untyped-call]  # untyped in Pipecat


def soft_limit(samples: np.ndarray, knee: float = SOFT_LIMIT) -> np.ndarray:
    """Linear below `knee`, then bending smoothly towards (never past) full scale."""
    over = np.abs(samples) > knee
    if not over.any():
        return samples
    limited = samples.copy()
    headroom = 1.0 - knee
    limited[over] = np.sign(samples[over]) * (knee + headroom * np.tanh((np.abs(samples[over]) - knee) / headroom))
    return limited


class LineSignal:
    """The streaming signal path of one call's reply audio: any rate in, 8 kHz PCM16 out."""

    def __init__(self, *, gain: float = LINE_GAIN) -> None:
        self._gain = gain
        self._rate_in: int | None = None
        self._resampler: BaseAudioResampler | None = None
        self._history = np.zeros(len(_HIGH_PASS) - 1, np.float64)
        self.samples_in = 0
        self.samples_out = 0

    def _resampler_for(self, rate: int) -> BaseAudioResampler | None:
        if rate == LINE_RATE:
            return None
        if self._resampler is None or self._rate_in != rate:
            # SoX at its very-high quality, its history never cleared behind our back (the
            # sentence's end flushes it, a barge-in resets it).
            self._resampler = create_stream_resampler(quality="VHQ", clear_after_secs=None)
            self._rate_in = rate
        return self._resampler

    def _shape(self, pcm: bytes) -> bytes:
        samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64) / 32768.0
        if not len(samples):
            return b""
        joined = np.concatenate([self._history, samples])
        filtered = np.convolve(joined, _HIGH_PASS, mode="valid")
        self._history = joined[len(joined) - len(self._history) :]
        shaped = soft_limit(filtered * self._gain)
        self.samples_out += len(shaped)
        return bytes((np.clip(shaped, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())

    async def feed(self, pcm: bytes, rate: int) -> bytes:
        """PCM16 mono at `rate` in; what is ready of it at 8 kHz out."""
        self.samples_in += len(pcm) // 2
        resampler = self._resampler_for(rate)
        return self._shape(pcm if resampler is None else await resampler.resample(pcm, rate, LINE_RATE))

    async def flush(self) -> bytes:
        """The end of a sentence: what the resampler still holds, and a fresh start."""
        return self._shape(await self._resampler.flush()) if self._resampler is not None else b""

    async def reset(self) -> None:
        """A barge-in: what was held is dropped with the rest of the reply."""
        if self._resampler is not None:
            await self._resampler.reset()  # type: ignore[no-untyped-call]  # untyped in Pipecat
        self._history[:] = 0.0


class PhoneMark(OutputTransportMessageFrame):
    """A Twilio `mark` after a sentence's audio; the phone serializer writes it for the stream."""

    def __init__(self, name: str) -> None:
        super().__init__(message={"mark": name})
        self.name = name


class PhoneLine(FrameProcessor):
    """Sits just before the phone door's output: the reply's audio through `LineSignal`, and a
    `PhoneMark` after each sentence. Everything else passes untouched."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.signal = LineSignal()
        self.sentences = 0
        self._context_id: str | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction != FrameDirection.DOWNSTREAM:
            await self.push_frame(frame, direction)
        elif isinstance(frame, TTSAudioRawFrame):
            self._context_id = frame.context_id
            await self._push_audio(await self.signal.feed(frame.audio, frame.sample_rate), frame)
        elif isinstance(frame, TTSStoppedFrame):
            await self._push_audio(await self.signal.flush(), frame)
            self.sentences += 1
            await self.push_frame(frame, direction)
            await self.push_frame(PhoneMark(f"ava-{self.sentences}"))
        elif isinstance(frame, InterruptionFrame | EndFrame | CancelFrame):
            await self.signal.reset()
            await self.push_frame(frame, direction)
        else:
            await self.push_frame(frame, direction)

    async def _push_audio(self, pcm: bytes, frame: Frame) -> None:
        if not pcm:
            return
        out = TTSAudioRawFrame(pcm, LINE_RATE, 1, context_id=getattr(frame, "context_id", None) or self._context_id)
        out.interruptible = frame.interruptible  # a goodbye's audio stays uninterruptible
        await self.push_frame(out)
