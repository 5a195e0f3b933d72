"""People: who they are, which time zone they live in and which language they speak.

Local sign-in identifies a person by their display name, normalised (case and spacing
ignored): on a single machine the name is the account, and the same name signs back in
to the same thread. Every person gets their thread row when they are created.

The language is learned from what the person writes (a message of a few words or more
that reads as Indonesian makes them Indonesian-speaking, one that reads as English makes
them English-speaking); their voice calls are then heard and answered in it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from agents import detect_language

_CREATE_LOCAL_SQL = """
WITH person AS (
    INSERT INTO people (id, name, local_key, time_zone) VALUES ($1, $2, $3, $4)
    ON CONFLICT (local_key) DO UPDATE SET local_key = EXCLUDED.local_key
    RETURNING id, name, time_zone, created_at, language, (xmax = 0) AS created
), thread AS (
    INSERT INTO threads (person_id) SELECT id FROM person WHERE created
    ON CONFLICT DO NOTHING
)
SELECT id, name, time_zone, created_at, language, created FROM person
"""
_CREATE_PROVIDED_SQL = """
WITH person AS (
    INSERT INTO people (id, name, provider_subject, time_zone) VALUES ($1, $2, $3, $4)
    ON CONFLICT (provider_subject) DO UPDATE SET provider_subject = EXCLUDED.provider_subject
    RETURNING id, name, time_zone, created_at, language, (xmax = 0) AS created
), thread AS (
    INSERT INTO threads (person_id) SELECT id FROM person WHERE created
    ON CONFLICT DO NOTHING
)
SELECT id, name, time_zone, created_at, language, created FROM person
"""
_FIND_PROVIDED_SQL = "SELECT id, name, time_zone, created_at, language FROM people WHERE provider_subject = $1"
_GET_SQL = "SELECT id, name, time_zone, created_at, language FROM people WHERE id = $1"
_FIND_LOCAL_SQL = "SELECT id, name, time_zone, created_at, language FROM people WHERE local_key = $1"
_SET_ZONE_SQL = "UPDATE people SET time_zone = $2 WHERE id = $1 AND time_zone <> $2"
_SET_LANGUAGE_SQL = "UPDATE people SET language = $2 WHERE id = $1 AND language <> $2"

NAME_CHARS_MAX = 100
# A message this short ("ok", "thanks") says too little about the language to switch it.
LANGUAGE_WORDS_MIN = 3


@dataclass(frozen=True, slots=True)
class Person:
    id: str
    name: str
    time_zone: str
    created_at: datetime
    language: str = "en"  # ISO 639-1: "en" or "id"

    def as_json(self) -> dict[str, str]:
        return {
            "id": self.id,
            "name": self.name,
            "time_zone": self.time_zone,
            "created_at": self.created_at.isoformat(),
        }


def normalise_name(name: str) -> str:
    return " ".join(name.split()).casefold()


def language_learned(text: str, current: str) -> str | None:
    """The person's language after they wrote `text`, when it changes; else None."""
    if len(text.split()) < LANGUAGE_WORDS_MIN:
        return None
    language = detect_language(text)
    return language if language != current else None


def _person(row: asyncpg.Record) -> Person:
    return Person(row["id"], row["name"], row["time_zone"], row["created_at"], row["language"])


class People:
    def __init__(self, pool: asyncpg.Pool, *, default_time_zone: str) -> None:
        self._pool = pool
        self._default_time_zone = default_time_zone

    async def sign_in_local(self, name: str) -> tuple[Person, bool]:
        """The person with this display name, created on first sign-in; and whether new."""
        clean = " ".join(name.split())
        row = await self._pool.fetchrow(
            _CREATE_LOCAL_SQL, f"usr_{secrets.token_hex(8)}", clean, normalise_name(clean), self._default_time_zone
        )
        assert row is not None
        return _person(row), bool(row["created"])

    async def sign_in_provided(self, subject: str, name: str) -> tuple[Person, bool]:
        """The person an identity provider's subject (a Firebase uid) names, created the
        first time it is seen; and whether new. The subject, never the name, is the account."""
        # Every request names its person this way: a read, and the upsert only the first time.
        found = await self._pool.fetchrow(_FIND_PROVIDED_SQL, subject)
        if found is not None:
            return _person(found), False
        clean = " ".join(name.split())[:NAME_CHARS_MAX] or "Friend"
        row = await self._pool.fetchrow(
            _CREATE_PROVIDED_SQL, f"usr_{secrets.token_hex(8)}", clean, subject, self._default_time_zone
        )
        assert row is not None
        return _person(row), bool(row["created"])

    async def find_local(self, name: str) -> Person | None:
        """The person who signs in locally with this name, if any."""
        row = await self._pool.fetchrow(_FIND_LOCAL_SQL, normalise_name(name))
        return _person(row) if row else None

    async def get(self, person_id: str) -> Person | None:
        row = await self._pool.fetchrow(_GET_SQL, person_id)
        return _person(row) if row else None

    async def remember_time_zone(self, person_id: str, time_zone: str) -> None:
        """Keep the zone the person's device last reported, for doors that carry none."""
        await self._pool.execute(_SET_ZONE_SQL, person_id, time_zone)

    async def learn_language(self, person: Person, text: str) -> None:
        """Keep the language the person writes in (no database work unless it changed)."""
        language = language_learned(text, person.language)
        if language is not None:
            await self._pool.execute(_SET_LANGUAGE_SQL, person.id, language)
