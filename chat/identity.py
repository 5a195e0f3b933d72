"""Who is calling: signed session tokens for local sign-in, signing out, and single-use
door tickets (docs/http.md#authentication).

A `TokenVerifier` turns a bearer token into a person id. `LocalTokens` issues and checks
HMAC-SHA256 tokens bound to a person, a session id and an expiry; `Sessions` adds what a
signature alone cannot say — that the person signed that session out (a row in
`revoked_sessions`, shared by every instance). `Tickets` hands out short-lived single-use
tickets for the doors a client opens by URL, so a URL a log keeps names no session.
Verification is constant-time and says nothing about why a token failed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import asyncpg

from chat.errors import Unauthorized

_VERSION = "v2"
# Longer than any token this server issues; a longer one is refused before any work.
TOKEN_CHARS_MAX = 300
TICKET_TTL_S = 60

_REVOKED_SQL = "SELECT EXISTS (SELECT 1 FROM revoked_sessions WHERE session_id = $1)"
_REVOKE_SQL = """
INSERT INTO revoked_sessions (session_id, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING
"""
_SWEEP_REVOKED_SQL = "DELETE FROM revoked_sessions WHERE expires_at < now()"
_ISSUE_TICKET_SQL = """
INSERT INTO door_tickets (ticket_sha256, person_id, expires_at, door)
VALUES ($1, $2, now() + make_interval(secs => $3), $4)
"""
_REDEEM_TICKET_SQL = """
DELETE FROM door_tickets WHERE ticket_sha256 = $1 RETURNING person_id, expires_at > now() AS live, door
"""
_SWEEP_TICKETS_SQL = "DELETE FROM door_tickets WHERE expires_at < now()"


class TokenVerifier(Protocol):
    async def verify(self, token: str) -> str:
        """The person id the token belongs to; raises `Unauthorized` otherwise."""
        ...


class SessionReader(Protocol):
    async def session(self, token: str) -> Session:
        """The session a genuine, current token names (its `person_id` is the verifier's
        identity: our person id, or a provider's subject); raises `Unauthorized` otherwise."""
        ...


@dataclass(frozen=True, slots=True)
class Session:
    person_id: str
    session_id: str
    expires_at: int  # Unix seconds


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class LocalTokens:
    """Tokens of the form `v2.<person>.<session>.<expires>.<mac>`; the secret never leaves the server."""

    def __init__(self, secret: bytes, *, ttl_s: int) -> None:
        assert len(secret) >= 32, "the session secret must be at least 32 bytes"
        self._secret = secret
        self._ttl_s = ttl_s

    def _mac(self, body: str) -> str:
        return _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())

    def issue(self, person_id: str, *, now: float | None = None) -> str:
        expires = int((now if now is not None else time.time()) + self._ttl_s)
        body = f"{_VERSION}.{person_id}.ses_{secrets.token_hex(8)}.{expires}"
        return f"{body}.{self._mac(body)}"

    def read(self, token: str) -> Session:
        """The session a genuine, unexpired token names; raises `Unauthorized` otherwise."""
        # A token is whatever a client sent: any length, any characters (a header decoded
        # as Latin-1, a query string as UTF-8 with surrogates). Only short ASCII can be ours,
        # and the MAC is compared as bytes, so nothing here raises but `Unauthorized`.
        if len(token) > TOKEN_CHARS_MAX or not token.isascii():
            raise Unauthorized("The token is not valid.")
        parts = token.split(".")
        if len(parts) != 5 or parts[0] != _VERSION:
            raise Unauthorized("The token is not valid.")
        body = ".".join(parts[:4])
        if not hmac.compare_digest(self._mac(body).encode(), parts[4].encode()):
            raise Unauthorized("The token is not valid.")
        if not parts[3].isdigit() or int(parts[3]) < time.time():
            raise Unauthorized("The token has expired; sign in again.")
        return Session(person_id=parts[1], session_id=parts[2], expires_at=int(parts[3]))

    async def verify(self, token: str) -> str:
        return self.read(token).person_id

    async def session(self, token: str) -> Session:
        return self.read(token)


class Sessions:
    """Local tokens that can be signed out: a genuine token whose session is in
    `revoked_sessions` is refused on every instance. One primary-key lookup per request."""

    def __init__(self, tokens: SessionReader, pool: asyncpg.Pool) -> None:
        self._tokens = tokens
        self._pool = pool

    async def verify(self, token: str) -> str:
        session = await self._tokens.session(token)
        await self.check(session)
        return session.person_id

    async def check(self, session: Session) -> None:
        """Raises `Unauthorized` if this session was signed out."""
        if await self._pool.fetchval(_REVOKED_SQL, session.session_id):
            raise Unauthorized("This session was signed out; sign in again.")

    async def sign_out(self, token: str) -> None:
        """End the token's session everywhere (a token already refused is refused as such)."""
        session = await self._tokens.session(token)
        await self._pool.execute(_REVOKE_SQL, session.session_id, datetime.fromtimestamp(session.expires_at, UTC))
        await self._pool.execute(_SWEEP_REVOKED_SQL)  # rows whose token expired anyway


# Which tickets open which door: a person's ticket (`any`) opens what a client opens by URL
# (live events, the speaker socket); the phone door takes only the phone webhook's call token.
_DOORS_OPENED: dict[str, tuple[str, ...]] = {"any": ("any",), "phone": ("phone",)}


def _ticket_digest(ticket: str) -> str:
    return hashlib.sha256(ticket.encode("utf-8", "surrogatepass")).hexdigest()


class Tickets:
    """Single-use tickets, `TICKET_TTL_S` long, for opening live events or the speaker
    socket by URL; only their SHA-256 is stored, and a use deletes it."""

    def __init__(self, pool: asyncpg.Pool, *, ttl_s: float = TICKET_TTL_S) -> None:
        self._pool = pool
        self.ttl_s = ttl_s

    async def issue(self, person_id: str, *, door: str = "any") -> str:
        """A ticket for any door a client opens by URL, or (`door="phone"`) a phone call
        token the phone webhook hands Twilio, good at the phone door only."""
        ticket = f"tkt_{secrets.token_urlsafe(24)}"
        await self._pool.execute(_ISSUE_TICKET_SQL, _ticket_digest(ticket), person_id, self.ttl_s, door)
        return ticket

    async def redeem(self, ticket: str, *, door: str = "any") -> str:
        """The person the ticket was issued to, once, at a door it is good for (the phone door
        takes only phone tickets, every other door only `any` ones); raises `Unauthorized`
        otherwise (a ticket tried at the wrong door is spent all the same)."""
        if len(ticket) > TOKEN_CHARS_MAX or not ticket.startswith("tkt_"):
            raise Unauthorized("The ticket is not valid.")
        row = await self._pool.fetchrow(_REDEEM_TICKET_SQL, _ticket_digest(ticket))
        if row is None or not row["live"] or row["door"] not in _DOORS_OPENED.get(door, ()):
            raise Unauthorized("The ticket is not valid, was used, or expired; ask for another.")
        await self._pool.execute(_SWEEP_TICKETS_SQL)
        return str(row["person_id"])
