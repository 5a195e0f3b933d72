"""One contract for every `TokenVerifier` a person signs in with: `LocalTokens` (our own
HMAC session tokens) and `FirebaseTokens` (firebase-admin's real verification, fed
certificates of a key made here from an endpoint served here, so it runs offline). A
genuine, current token names its holder; a forged, expired or otherwise wrong one, or any
garbage, is `Unauthorized`, said the same way; a signed-out session (`Sessions`) is
refused on top of either."""

from __future__ import annotations

import contextlib
import datetime as dt
import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import asyncpg
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from google.auth import crypt, jwt
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from chat import LocalTokens, Sessions, Unauthorized
from chat.firebase import FirebaseTokens

PROJECT = "avagenc-test"
SUBJECT = "uid-budi-1"
Issue = Callable[..., str]  # (**bad) -> token; bad: forged, expired, audience, issuer, early


def _key_and_cert() -> tuple[bytes, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-securetoken")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem, cert.public_bytes(serialization.Encoding.PEM).decode()


@contextlib.contextmanager
def certificate_endpoint(certs: dict[str, str]) -> Iterator[str]:
    """Google's certificate endpoint, as a real HTTP server on loopback serving ours."""
    body = json.dumps(certs).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "public, max-age=60")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/certs"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def firebase() -> Iterator[tuple[FirebaseTokens, Issue, str]]:
    key, cert = _key_and_cert()
    forged_key, _ = _key_and_cert()
    with certificate_endpoint({"k1": cert}) as url:
        verifier = FirebaseTokens(PROJECT, certs_url=url, app_name=f"test-{time.monotonic_ns()}")

        def issue(
            forged: bool = False,
            expired: bool = False,
            audience: str = PROJECT,
            issuer: str = f"https://securetoken.google.com/{PROJECT}",
            early: bool = False,
        ) -> str:
            signer = crypt.RSASigner.from_string(forged_key if forged else key, key_id="k1")  # type: ignore[no-untyped-call]
            now = int(time.time()) + (7200 if early else 0)
            claims = {
                "iss": issuer,
                "aud": audience,
                "sub": SUBJECT,
                "name": "Budi",
                "auth_time": now - 20,
                "iat": now - (7200 if expired else 10),
                "exp": now - 3600 if expired else now + 3600,
            }
            token: bytes = jwt.encode(signer, claims)  # type: ignore[no-untyped-call]
            return token.decode()

        try:
            yield verifier, issue, SUBJECT
        finally:
            verifier.close()


@contextlib.contextmanager
def local() -> Iterator[tuple[LocalTokens, Issue, str]]:
    tokens, forger = LocalTokens(b"k" * 32, ttl_s=3600), LocalTokens(b"f" * 32, ttl_s=3600)

    def issue(forged: bool = False, expired: bool = False, **_: Any) -> str:
        return (forger if forged else tokens).issue(SUBJECT, now=time.time() - (7200 if expired else 0))

    yield tokens, issue, SUBJECT


@pytest.fixture(params=["local", "firebase"])
def verifier(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Issue, str]]:
    with {"local": local, "firebase": firebase}[request.param]() as made:
        yield made


async def test_a_genuine_current_token_names_its_holder(verifier: tuple[Any, Issue, str]) -> None:
    tokens, issue, holder = verifier
    assert await tokens.verify(issue()) == holder


@pytest.mark.parametrize("bad", [{"forged": True}, {"expired": True}])
async def test_a_forged_or_expired_token_is_refused(verifier: tuple[Any, Issue, str], bad: dict[str, Any]) -> None:
    tokens, issue, _ = verifier
    with pytest.raises(Unauthorized):
        await tokens.verify(issue(**bad))


@pytest.mark.parametrize(
    "bad",
    [
        {"audience": "someone-elses-project"},
        {"issuer": "https://securetoken.google.com/someone-elses-project"},
        {"issuer": "https://accounts.google.com"},
        {"early": True},
    ],
    ids=["wrong audience", "wrong issuer", "google sign-in issuer", "not yet valid"],
)
async def test_a_firebase_token_for_elsewhere_or_not_yet_valid_is_refused(bad: dict[str, Any]) -> None:
    with firebase() as (tokens, issue, _):
        with pytest.raises(Unauthorized):
            await tokens.verify(issue(**bad))


async def test_garbage_of_any_kind_is_refused_the_same_way(verifier: tuple[Any, Issue, str]) -> None:
    tokens, issue, _ = verifier
    good = issue()
    cases = ["", "garbage", "a.b.c", good + "x", good[:-2], good.replace(".", "é", 1), "\udcff" * 3, "x" * 10_000]
    for token in cases:
        with pytest.raises(Unauthorized):
            await tokens.verify(token)

    @hypothesis_settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(st.text(max_size=300))
    def any_text(token: str) -> None:
        import asyncio

        with pytest.raises(Unauthorized):
            asyncio.run(tokens.verify(token))

    # The Firebase verifier's calls are thread-safe; each example runs its own loop.
    await __import__("asyncio").to_thread(any_text)


async def test_a_signed_out_session_is_refused(verifier: tuple[Any, Issue, str], pool: asyncpg.Pool) -> None:
    tokens, issue, holder = verifier
    sessions = Sessions(tokens, pool)
    mine = issue()
    assert await sessions.verify(mine) == holder
    await sessions.sign_out(mine)
    with pytest.raises(Unauthorized, match="signed out"):
        await sessions.verify(mine)
    with pytest.raises(Unauthorized):
        await sessions.sign_out("garbage")
