"""Both Gemini adapters reach Google through the one `GeminiClient`: the same API version
and headers on the wire, the same refusal of a certificate nobody vouches for, and the
same translation of an SDK error. Driven over real HTTP against the fake Gemini endpoint,
so a copy of the client set-up drifting in either adapter fails here."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agents.gemini import GeminiModel
from agents.genai import API_VERSION
from agents.knowledge import ExtractionFailed, KnowledgeMessage
from agents.knowledge.gemini import GeminiExtractor
from agents.model import Content, ModelError, ModelRejected, ModelRequest, ModelUnavailable
from tests.fakes.gemini_server import FakeGemini, Reply, error_reply, text_reply

# A hung socket must fail the test, not stall the run.
pytestmark = pytest.mark.timeout(10)

API_KEY = "test-key-0123456789"
REQUEST = ModelRequest(model="gemini-test", system="You are Ava.", contents=(Content(role="user", text="hi"),))
SAID = [KnowledgeMessage("msg_1", 1, "human", "my favourite food is soto", dt.datetime(2026, 12, 1, tzinfo=dt.UTC))]


class Adapters:
    """The agents' model and the knowledge extractor, configured alike against one endpoint."""

    def __init__(self, base_url: str, *, retries_max: int) -> None:
        self.model = GeminiModel(
            api_key=API_KEY, base_url=base_url, timeout_s=2.0, retries_max=retries_max, backoff_s=0.01
        )
        self.extractor = GeminiExtractor(
            api_key=API_KEY,
            model="gemini-test",
            base_url=base_url,
            timeout_s=2.0,
            retries_max=retries_max,
            backoff_s=0.01,
        )

    async def errors(self) -> tuple[ModelError, ModelError]:
        """What each adapter raised for the same failure, as our model errors."""
        with pytest.raises(ModelError) as from_model:
            await self.model.generate(request=REQUEST)
        with pytest.raises(ExtractionFailed) as from_extractor:
            await self.extractor.extract(person_name="Budi", messages=SAID, known=())
        # The extractor's callers expect ExtractionFailed; the shared error is its cause.
        cause = from_extractor.value.__cause__
        assert isinstance(cause, ModelError)
        assert str(cause) in str(from_extractor.value)
        return from_model.value, cause

    async def aclose(self) -> None:
        await self.model.aclose()
        await self.extractor.aclose()


@pytest_asyncio.fixture
async def gemini() -> AsyncIterator[FakeGemini]:
    async with FakeGemini() as fake:
        yield fake


async def test_both_adapters_send_the_same_version_and_headers(gemini: FakeGemini) -> None:
    adapters = Adapters(gemini.base_url, retries_max=0)
    gemini.script(text_reply("hello"), text_reply('{"facts": []}'))
    try:
        await adapters.model.generate(request=REQUEST)
        await adapters.extractor.extract(person_name="Budi", messages=SAID, known=())
    finally:
        await adapters.aclose()

    from_model, from_extractor = gemini.requests
    for received in (from_model, from_extractor):
        assert received.path == f"/{API_VERSION}/models/gemini-test:generateContent"
        assert received.headers["x-goog-api-key"] == API_KEY
        assert received.headers["x-server-timeout"] == "2"
    assert from_model.headers == from_extractor.headers | {"content-length": from_model.headers["content-length"]}


async def test_both_adapters_refuse_an_untrusted_certificate(tmp_path: Path) -> None:
    async with FakeGemini(tls=_self_signed_server(tmp_path)) as gemini:
        adapters = Adapters(gemini.base_url, retries_max=0)
        try:
            from_model, from_extractor = await adapters.errors()
        finally:
            await adapters.aclose()
        # Verification failed during the handshake, so nothing was sent.
        assert gemini.requests == []

    assert isinstance(from_model, ModelUnavailable)
    assert type(from_extractor) is type(from_model)
    assert str(from_extractor) == str(from_model)
    assert "ConnectError" in str(from_model)


@pytest.mark.parametrize(
    ("replies", "expected"),
    [
        ([error_reply(400, f"API key not valid: {API_KEY}")], ModelRejected),
        ([error_reply(503), error_reply(503)], ModelUnavailable),
    ],
    ids=["refused", "retries-exhausted"],
)
async def test_an_sdk_error_maps_identically_through_both(
    gemini: FakeGemini, replies: list[Reply], expected: type[ModelError]
) -> None:
    adapters = Adapters(gemini.base_url, retries_max=len(replies) - 1)
    gemini.script(*replies, *replies)
    try:
        from_model, from_extractor = await adapters.errors()
    finally:
        await adapters.aclose()

    assert type(from_model) is expected
    assert type(from_extractor) is expected
    assert str(from_extractor) == str(from_model)
    assert API_KEY not in str(from_model)
    assert len(gemini.requests) == 2 * len(replies)


def _self_signed_server(tmp_path: Path) -> ssl.SSLContext:
    """A server context for 127.0.0.1 whose certificate no trusted authority signed."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-gemini")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    return context
