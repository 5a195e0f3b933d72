"""The migration runner against a real PostgreSQL."""

from __future__ import annotations

import asyncpg
import pytest

from database import apply_migrations
from database.migrations import MigrationChanged, discover


async def test_every_migration_is_recorded_and_a_second_run_applies_nothing(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        assert await apply_migrations(conn) == []
        recorded = await conn.fetch("SELECT domain, name FROM schema_migrations ORDER BY domain, name")
    assert {(r["domain"], r["name"]) for r in recorded} == {(m.domain, m.name) for m in discover()}


async def test_an_edited_migration_is_refused(pool: asyncpg.Pool) -> None:
    first = discover()[0]
    async with pool.acquire() as conn:
        await conn.execute(
            "UPDATE schema_migrations SET sha256 = 'edited' WHERE domain = $1 AND name = $2", first.domain, first.name
        )
        with pytest.raises(MigrationChanged):
            await apply_migrations(conn)


async def test_the_schema_refuses_impossible_rows(pool: asyncpg.Pool) -> None:
    await pool.execute("INSERT INTO people (id, name, time_zone) VALUES ('usr_a', 'A', 'UTC')")
    await pool.execute("INSERT INTO threads (person_id) VALUES ('usr_a')")
    insert = "INSERT INTO messages (id, person_id, seq, author, text, channel) VALUES ('m', 'usr_a', 1, $1, $2, 'text')"
    with pytest.raises(asyncpg.CheckViolationError):
        await pool.execute(insert, "zee", "an agent message without a run")
    with pytest.raises(asyncpg.CheckViolationError):
        await pool.execute(insert, "human", "")
