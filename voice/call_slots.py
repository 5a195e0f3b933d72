"""One live call per person across every server process: a PostgreSQL advisory lock.

`CallRegistry` refuses a second call inside one process; behind a load balancer the
second call could land on another instance. A `CallSlots.hold(person_id)` takes a
session-level advisory lock keyed on the person (`hashtextextended('call:' || id)`, a key
space of its own beside the thread locks' `'thread:'`) on a connection of its own that
lives as long as the call. Another process trying the same person gets no lock and the
call is refused with the same `CallInProgress` the registry raises (4409 at a WebSocket door). If a process
dies mid-call its connection closes and PostgreSQL releases the lock: a crash never
leaves a person unable to call.

The connection is dedicated, not borrowed from the statement pool, so a long call never
holds a pool connection that turns need.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg

from voice.errors import CallInProgress

_TRY_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended('call:' || $1, 0))"
_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended('call:' || $1, 0))"
CONNECT_TIMEOUT_S = 10.0
RETRY_S = 0.1  # how often a waiting call tries the lock again

Connect = Callable[[], Awaitable[asyncpg.Connection]]


class CallSlots:
    """Claims the person's one call slot in the database for the length of a call."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect

    @classmethod
    def for_url(cls, database_url: str) -> CallSlots:
        async def connect() -> asyncpg.Connection:
            return await asyncpg.connect(database_url, timeout=CONNECT_TIMEOUT_S)

        return cls(connect)

    @contextlib.asynccontextmanager
    async def hold(self, person_id: str, *, wait_s: float = 0.0) -> AsyncIterator[None]:
        """Hold the slot while the block runs; `CallInProgress` if another process still
        holds it after `wait_s` (a call that just ended elsewhere may be letting go)."""
        conn = await self._connect()
        try:
            deadline = time.monotonic() + wait_s
            while not await conn.fetchval(_TRY_LOCK_SQL, person_id):
                if time.monotonic() >= deadline:
                    raise CallInProgress("You are already on a call.")
                await asyncio.sleep(RETRY_S)
            try:
                yield
            finally:
                await conn.execute(_UNLOCK_SQL, person_id)
        finally:
            await conn.close()  # closing alone would release the lock too; the unlock says so first
