"""One contract for every `IdTokenVerifier`: `LocalIdTokens` and `GoogleIdTokens` (google-auth's
real verification, fed certificates of a key made here instead of Google's). A token for
this audience from a verified caller names that caller; anything else is refused the same
way — another audience, an expired or forged token, a person's session token, garbage."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from google.auth import crypt, jwt

from reminders import CallbackRefused, IdTokenVerifier, LocalIdTokens
from reminders.oidc import GoogleIdTokens

AUDIENCE = "https://avagenc.test"
CALLER = "postera@avagenc.iam.gserviceaccount.com"
Issue = Callable[..., str]  # (email, audience, expires_in_s, forged) -> token


def _key_and_cert() -> tuple[bytes, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-google")])
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
    return pem, cert.public_bytes(serialization.Encoding.PEM)


@dataclass
class _Response:
    status: int
    data: bytes
    headers: dict[str, str]


class CertsServer:
    """google-auth's transport, answering the certificate fetch with our own certificate."""

    def __init__(self, certs: dict[str, str]) -> None:
        self._body = json.dumps(certs).encode()

    def __call__(self, url: str, method: str = "GET", **_: Any) -> _Response:
        return _Response(200, self._body, {})


def google() -> tuple[IdTokenVerifier, Issue]:
    key, cert = _key_and_cert()
    forged_key, _ = _key_and_cert()
    verifier = GoogleIdTokens(request=CertsServer({"k1": cert.decode()}))

    def issue(email: str = CALLER, audience: str = AUDIENCE, expires_in_s: int = 600, forged: bool = False) -> str:
        signer = crypt.RSASigner.from_string(forged_key if forged else key, key_id="k1")  # type: ignore[no-untyped-call]
        now = int(time.time())
        claims = {
            "iss": "https://accounts.google.com",
            "aud": audience,
            "email": email,
            "email_verified": True,
            "iat": now - 10,
            "exp": now + expires_in_s,
        }
        token: bytes = jwt.encode(signer, claims)  # type: ignore[no-untyped-call]
        return token.decode()

    return verifier, issue


def local() -> tuple[IdTokenVerifier, Issue]:
    tokens = LocalIdTokens(b"k" * 32)
    forger = LocalIdTokens(b"f" * 32)

    def issue(email: str = CALLER, audience: str = AUDIENCE, expires_in_s: int = 600, forged: bool = False) -> str:
        return (forger if forged else tokens).issue(
            email=email, audience=audience, now=time.time() + expires_in_s - 3600
        )

    return tokens, issue


@pytest.fixture(params=["local", "google"])
def tokens(request: pytest.FixtureRequest) -> tuple[IdTokenVerifier, Issue]:
    return {"local": local, "google": google}[request.param]()


async def test_a_good_token_names_its_caller(tokens: tuple[IdTokenVerifier, Issue]) -> None:
    verifier, issue = tokens
    assert await verifier.verify(token=issue(), audience=AUDIENCE) == CALLER


@pytest.mark.parametrize(
    "bad",
    [
        {"audience": "https://elsewhere.test"},
        {"expires_in_s": -3600},
        {"forged": True},
    ],
)
async def test_a_bad_token_is_refused(tokens: tuple[IdTokenVerifier, Issue], bad: dict[str, Any]) -> None:
    verifier, issue = tokens
    with pytest.raises(CallbackRefused):
        await verifier.verify(token=issue(**bad), audience=AUDIENCE)


@pytest.mark.parametrize("token", ["v1.usr_1.9999999999.c2lnbmF0dXJl", "garbage", "a.b.c", ""])
async def test_a_persons_token_or_garbage_is_refused(tokens: tuple[IdTokenVerifier, Issue], token: str) -> None:
    verifier, _ = tokens
    with pytest.raises(CallbackRefused):
        await verifier.verify(token=token, audience=AUDIENCE)
