"""Linking a person to their real accounts (docs/agents.md#linking): signed OAuth state, refresh
tokens sealed at rest, and the store of links.

- The OAuth `state` is `<integration>.<expiry>.<nonce>.<mac>`, the MAC an HMAC-SHA256
  over (integration, person, expiry, nonce) under a server key. It expires after 15
  minutes and is bound to the person and the integration, so a state minted for one
  person (or for Spotify) cannot complete another person's (or Google's) link: the
  classic OAuth login-CSRF hole stays closed without any server-side session.
- Refresh tokens are sealed with Fernet (AES-128-CBC with HMAC-SHA256) under a key from
  settings before they reach PostgreSQL; the database never holds one in plaintext.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg
from cryptography.fernet import Fernet, InvalidToken

from agents.errors import AgentError

STATE_TTL = timedelta(minutes=15)


class LinkError(AgentError):
    """Linking failed in a way the person can fix or should know about. Like every domain
    error it carries only its stable `type`; the HTTP edge's one table picks the status."""

    type = "link_error"


class IntegrationUnknown(LinkError):
    type = "integration_unknown"


class LinkStateInvalid(LinkError):
    type = "link_state_invalid"


class LinkingUnavailable(LinkError):
    type = "linking_unavailable"


class LinkRejected(LinkError):
    type = "link_rejected"


class ProviderUnavailable(LinkError):
    type = "provider_unavailable"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class StateSigner:
    def __init__(self, key: bytes) -> None:
        assert len(key) >= 32, "the state key must be at least 256 bits"
        self._key = key

    def _mac(self, integration: str, person_id: str, expiry: int, nonce: str) -> str:
        message = "\0".join((integration, person_id, str(expiry), nonce)).encode()
        return _b64(hmac.new(self._key, message, hashlib.sha256).digest())

    def issue(self, *, person_id: str, integration: str, now: datetime) -> str:
        expiry = int((now + STATE_TTL).timestamp())
        nonce = secrets.token_urlsafe(12)
        return f"{integration}.{expiry}.{nonce}.{self._mac(integration, person_id, expiry, nonce)}"

    def verify(self, state: str, *, person_id: str, integration: str, now: datetime) -> None:
        parts = state.split(".")
        if len(state) > 200 or len(parts) != 4 or not parts[1].isdigit():
            raise LinkStateInvalid("The link state is malformed.")
        name, expiry_text, nonce, mac = parts
        expiry = int(expiry_text)
        expected = self._mac(integration, person_id, expiry, nonce)
        # The MAC first (constant time): a forged state learns nothing from which check failed.
        if not hmac.compare_digest(mac.encode(), expected.encode()) or name != integration:
            raise LinkStateInvalid("The link state was not issued to you for this integration.")
        if expiry < now.timestamp():
            raise LinkStateInvalid("The link request expired (they last 15 minutes); start linking again.")


class TokenCipher:
    """Seals refresh tokens for the database and opens them again."""

    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @staticmethod
    def new_key() -> bytes:
        return Fernet.generate_key()

    def seal(self, token: str) -> bytes:
        return self._fernet.encrypt(token.encode())

    def open(self, sealed: bytes) -> str | None:
        """The token, or None when it was sealed under another key (a rotated key means re-linking)."""
        try:
            return self._fernet.decrypt(sealed).decode()
        except InvalidToken:
            return None


@dataclass(frozen=True, slots=True)
class Link:
    integration: str
    refresh_token: str | None
    account_id: str | None
    scopes: str
    linked_at: datetime


_UPSERT_SQL = """
INSERT INTO integration_links (person_id, integration, refresh_token_sealed, account_id, scopes)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (person_id, integration) DO UPDATE
SET refresh_token_sealed = EXCLUDED.refresh_token_sealed, account_id = EXCLUDED.account_id,
    scopes = EXCLUDED.scopes, linked_at = now()
"""
_COLUMNS = "integration, refresh_token_sealed, account_id, scopes, linked_at"
_GET_SQL = f"SELECT {_COLUMNS} FROM integration_links WHERE person_id = $1 AND integration = $2"
_ALL_SQL = f"SELECT {_COLUMNS} FROM integration_links WHERE person_id = $1"
_DELETE_SQL = f"DELETE FROM integration_links WHERE person_id = $1 AND integration = $2 RETURNING {_COLUMNS}"
_EXISTS_SQL = "SELECT EXISTS (SELECT 1 FROM integration_links WHERE person_id = $1 AND integration = $2)"
_ROTATE_SQL = """
UPDATE integration_links SET refresh_token_sealed = $3 WHERE person_id = $1 AND integration = $2
"""


class Links:
    """The links store: sealed on the way in, opened on the way out."""

    def __init__(self, pool: asyncpg.Pool, cipher: TokenCipher) -> None:
        self._pool = pool
        self._cipher = cipher

    def _link(self, row: asyncpg.Record) -> Link:
        sealed = row["refresh_token_sealed"]
        token = self._cipher.open(bytes(sealed)) if sealed is not None else None
        return Link(row["integration"], token, row["account_id"], row["scopes"], row["linked_at"])

    async def save(
        self, *, person_id: str, integration: str, refresh_token: str | None, account_id: str | None, scopes: str = ""
    ) -> None:
        assert (refresh_token is None) != (account_id is None)
        sealed = self._cipher.seal(refresh_token) if refresh_token is not None else None
        await self._pool.execute(_UPSERT_SQL, person_id, integration, sealed, account_id, scopes)

    async def rotate(self, *, person_id: str, integration: str, refresh_token: str) -> None:
        """A provider handed out a new refresh token with an access token (Spotify may)."""
        await self._pool.execute(_ROTATE_SQL, person_id, integration, self._cipher.seal(refresh_token))

    async def get(self, *, person_id: str, integration: str) -> Link | None:
        row = await self._pool.fetchrow(_GET_SQL, person_id, integration)
        return self._link(row) if row is not None else None

    async def all(self, *, person_id: str) -> dict[str, Link]:
        return {r["integration"]: self._link(r) for r in await self._pool.fetch(_ALL_SQL, person_id)}

    async def delete(self, *, person_id: str, integration: str) -> Link | None:
        row = await self._pool.fetchrow(_DELETE_SQL, person_id, integration)
        return self._link(row) if row is not None else None

    async def is_linked(self, person_id: str, integration: str) -> bool:
        return bool(await self._pool.fetchval(_EXISTS_SQL, person_id, integration))
