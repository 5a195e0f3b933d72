"""Paired speakers: a device credential of its own instead of a person's session
(docs/http.md#devices).

A speaker asks for a pairing (`start_pairing`) and shows its short code; the signed-in
person approves that code (`approve`), which makes the device; the speaker's next poll
(`poll`) receives the device token, once. The token opens the speaker door only, names
its person and its device, and dies with the device (`revoke`): a revoked device's
token finds nothing on every instance, and the `device_revoked` notification tells every
process to end that device's live call.

Codes, poll secrets and tokens are random, short-lived where they can be, and stored only
as SHA-256 digests; a lookup by digest is one unique-index read, and a token this process
verified lately is not looked up again (chat.device_tokens: forgotten at once on a
revocation, here or on another instance).

A code's first group of four names the waiting speaker (unique among live pairings), the
whole code proves it: a wrong code whose first group names a waiting speaker counts against
that pairing, and after `wrong_codes_max` of them the pairing is burnt, so even the right
code is refused and the speaker starts again. Guessing costs the same as before (a guess
must hit both halves), but no pairing can be guessed at for long by many people or
addresses at once; each person's wrong codes are limited too (web.devices).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from chat.device_tokens import DeviceCaller, KnownDeviceTokens
from chat.errors import NotFound, PairingCodeBurnt, PairingCodeInvalid, TooManyDevices, Unauthorized
from chat.events import Conn
from chat.identity import TOKEN_CHARS_MAX

DEVICE_TOKEN_PREFIX = "dvt_"  # noqa: S105  # a prefix, not a secret
# Channel every process listens on to end a revoked device's live call; the payload is the device id.
REVOKED_CHANNEL = "device_revoked"
# A code a person reads off a speaker and types: no 0/O, 1/I/L look-alikes; 8 of 31
# characters is 8.5e11 codes against a few guesses a minute (docs/http.md#limits).
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
HEAD_LENGTH = 4  # the group that names the pairing (unique while it lives)
POLL_INTERVAL_S = 5
NAME_DEFAULT = "Speaker"

_SWEEP_PAIRINGS_SQL = "DELETE FROM device_pairings WHERE expires_at < now()"
# Any unique clash (the head, most likely) draws the code again.
_START_SQL = """
INSERT INTO device_pairings (code_sha256, head_sha256, poll_secret_sha256, name, expires_at)
VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
ON CONFLICT DO NOTHING
"""
_PENDING_SQL = """
SELECT code_sha256, name, wrong_codes FROM device_pairings
WHERE head_sha256 = $1 AND person_id IS NULL AND expires_at > now()
FOR UPDATE
"""
_WRONG_SQL = "UPDATE device_pairings SET wrong_codes = wrong_codes + 1 WHERE code_sha256 = $1"
_COUNT_DEVICES_SQL = "SELECT count(*) FROM devices WHERE person_id = $1"
_MAKE_DEVICE_SQL = """
INSERT INTO devices (id, person_id, name) VALUES ($1, $2, $3)
RETURNING id, name, created_at, last_seen_at, token_sha256 IS NOT NULL AS paired
"""
_APPROVE_SQL = "UPDATE device_pairings SET person_id = $2, device_id = $3 WHERE code_sha256 = $1"
_POLL_SQL = """
SELECT device_id, person_id, wrong_codes FROM device_pairings
WHERE poll_secret_sha256 = $1 AND expires_at > now()
FOR UPDATE
"""
_HAND_OUT_SQL = """
UPDATE devices SET token_sha256 = $2 WHERE id = $1 AND token_sha256 IS NULL
RETURNING id, name, created_at, last_seen_at, true AS paired
"""
_USED_SQL = "DELETE FROM device_pairings WHERE poll_secret_sha256 = $1"
_LIST_SQL = """
SELECT id, name, created_at, last_seen_at, token_sha256 IS NOT NULL AS paired
FROM devices WHERE person_id = $1 ORDER BY created_at, id
"""
_REVOKE_SQL = """
WITH gone AS (DELETE FROM devices WHERE id = $1 AND person_id = $2 RETURNING id)
SELECT pg_notify('device_revoked', id) FROM gone
"""
# One round trip; "last seen" is written at most once a minute, so a speaker reconnecting
# pays for a write (and its log flush) rarely, and a lookup alone otherwise.
_VERIFY_SQL = """
WITH found AS (SELECT id, person_id, last_seen_at FROM devices WHERE token_sha256 = $1),
     seen AS (
         UPDATE devices SET last_seen_at = now() FROM found
         WHERE devices.id = found.id
           AND (found.last_seen_at IS NULL OR found.last_seen_at < now() - interval '60 seconds')
         RETURNING devices.id
     )
SELECT id, person_id FROM found
"""
_PAIRED_SQL = "SELECT EXISTS (SELECT 1 FROM devices WHERE id = $1)"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def normalise_code(code: str) -> str:
    """What a person types, as it was shown: case, spaces and hyphens do not matter."""
    return "".join(c for c in code.upper() if c not in " -")


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


@dataclass(frozen=True, slots=True)
class Pairing:
    """What the speaker gets: the code to show, the secret to poll with, and for how long."""

    code: str
    poll_secret: str
    expires_in_s: int
    interval_s: int = POLL_INTERVAL_S

    @property
    def shown(self) -> str:
        """The code as a speaker shows or says it: two groups of four."""
        return f"{self.code[:4]}-{self.code[4:]}"


@dataclass(frozen=True, slots=True)
class Device:
    id: str
    name: str
    created_at: datetime
    last_seen_at: datetime | None
    paired: bool  # False until the speaker has collected its token

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> Device:
        return cls(
            id=row["id"],
            name=row["name"],
            created_at=row["created_at"],
            last_seen_at=row["last_seen_at"],
            paired=row["paired"],
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "created_at": self.created_at.isoformat(timespec="microseconds"),
            "last_seen_at": self.last_seen_at.isoformat(timespec="microseconds") if self.last_seen_at else None,
            "paired": self.paired,
        }


class Devices:
    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        pairing_ttl_s: int,
        devices_per_person_max: int,
        wrong_codes_max: int = 5,
        known: KnownDeviceTokens | None = None,
    ) -> None:
        """`known`: the tokens this process remembers (None: every use is looked up, as for
        a process that does not hear revocations)."""
        self._pool = pool
        self.known = known
        self.pairing_ttl_s = pairing_ttl_s
        self.devices_per_person_max = devices_per_person_max
        self.wrong_codes_max = wrong_codes_max

    async def start_pairing(self, name: str | None = None) -> Pairing:
        """A new pending pairing for a speaker (no one is signed in on it yet)."""
        await self._pool.execute(_SWEEP_PAIRINGS_SQL)
        poll_secret = f"dps_{secrets.token_urlsafe(24)}"
        while True:  # a first group still live elsewhere is drawn again (923,521 of them; few pairings live at once)
            code = new_code()
            status = await self._pool.execute(
                _START_SQL,
                digest(code),
                digest(code[:HEAD_LENGTH]),
                digest(poll_secret),
                name or NAME_DEFAULT,
                self.pairing_ttl_s,
            )
            if status.endswith(" 1"):
                return Pairing(code=code, poll_secret=poll_secret, expires_in_s=self.pairing_ttl_s)

    async def approve(self, person_id: str, code: str, *, name: str | None = None) -> Device:
        """Make the device a pending code names, bound to this person; raises
        `PairingCodeInvalid` for a code that is wrong, used or expired (nothing changes but
        the wrong count of the pairing its first group names), `PairingCodeBurnt` once
        that pairing took `wrong_codes_max` wrong codes, and `TooManyDevices` at the cap."""
        wanted = normalise_code(code)
        if len(wanted) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in wanted):
            raise PairingCodeInvalid("That code is not one a speaker shows: 8 letters and digits.")
        wrong, row = False, None
        async with self._pool.acquire() as conn, conn.transaction():
            pending = await conn.fetchrow(_PENDING_SQL, digest(wanted[:HEAD_LENGTH]))
            if pending is None:
                raise PairingCodeInvalid("No speaker is waiting with that code; it may have expired or been used.")
            if pending["wrong_codes"] >= self.wrong_codes_max:
                raise PairingCodeBurnt(
                    "Too many wrong codes were typed for this speaker; start pairing again on the speaker."
                )
            if not secrets.compare_digest(pending["code_sha256"], digest(wanted)):
                # Counted in this transaction, which commits; the refusal is raised after it.
                await conn.execute(_WRONG_SQL, pending["code_sha256"])
                wrong = True
            else:
                row = await self._make_device(conn, person_id, pending, name)
        if wrong:
            # Said as for a code no speaker shows: a wrong guess learns nothing about the first group.
            raise PairingCodeInvalid("No speaker is waiting with that code; it may have expired or been used.")
        assert row is not None
        return Device.from_row(row)

    async def _make_device(
        self, conn: Conn, person_id: str, pending: asyncpg.Record, name: str | None
    ) -> asyncpg.Record:
        # The count and the insert under the person's lock: simultaneous approvals
        # never pass the cap together.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('devices:' || $1, 0))", person_id)
        if await conn.fetchval(_COUNT_DEVICES_SQL, person_id) >= self.devices_per_person_max:
            raise TooManyDevices(f"At most {self.devices_per_person_max} devices; remove one before pairing another.")
        row = await conn.fetchrow(
            _MAKE_DEVICE_SQL, f"dev_{secrets.token_hex(8)}", person_id, (name or pending["name"])[:100]
        )
        assert row is not None
        await conn.execute(_APPROVE_SQL, pending["code_sha256"], person_id, row["id"])
        return row

    async def poll(self, poll_secret: str) -> tuple[Device, str] | None:
        """The device and its token, once, after the approval; None while pending. Raises
        `Unauthorized` for a secret that is wrong, used or expired."""
        if len(poll_secret) > TOKEN_CHARS_MAX or not poll_secret.startswith("dps_"):
            raise Unauthorized("The pairing is not valid.")
        async with self._pool.acquire() as conn, conn.transaction():
            pairing = await conn.fetchrow(_POLL_SQL, digest(poll_secret))
            if pairing is None:
                raise Unauthorized("The pairing is not valid, was used, or expired; start pairing again.")
            if pairing["device_id"] is None:
                if pairing["wrong_codes"] >= self.wrong_codes_max:
                    raise Unauthorized("Too many wrong codes were typed for this pairing; start pairing again.")
                return None
            token = f"{DEVICE_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"
            row = await conn.fetchrow(_HAND_OUT_SQL, pairing["device_id"], digest(token))
            await conn.execute(_USED_SQL, digest(poll_secret))
        if row is None:
            raise Unauthorized("The pairing is not valid, was used, or expired; start pairing again.")
        return Device.from_row(row), token

    async def of(self, person_id: str) -> list[Device]:
        """The person's devices, oldest first."""
        return [Device.from_row(row) for row in await self._pool.fetch(_LIST_SQL, person_id)]

    async def revoke(self, person_id: str, device_id: str) -> None:
        """Remove one of the person's devices: its token is refused from now on and every
        process ends its live call; another person's or an unknown id is `NotFound`."""
        if await self._pool.fetchrow(_REVOKE_SQL, device_id, person_id) is None:
            raise NotFound("No such device.")
        if self.known is not None:
            self.known.forget(device_id)  # before answering: its next use is looked up, and refused

    async def caller(self, token: str) -> DeviceCaller:
        """The person and device a device token names; raises `Unauthorized` otherwise."""
        if len(token) > TOKEN_CHARS_MAX or not token.startswith(DEVICE_TOKEN_PREFIX):
            raise Unauthorized("The token is not valid.")
        token_digest = digest(token)
        known = self.known
        if known is not None and (remembered := known.get(token_digest)) is not None:
            return remembered
        epoch = known.epoch if known is not None else 0
        row = await self._pool.fetchrow(_VERIFY_SQL, token_digest)
        if row is None:
            raise Unauthorized("This device is not paired; pair it again.")
        found = DeviceCaller(person_id=row["person_id"], device_id=row["id"])
        if known is not None:
            known.put(token_digest, found, epoch=epoch)
        return found

    async def paired(self, device_id: str) -> bool:
        """Whether the device still exists (a revocation missed while not listening)."""
        return bool(await self._pool.fetchval(_PAIRED_SQL, device_id))


def is_device_token(token: str) -> bool:
    return token.startswith(DEVICE_TOKEN_PREFIX)
