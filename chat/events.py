"""Live events per person, stored and announced through PostgreSQL.

Writers insert an `events` row in the same transaction as the change it describes; a
trigger NOTIFYs on commit. Each process keeps one LISTEN connection and wakes its local
subscribers, who then read the rows themselves. The notification carries no data, so a
missed one costs only latency: readers always catch up from their last event id, which
is also what makes `Last-Event-ID` resumption exact. Events from another process's
writes arrive the same way as this process's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

import asyncpg

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

# A plain connection or one borrowed from a pool (generic only in the stubs).
Conn: TypeAlias = "asyncpg.Connection | PoolConnectionProxy[Any]"

log = logging.getLogger(__name__)

CHANNEL = "avagenc_events"
# A wake note was delivered: Ava spoke first (or could not, and says why).
REMINDER_DELIVERED = "reminder.delivered"
_INSERT_SQL = "INSERT INTO events (person_id, type, data) VALUES ($1, $2, $3::jsonb)"
_SINCE_SQL = """
SELECT id, type, data, created_at FROM events WHERE person_id = $1 AND id > $2 ORDER BY id LIMIT $3
"""
_LATEST_SQL = "SELECT coalesce(max(id), 0) FROM events WHERE person_id = $1"
_PRUNE_SQL = "DELETE FROM events WHERE created_at < now() - make_interval(secs => $1)"


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    type: str
    data: dict[str, Any]
    created_at: datetime


async def publish(conn: Conn | asyncpg.Pool, person_id: str, type_: str, data: dict[str, Any]) -> None:
    """Record an event; call inside the transaction that made the change it reports."""
    await conn.execute(_INSERT_SQL, person_id, type_, data)


async def publish_reminder_delivered(pool: asyncpg.Pool, person_id: str, data: dict[str, Any]) -> None:
    """Tell the person's open clients a note fired; `data` is the note as the API shows it."""
    await publish(pool, person_id, REMINDER_DELIVERED, data)


class EventLog:
    """Reads a person's events in id order."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def latest_id(self, person_id: str) -> int:
        value = await self._pool.fetchval(_LATEST_SQL, person_id)
        return int(value)

    async def since(self, person_id: str, after_id: int, *, limit: int = 200) -> list[Event]:
        rows = await self._pool.fetch(_SINCE_SQL, person_id, after_id, limit)
        return [Event(r["id"], r["type"], r["data"], r["created_at"]) for r in rows]

    async def prune(self, *, older_than_s: float) -> int:
        """Forget events no client could still resume from."""
        status: str = await self._pool.execute(_PRUNE_SQL, older_than_s)
        return int(status.split()[-1])


class EventHub:
    """One LISTEN connection per process, fanning wake-ups out to local subscribers."""

    def __init__(self, dsn: str, *, reconnect_s: float = 1.0) -> None:
        self._dsn = dsn
        self._reconnect_s = reconnect_s
        self._waiters: dict[str, set[asyncio.Event]] = {}
        # Process-wide watchers: called with each notified person, and with None after a
        # (re)connect, when a notification may have been missed.
        self._watchers: list[Callable[[str | None], None]] = []
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="event-hub")
        async with asyncio.timeout(10):
            await self._ready.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def watch(self, watcher: Callable[[str | None], None]) -> None:
        """Hear every person's notifications (and None after a reconnect) on this one connection."""
        self._watchers.append(watcher)

    def _on_notify(self, _conn: Conn, _pid: int, _channel: str, payload: object) -> None:
        for waiter in self._waiters.get(str(payload), ()):
            waiter.set()
        for watcher in self._watchers:
            watcher(str(payload))

    def _wake_all(self) -> None:
        # After a reconnect a notification may have been missed: let everyone re-read.
        for waiters in self._waiters.values():
            for waiter in waiters:
                waiter.set()
        for watcher in self._watchers:
            watcher(None)

    async def _listen(self) -> None:
        while True:
            conn: asyncpg.Connection | None = None
            try:
                conn = await asyncpg.connect(self._dsn)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _conn, lost=lost: lost.set())
                await conn.add_listener(CHANNEL, self._on_notify)
                self._ready.set()
                self._wake_all()
                await lost.wait()
            except (OSError, asyncpg.PostgresError) as exc:
                log.warning("event listener lost its connection: %s", type(exc).__name__)
            finally:
                if conn is not None and not conn.is_closed():
                    await conn.close()
            await asyncio.sleep(self._reconnect_s)

    @contextlib.asynccontextmanager
    async def subscribe(self, person_id: str) -> AsyncIterator[asyncio.Event]:
        """An event that is set whenever this person's events may have changed."""
        waiter = asyncio.Event()
        self._waiters.setdefault(person_id, set()).add(waiter)
        try:
            yield waiter
        finally:
            waiters = self._waiters.get(person_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiters[person_id]

    def streams(self, person_id: str) -> int:
        return len(self._waiters.get(person_id, ()))
