"""The Google speech adapters, without the network: our SSML passes through untouched,
and a voice that would ignore it is refused.

The services are built for real with a throwaway service-account key (made here, signed
by nobody Google knows); building a Google client opens no connection, and nothing
here asks it to synthesize or recognise anything.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pipecat.services.google.stt import GoogleSTTService, GoogleSTTSettings
from pipecat.services.google.tts import GoogleHttpTTSService
from pydantic import ValidationError

from settings import Settings
from voice.engines.google import (
    SsmlGoogleHttpTTSService,
    UnsupportedVoice,
    check_ssml_voice,
    google_stt,
    is_loopback,
    passthrough_ssml,
)
from voice.prosody import segment_ssml


@pytest.fixture(scope="module")
def fake_credentials() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return json.dumps(
        {
            "type": "service_account",
            "project_id": "avagenc-test",
            "private_key_id": "0",
            "private_key": pem,
            "client_email": "tts@avagenc-test.iam.gserviceaccount.com",
            "client_id": "0",
            "token_uri": "https://oauth2.googleapis.com/token",
        }
    )


@pytest.mark.parametrize("voice", ["en-US-Chirp3-HD-Charon", "en-US-Chirp-HD-F", "en-US-Journey-F", "id-ID-CHIRP3-x"])
def test_voices_that_ignore_ssml_are_refused(voice: str) -> None:
    with pytest.raises(UnsupportedVoice, match="ignores SSML"):
        check_ssml_voice(voice)


@pytest.mark.parametrize("voice", ["en-US-Neural2-F", "en-US-Wavenet-D", "id-ID-Standard-A"])
def test_ssml_voices_are_accepted(voice: str) -> None:
    check_ssml_voice(voice)


def test_only_an_ssml_document_passes_through() -> None:
    ssml = segment_ssml("Phew, that worked!", "relieved")
    assert passthrough_ssml(ssml) == ssml
    assert passthrough_ssml("  " + ssml) == "  " + ssml
    assert passthrough_ssml("Phew, that worked!") is None


async def test_the_service_sends_our_ssml_unchanged(fake_credentials: str) -> None:
    tts = SsmlGoogleHttpTTSService(credentials=fake_credentials)
    ssml = segment_ssml("Tom & Jerry, finally!", "ecstatic")

    assert tts._construct_ssml(ssml) == ssml
    # Text that skipped our transform still becomes valid SSML, escaped by Pipecat.
    plain = tts._construct_ssml("Tom & Jerry")
    assert ET.fromstring(plain).tag == "speak" and "Tom &amp; Jerry" in plain


async def test_a_chirp_voice_is_refused_at_construction_and_later(fake_credentials: str) -> None:
    with pytest.raises(UnsupportedVoice):
        SsmlGoogleHttpTTSService(credentials=fake_credentials, voice="en-US-Chirp3-HD-Charon")

    tts = SsmlGoogleHttpTTSService(credentials=fake_credentials, voice="en-US-Neural2-F")
    with pytest.raises(UnsupportedVoice):
        await tts._update_settings(GoogleHttpTTSService.Settings(voice="en-US-Journey-F"))


async def test_google_stt_is_built_for_the_given_languages(fake_credentials: str, tmp_path: Path) -> None:
    path = tmp_path / "service-account.json"
    path.write_text(fake_credentials)

    stt = google_stt(str(path), ["en-US", "id-ID"])

    assert isinstance(stt, GoogleSTTService)
    settings: object = stt._settings  # Pipecat annotates it with an alias mypy cannot follow
    assert isinstance(settings, GoogleSTTSettings)
    assert isinstance(settings.languages, list)
    assert [str(language) for language in settings.languages] == ["en-US", "id-ID"]


@pytest.mark.parametrize(
    ("endpoint", "loopback"),
    [("127.0.0.1:5050", True), ("localhost:1", True), ("[::1]:443", True), ("speech.googleapis.com:443", False)],
)
def test_only_a_loopback_endpoint_is_reached_without_tls(endpoint: str, loopback: bool) -> None:
    assert is_loopback(endpoint) is loopback


@pytest.mark.parametrize("endpoint", ["https://speech.googleapis.com", "host:port", "a b:1"])
def test_an_endpoint_is_host_and_port_never_a_url(endpoint: str) -> None:
    with pytest.raises(ValidationError):
        Settings(_env_file=None, google_stt_endpoint=endpoint)  # type: ignore[call-arg]
