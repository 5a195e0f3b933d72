"""Google Cloud speech adapters for production voice (docs/sockets.md#voice-pipeline).

Imported by the composition root only, and only when Google speech is switched on, so
the offline default never loads the Google SDKs.

Text-to-speech: only Google's HTTP (non-streaming) API takes SSML, and only non-Chirp,
non-Journey voices (Neural2, WaveNet, Standard) honour `<prosody>`. Pipecat's
`GoogleHttpTTSService` builds its own SSML around `escape(text)`, which would read our
markup aloud, so `SsmlGoogleHttpTTSService` passes the `<speak>` document made by
`voice.prosody` through unchanged, and refuses a Chirp or Journey voice outright (those
would silently ignore every emotion). Speech-to-text is Pipecat's streaming
`GoogleSTTService` (v2), which also speaks Indonesian.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipecat.services.google.stt import GoogleSTTService
from pipecat.services.google.tts import GoogleHttpTTSService
from pipecat.services.settings import ServiceSettings, TTSSettings
from pipecat.transcriptions.language import Language
from pipecat.utils.types import is_given

DEFAULT_VOICE = "en-US-Neural2-F"
DEFAULT_LANGUAGE = "en-US"
# Voice families that skip SSML entirely in Google's API (and so in Pipecat's service).
_NO_SSML_FAMILIES = ("chirp", "journey")


class UnsupportedVoice(ValueError):
    """The Google voice cannot speak SSML prosody, so emotions would be lost."""


def check_ssml_voice(voice: str) -> None:
    """Raise `UnsupportedVoice` for a voice that ignores SSML (Chirp, Journey)."""
    if any(family in voice.lower() for family in _NO_SSML_FAMILIES):
        raise UnsupportedVoice(
            f"Google voice {voice!r} ignores SSML, so emotions would not be heard; "
            f"choose a Neural2, WaveNet or Standard voice such as {DEFAULT_VOICE!r}"
        )


def passthrough_ssml(text: str) -> str | None:
    """Our SSML unchanged, or None when the text is not an SSML document."""
    return text if text.lstrip().startswith("<speak") else None


class SsmlGoogleHttpTTSService(GoogleHttpTTSService):
    """Google HTTP TTS that speaks the per-sentence SSML from `voice.prosody` as it is."""

    def __init__(self, *, voice: str = DEFAULT_VOICE, language: str = DEFAULT_LANGUAGE, **kwargs: Any) -> None:
        check_ssml_voice(voice)  # before the client is made: fail at startup, not mid-call
        super().__init__(settings=GoogleHttpTTSService.Settings(voice=voice, language=language), **kwargs)

    def _construct_ssml(self, text: str) -> str:
        ssml = passthrough_ssml(text)
        # Text that reached us without the prosody transform still gets Google's own SSML.
        return ssml if ssml is not None else super()._construct_ssml(text)

    async def _update_settings(self, delta: ServiceSettings) -> dict[str, Any]:
        assert isinstance(delta, TTSSettings), "a TTS service is only sent TTS settings"
        # A voice change mid-call must not switch emotions off either.
        if is_given(delta.voice) and isinstance(delta.voice, str):
            check_ssml_voice(delta.voice)
        return await super()._update_settings(delta)


def google_stt(credentials_path: str, languages: Sequence[str]) -> GoogleSTTService:
    """Pipecat's streaming Google STT for the given BCP-47 codes (e.g. "en-US", "id-ID")."""
    assert languages, "at least one language"
    return GoogleSTTService(
        credentials_path=credentials_path,
        settings=GoogleSTTService.Settings(languages=[Language(code) for code in languages]),
    )
