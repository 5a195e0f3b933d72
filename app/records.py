"""The command line's composition root: the database alone, for the verbs that only read
and write records (`migrate`, `users token`, `wallet topup|verify`).

No model, no voice engines, no LISTEN connection and no startup sweep: such a verb starts
fast and never changes what it only reads. It shares the builders with the server's root
and never imports it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg

from agents import installed_roster
from app.database import build_database, build_migrations, build_pool
from app.wallet import build_ledger
from chat import People, Runs, Wallet
from ledger import PostgresLedger
from settings import Settings


@dataclass
class Records:
    """The database alone, with the domains that only read and write it: what the CLI's
    verbs need (no model, no voice engines, no live events, no startup sweep)."""

    pool: asyncpg.Pool
    people: People
    ledger: PostgresLedger
    wallet: Wallet


@contextlib.asynccontextmanager
async def records(settings: Settings, *, migrate_first: bool) -> AsyncIterator[Records]:
    """Open the database for one command; closed (and an embedded server stopped) after."""
    async with contextlib.AsyncExitStack() as stack:
        # The room's packages decide which specialist tables `migrate` creates.
        stack.enter_context(installed_roster(settings.agent_packages))
        dsn, _ = await build_database(settings, stack)
        pool = await build_pool(dsn, stack, size_max=2)
        if migrate_first:
            await build_migrations(pool)
        ledger, wallet = build_ledger(settings, pool, Runs(pool))
        yield Records(
            pool=pool,
            people=People(pool, default_time_zone=settings.default_time_zone),
            ledger=ledger,
            wallet=wallet,
        )
