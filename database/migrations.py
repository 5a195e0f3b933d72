"""Applies each domain's `sql/NNNN_name.sql` files in order, once, and records them.

Domains own their schema as plain SQL files. The runner walks the domains from the ones
nothing depends on upwards, so a later domain's tables may reference an earlier one's.
Each file runs in its own transaction, under an advisory lock so two processes starting
together do not race. A recorded file whose text changed is an error, not a silent skip.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import asyncpg

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

# Lower domains first: ledger and reminders depend on nothing; agents on them; chat on all.
MIGRATION_SOURCES: tuple[str, ...] = ("ledger", "reminders", "agents", "chat")


def migration_sources(packages: Sequence[str]) -> tuple[str, ...]:
    """The domains' migrations with those of these specialist packages (the ones with a
    `sql/` folder), after the agents' and before the chat's."""
    return ("ledger", "reminders", "agents", *packages, "chat")


_LOCK_KEY = 0x61766167  # "avag": one fixed key for the migration lock

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    domain      TEXT NOT NULL,
    name        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (domain, name)
)
"""


class MigrationChanged(Exception):
    """A migration that already ran was edited afterwards."""


@dataclass(frozen=True, slots=True)
class Migration:
    domain: str
    name: str
    sql: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def discover(domains: tuple[str, ...] = MIGRATION_SOURCES) -> list[Migration]:
    found: list[Migration] = []
    for domain in domains:
        folder = resources.files(domain).joinpath("sql")
        if not folder.is_dir():
            continue
        files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
        found.extend(Migration(domain, f.name, f.read_text(encoding="utf-8")) for f in files)
    return found


async def apply_migrations(
    conn: asyncpg.Connection | PoolConnectionProxy[Any], *, sources: tuple[str, ...] = MIGRATION_SOURCES
) -> list[str]:
    """Apply what has not run yet; return the names applied."""
    applied: list[str] = []
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(_CREATE_TABLE)
        rows = await conn.fetch("SELECT domain, name, sha256 FROM schema_migrations")
        done = {(r["domain"], r["name"]): r["sha256"] for r in rows}
        for migration in discover(sources):
            key = (migration.domain, migration.name)
            if key in done:
                if done[key] != migration.sha256:
                    raise MigrationChanged(f"{migration.domain}/{migration.name} changed after it ran")
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (domain, name, sha256) VALUES ($1, $2, $3)",
                    migration.domain,
                    migration.name,
                    migration.sha256,
                )
            applied.append(f"{migration.domain}/{migration.name}")
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    return applied
