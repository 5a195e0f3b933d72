"""Who is calling: signed session tokens for local sign-in (docs/http.md#authentication).

A `TokenVerifier` turns a bearer token into a person id. `LocalTokens` issues and checks
HMAC-SHA256 tokens bound to a person and an expiry; a Firebase verifier will sit beside
it. Verification is constant-time and says nothing about why a token failed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Protocol

from chat.errors import Unauthorized

_VERSION = "v1"
# Longer than any token this server issues; a longer one is refused before any work.
TOKEN_CHARS_MAX = 300


class TokenVerifier(Protocol):
    async def verify(self, token: str) -> str:
        """The person id the token belongs to; raises `Unauthorized` otherwise."""
        ...


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class LocalTokens:
    """Tokens of the form `v1.<person>.<expires>.<mac>`; the secret never leaves the server."""

    def __init__(self, secret: bytes, *, ttl_s: int) -> None:
        assert len(secret) >= 32, "the session secret must be at least 32 bytes"
        self._secret = secret
        self._ttl_s = ttl_s

    def _mac(self, body: str) -> str:
        return _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())

    def issue(self, person_id: str, *, now: float | None = None) -> str:
        expires = int((now if now is not None else time.time()) + self._ttl_s)
        body = f"{_VERSION}.{person_id}.{expires}"
        return f"{body}.{self._mac(body)}"

    async def verify(self, token: str) -> str:
        # A token is whatever a client sent: any length, any characters (a header decoded
        # as Latin-1, a query string as UTF-8 with surrogates). Only short ASCII can be ours,
        # and the MAC is compared as bytes, so nothing here raises but `Unauthorized`.
        if len(token) > TOKEN_CHARS_MAX or not token.isascii():
            raise Unauthorized("The token is not valid.")
        parts = token.split(".")
        if len(parts) != 4 or parts[0] != _VERSION:
            raise Unauthorized("The token is not valid.")
        body = ".".join(parts[:3])
        if not hmac.compare_digest(self._mac(body).encode(), parts[3].encode()):
            raise Unauthorized("The token is not valid.")
        if not parts[2].isdigit() or int(parts[2]) < time.time():
            raise Unauthorized("The token has expired; sign in again.")
        return parts[1]
