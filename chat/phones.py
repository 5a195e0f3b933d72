"""Verified phone callers: the numbers a person has proved are theirs, so a call from one
is recognised without any token (docs/http.md#phones).

A person adds a number (`add`); a one-time code goes to it through the `PhoneVerifier`
port; the code coming back (`verify`) makes the number theirs. A verified number belongs to
one person only; the phone webhook asks `person_for` who is calling. A code lives
`code_ttl_s`, is stored only as a digest, and is burnt after `wrong_codes_max` wrong
tries: the person asks for another (counted by the edge's limits).

`LoggedPhoneCodes` is the port's offline twin, the product's default without Twilio: it
writes the code to the server's log, where an operator on their own machine (and the
tests) read it. `TwilioSms` (chat.twilio_sms) sends it as a text message.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import asyncpg

from chat.errors import NotFound, PhoneCodeInvalid, PhoneNumberInvalid, PhoneTaken, TooManyPhones

log = logging.getLogger(__name__)

# E.164: a plus, a country code that does not start with 0, at most 15 digits in all.
E164 = re.compile(r"\+[1-9][0-9]{6,14}")
CODE_DIGITS = 6

_FIND_SQL = """
SELECT id, number, verified_at, created_at, person_id FROM phone_numbers WHERE person_id = $1 AND number = $2
"""
_TAKEN_SQL = """
SELECT EXISTS (SELECT 1 FROM phone_numbers WHERE number = $1 AND verified_at IS NOT NULL AND person_id <> $2)
"""
_COUNT_SQL = "SELECT count(*) FROM phone_numbers WHERE person_id = $1"
_ADD_SQL = """
INSERT INTO phone_numbers (id, person_id, number) VALUES ($1, $2, $3)
ON CONFLICT (person_id, number) DO NOTHING
"""
_SET_CODE_SQL = """
UPDATE phone_numbers
SET code_sha256 = $2, code_expires_at = now() + make_interval(secs => $3), wrong_codes = 0
WHERE id = $1
RETURNING id, number, verified_at, created_at
"""
_PENDING_SQL = """
SELECT id, code_sha256, code_expires_at > now() AS live, wrong_codes, verified_at
FROM phone_numbers WHERE id = $1 AND person_id = $2
FOR UPDATE
"""
_WRONG_SQL = """
UPDATE phone_numbers
SET wrong_codes = wrong_codes + 1,
    code_sha256 = CASE WHEN wrong_codes + 1 >= $2 THEN NULL ELSE code_sha256 END
WHERE id = $1
RETURNING wrong_codes
"""
_VERIFIED_SQL = """
UPDATE phone_numbers SET verified_at = now(), code_sha256 = NULL, code_expires_at = NULL, wrong_codes = 0
WHERE id = $1
RETURNING id, number, verified_at, created_at
"""
_LIST_SQL = """
SELECT id, number, verified_at, created_at FROM phone_numbers WHERE person_id = $1 ORDER BY created_at, id
"""
_REMOVE_SQL = "DELETE FROM phone_numbers WHERE id = $1 AND person_id = $2 RETURNING id"
_SEEN_CALL_SQL = "INSERT INTO phone_calls_seen (call_sid) VALUES ($1) ON CONFLICT DO NOTHING"
_SWEEP_CALLS_SQL = "DELETE FROM phone_calls_seen WHERE seen_at < now() - interval '1 day'"
_CALLER_SQL = "SELECT person_id FROM phone_numbers WHERE number = $1 AND verified_at IS NOT NULL"


class PhoneVerifier(Protocol):
    async def send_code(self, number: str, code: str) -> None:
        """Deliver a one-time code to `number`; raises on a delivery that surely failed."""
        ...


class LoggedPhoneCodes:
    """The offline twin: the code goes to the server's log (logger `chat.phones.codes`),
    which is this machine's only "phone". Never the default where Twilio is configured."""

    logger = logging.getLogger("chat.phones.codes")

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    async def send_code(self, number: str, code: str) -> None:
        self.sent.append((number, code))
        self.logger.warning("phone verification code for %s: %s", number, code)


@dataclass(frozen=True, slots=True)
class PhoneNumber:
    id: str
    number: str
    verified_at: datetime | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> PhoneNumber:
        return cls(id=row["id"], number=row["number"], verified_at=row["verified_at"], created_at=row["created_at"])

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "number": self.number,
            "verified": self.verified_at is not None,
            "verified_at": self.verified_at.isoformat(timespec="microseconds") if self.verified_at else None,
            "created_at": self.created_at.isoformat(timespec="microseconds"),
        }


def normalise_number(number: str) -> str:
    """A number as E.164, spaces, dots, hyphens and brackets dropped; raises `PhoneNumberInvalid`."""
    compact = re.sub(r"[\s().-]", "", number)
    if not E164.fullmatch(compact):
        raise PhoneNumberInvalid("Give the number in international form, e.g. +62 812 3456 7890.")
    return compact


def _code_digest(phone_id: str, code: str) -> str:
    return hashlib.sha256(f"{phone_id}:{code}".encode()).hexdigest()


class Phones:
    def __init__(
        self,
        pool: asyncpg.Pool,
        verifier: PhoneVerifier,
        *,
        code_ttl_s: int,
        wrong_codes_max: int,
        phones_per_person_max: int,
    ) -> None:
        self._pool = pool
        self._verifier = verifier
        self.code_ttl_s = code_ttl_s
        self.wrong_codes_max = wrong_codes_max
        self.phones_per_person_max = phones_per_person_max

    async def add(self, person_id: str, number: str) -> PhoneNumber:
        """Add a number (or ask for a fresh code for one not yet verified) and send it a
        code; a number already verified by this person is answered as it is."""
        number = normalise_number(number)
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('phones:' || $1, 0))", person_id)
            if await conn.fetchval(_TAKEN_SQL, number, person_id):
                raise PhoneTaken("That number is verified on another account.")
            found = await conn.fetchrow(_FIND_SQL, person_id, number)
            if found is not None and found["verified_at"] is not None:
                return PhoneNumber.from_row(found)
            if found is None:
                if await conn.fetchval(_COUNT_SQL, person_id) >= self.phones_per_person_max:
                    raise TooManyPhones(f"At most {self.phones_per_person_max} numbers; remove one first.")
                await conn.execute(_ADD_SQL, f"phn_{secrets.token_hex(8)}", person_id, number)
                found = await conn.fetchrow(_FIND_SQL, person_id, number)
                assert found is not None
            code = "".join(secrets.choice("0123456789") for _ in range(CODE_DIGITS))
            row = await conn.fetchrow(_SET_CODE_SQL, found["id"], _code_digest(found["id"], code), self.code_ttl_s)
            assert row is not None
        # Sent once the code is stored: a code that arrives always works.
        await self._verifier.send_code(number, code)
        return PhoneNumber.from_row(row)

    async def verify(self, person_id: str, phone_id: str, code: str) -> PhoneNumber:
        """The number is the person's once its code comes back; raises `PhoneCodeInvalid`
        for a wrong, expired, used or burnt code, `NotFound` for another's or no number."""
        async with self._pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(_PENDING_SQL, phone_id, person_id)
            if row is None:
                raise NotFound("No such number.")
            if row["code_sha256"] is None or not row["live"]:
                raise PhoneCodeInvalid("That code has expired or was used up; ask for a new one.")
            wrong: int | None = None
            if not secrets.compare_digest(row["code_sha256"], _code_digest(phone_id, code.strip())):
                # Counted in this transaction, which commits: the refusal is raised after it.
                wrong = await conn.fetchval(_WRONG_SQL, phone_id, self.wrong_codes_max)
            else:
                try:
                    verified = await conn.fetchrow(_VERIFIED_SQL, phone_id)
                except asyncpg.UniqueViolationError as exc:
                    raise PhoneTaken("That number is verified on another account.") from exc
        if wrong is not None:
            left = self.wrong_codes_max - wrong
            raise PhoneCodeInvalid(
                f"That code is wrong; {left} tries left." if left > 0 else "Too many wrong codes; ask for a new one."
            )
        assert verified is not None
        return PhoneNumber.from_row(verified)

    async def of(self, person_id: str) -> list[PhoneNumber]:
        return [PhoneNumber.from_row(row) for row in await self._pool.fetch(_LIST_SQL, person_id)]

    async def remove(self, person_id: str, phone_id: str) -> None:
        if await self._pool.fetchval(_REMOVE_SQL, phone_id, person_id) is None:
            raise NotFound("No such number.")

    async def person_for(self, number: str) -> str | None:
        """The person a verified number belongs to; None for any other caller."""
        try:
            number = normalise_number(number)
        except PhoneNumberInvalid:
            return None
        found: str | None = await self._pool.fetchval(_CALLER_SQL, number)
        return found

    async def first_call(self, call_sid: str) -> bool:
        """Whether this is the first webhook request for the call `call_sid` (a replayed
        signed request is not: Twilio's signature carries no nonce)."""
        if not call_sid or len(call_sid) > 64:
            return False
        status = await self._pool.execute(_SEEN_CALL_SQL, call_sid)
        await self._pool.execute(_SWEEP_CALLS_SQL)
        return status.endswith(" 1")
