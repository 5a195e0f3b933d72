"""Who may ask for a note to be delivered (docs/http.md#scheduler-callback): a scheduler, never a person.

Two kinds of caller, two checks:
- an HMAC signature over (note id, person, due time) under the server's own secret, for
  the embedded path (anything of ours that triggers a delivery over HTTP);
- an OIDC ID token for Cloud Tasks, checked for its audience and its service account by
  an `IdTokenVerifier`: `GoogleIdTokens` (reminders/oidc.py) in production, and
  `LocalIdTokens`, its offline twin, which issues and checks tokens of its own.

A person's session token passes neither check: it is not signed with these keys.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Protocol

from reminders.errors import CallbackRefused
from reminders.notes import Note

SIGNATURE_HEADER = "x-avagenc-signature"
_VERSION = "v1"


class CallbackSigner:
    """HMAC-SHA256 over the note's identity; a changed due time invalidates old signatures."""

    def __init__(self, secret: bytes) -> None:
        assert len(secret) >= 32, "the callback secret must be at least 32 bytes"
        self._secret = secret

    def sign(self, note: Note) -> str:
        message = f"{note.id}\n{note.person_id}\n{note.due_at.timestamp():.6f}".encode()
        return f"{_VERSION}={hmac.new(self._secret, message, hashlib.sha256).hexdigest()}"

    def check(self, note: Note, signature: str) -> None:
        if len(signature) > 200 or not hmac.compare_digest(self.sign(note).encode(), signature.strip().encode()):
            raise CallbackRefused("The delivery signature is not valid.")


class IdTokenVerifier(Protocol):
    async def verify(self, *, token: str, audience: str) -> str:
        """The verified caller's email; raises `CallbackRefused` for any bad token."""
        ...


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class LocalIdTokens:
    """The offline twin of Google's ID tokens: `<claims>.<mac>` signed with a local key.

    Used where there is no Google (a single machine, the tests' fake Cloud Tasks). It
    checks what the real verifier checks: signature, expiry, audience, a verified email."""

    def __init__(self, secret: bytes, *, ttl_s: int = 3600) -> None:
        assert len(secret) >= 32
        self._secret = secret
        self._ttl_s = ttl_s

    def _mac(self, body: str) -> str:
        return _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())

    def issue(self, *, email: str, audience: str, now: float | None = None) -> str:
        claims = {
            "email": email,
            "email_verified": True,
            "aud": audience,
            "exp": int((time.time() if now is None else now) + self._ttl_s),
        }
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        return f"{body}.{self._mac(body)}"

    async def verify(self, *, token: str, audience: str) -> str:
        body, _, mac = token.partition(".")
        if len(token) > 2000 or not mac or not hmac.compare_digest(self._mac(body).encode(), mac.encode()):
            raise CallbackRefused("The ID token is not valid.")
        try:
            claims = json.loads(_unb64(body))
        except ValueError as exc:
            raise CallbackRefused("The ID token is not valid.") from exc
        if not isinstance(claims, dict) or claims.get("aud") != audience:
            raise CallbackRefused("The ID token is for another audience.")
        if not isinstance(claims.get("exp"), int) or claims["exp"] < time.time():
            raise CallbackRefused("The ID token has expired.")
        if claims.get("email_verified") is not True or not isinstance(claims.get("email"), str):
            raise CallbackRefused("The ID token names no verified caller.")
        return str(claims["email"])


class CallbackGate:
    """The delivery endpoint's one check: a valid HMAC signature, or a valid ID token from
    the expected service account."""

    def __init__(
        self,
        *,
        signer: CallbackSigner,
        id_tokens: IdTokenVerifier | None,
        audience: str,
        service_account: str | None,
    ) -> None:
        self._signer = signer
        self._id_tokens = id_tokens
        self._audience = audience
        self._service_account = service_account

    def sign(self, note: Note) -> str:
        return self._signer.sign(note)

    async def check_caller(self, bearer: str) -> None:
        """A Cloud Tasks OIDC token from our service account (needs no note to check)."""
        if self._id_tokens is None or not self._service_account:
            raise CallbackRefused("Deliveries need a scheduler's signature.")
        email = await self._id_tokens.verify(token=bearer, audience=self._audience)
        if not hmac.compare_digest(email.encode(), self._service_account.encode()):
            raise CallbackRefused("This caller may not deliver notes.")

    def check_signature(self, note: Note | None, signature: str) -> None:
        """The HMAC over this note; an unknown note fails the same way as a bad signature."""
        if note is None:
            raise CallbackRefused("The delivery signature is not valid.")
        self._signer.check(note, signature)

    async def check(self, note: Note, *, signature: str | None, bearer: str | None) -> None:
        if signature:
            self.check_signature(note, signature)
        elif bearer:
            await self.check_caller(bearer)
        else:
            raise CallbackRefused("Deliveries need a scheduler's signature.")
