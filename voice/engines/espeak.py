"""`EspeakTTSService`: offline text-to-speech with Debian's espeak-ng, on Pipecat's TTS base.

Offline mode needs a voice that installs from a package registry and needs no model
download; espeak-ng (apt) is one, and with `-m` it honours the SSML `<prosody>` and
`<break>` that `voice.prosody` writes, so emotions sound different here too. It is
robotic, but it is fast (tens of milliseconds a sentence) and it is always there.

Each sentence runs one `espeak-ng` process (no shell, SSML on stdin, bounded by a
timeout). Its WAV on stdout has bogus length fields, so the rate is read from header
bytes 24-28 and the PCM taken after byte 44. The PCM is resampled to the pipeline's
output rate and yielded as `TTSAudioRawFrame`s of about 40 ms.
"""

from __future__ import annotations

import asyncio
import re
import struct
from collections.abc import AsyncGenerator
from typing import Any
from xml.sax.saxutils import unescape

from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import ErrorFrame, Frame, TTSAudioRawFrame
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TTSService
from pipecat.transcriptions.language import Language

from voice.prosody import without_tags

ESPEAK = "espeak-ng"
DEFAULT_VOICE = "en-us"
# espeak-ng voices for the languages Ava speaks first (docs/agents.md#languages); others use the set voice.
VOICES_BY_LANGUAGE: dict[str, str] = {"en": "en-us", "id": "id"}
SYNTHESIS_TIMEOUT_S = 10.0
CHUNK_S = 0.04
_WAV_HEADER_BYTES = 44
_MARKUP = re.compile(r"<[^>]*>")


class EspeakError(RuntimeError):
    """espeak-ng failed, timed out, or is not installed."""


def pcm_from_wav(wav: bytes) -> tuple[bytes, int]:
    """PCM16 mono and its rate from espeak-ng's stdout WAV (whose length fields lie)."""
    if len(wav) < _WAV_HEADER_BYTES or wav[:4] != b"RIFF":
        raise EspeakError("espeak-ng wrote no WAV")
    (rate,) = struct.unpack("<I", wav[24:28])
    pcm = wav[_WAV_HEADER_BYTES:]
    return pcm[: len(pcm) - len(pcm) % 2], rate


async def synthesize(
    ssml: str, *, voice: str = DEFAULT_VOICE, timeout_s: float = SYNTHESIS_TIMEOUT_S
) -> tuple[bytes, int]:
    """Speak SSML (or plain text) with espeak-ng; returns PCM16 mono and its sample rate."""
    try:
        process = await asyncio.create_subprocess_exec(
            ESPEAK,
            "-m",  # read SSML instead of speaking the tags aloud
            "-b",
            "1",  # the input is UTF-8
            "-v",
            voice,
            "--stdin",  # all of stdin at once, not line by line
            "--stdout",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError as exc:
        raise EspeakError(f"{ESPEAK} is not installed (./scripts/install adds it)") from exc
    try:
        async with asyncio.timeout(timeout_s):
            wav, err = await process.communicate(ssml.encode())
    except TimeoutError as exc:
        process.kill()
        await process.wait()
        raise EspeakError(f"{ESPEAK} took longer than {timeout_s} s") from exc
    if process.returncode != 0:
        raise EspeakError(f"{ESPEAK} exited {process.returncode}: {err.decode(errors='replace').strip()[:200]}")
    return pcm_from_wav(wav)


class EspeakTTSService(TTSService):
    """Pipecat TTS that speaks each (SSML) sentence with espeak-ng."""

    def __init__(self, *, voice: str = DEFAULT_VOICE, language: Language | None = None, **kwargs: Any) -> None:
        # Every field set (None where unsupported): Pipecat logs an error for NOT_GIVEN ones.
        settings = TTSSettings(model=None, voice=voice, language=language)
        super().__init__(
            push_start_frame=True,  # the base opens the audio context and sends TTSStartedFrame
            push_stop_frames=True,
            settings=settings,
            **kwargs,  # Pipecat's own options: text_transforms, sample_rate, ...
        )

    def can_generate_metrics(self) -> bool:
        return True

    def language_to_service_language(self, language: Language) -> str | None:
        return VOICES_BY_LANGUAGE.get(str(language).split("-")[0].lower())

    @property
    def espeak_voice(self) -> str:
        """The language's voice when a known language is set, else the chosen voice."""
        language = self._settings.language
        if isinstance(language, str) and language in VOICES_BY_LANGUAGE.values():
            return language
        voice = self._settings.voice
        return voice if isinstance(voice, str) and voice else DEFAULT_VOICE

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        try:
            pcm, rate = await synthesize(text, voice=self.espeak_voice)
        except EspeakError as exc:
            yield ErrorFrame(error=f"espeak-ng synthesis failed: {exc}")
            return
        # Usage counts what is heard, not the SSML around it (espeak costs nothing anyway).
        await self.start_tts_usage_metrics(" ".join(_spoken(text).split()))
        # A fresh resampler per sentence: the whole sentence is here, and flushing
        # yields its tail without carrying filter state into the next one.
        resampler = create_stream_resampler()
        audio = await resampler.resample(pcm, rate, self.sample_rate) + await resampler.flush()
        chunk_bytes = max(2, int(self.sample_rate * CHUNK_S) * 2)
        for start in range(0, len(audio), chunk_bytes):
            await self.stop_ttfb_metrics()
            yield TTSAudioRawFrame(audio[start : start + chunk_bytes], self.sample_rate, 1, context_id=context_id)


def _spoken(ssml: str) -> str:
    """The words inside SSML, for usage counting."""
    return unescape(_MARKUP.sub(" ", without_tags(ssml)))
