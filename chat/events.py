"""Live events per person, stored and announced through PostgreSQL.

Writers insert an `events` row in the same transaction as the change it describes; a
trigger NOTIFYs on commit. The process's one LISTEN connection (the root passes it in,
through the `Watch` protocol) tells the hub, which wakes its local subscribers, who then
read the rows themselves. The notification carries no data, so a missed one costs only
latency: readers always catch up from their last event id, which is also what makes
`Last-Event-ID` resumption exact. Events from another process's writes arrive the same
way as this process's own.

A person's streams (up to five) are woken together and usually stand at the same event id,
so the hub lets them share one read (`EventHub.read`): one query per notification and
person rather than one per stream, which under load was as many round trips as the turns
themselves (BENCHMARKS.md, issue 24's load section).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import asyncpg

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

# A plain connection or one borrowed from a pool (generic only in the stubs).
Conn: TypeAlias = "asyncpg.Connection | PoolConnectionProxy[Any]"

CHANNEL = "avagenc_events"
# A wake note was delivered: Ava spoke first (or could not, and says why).
REMINDER_DELIVERED = "reminder.delivered"
# Events one read returns at most; a stream keeps reading while pages come back full.
EVENTS_PAGE = 200
_INSERT_SQL = "INSERT INTO events (person_id, type, data) VALUES ($1, $2, $3::jsonb)"
_SINCE_SQL = """
SELECT id, type, data, created_at FROM events WHERE person_id = $1 AND id > $2 ORDER BY id LIMIT $3
"""
_LATEST_SQL = "SELECT coalesce(max(id), 0) FROM events WHERE person_id = $1"
_PRUNE_SQL = "DELETE FROM events WHERE created_at < now() - make_interval(secs => $1)"


def json_time(at: datetime) -> str:
    """A time as every event and API body writes it: UTC, always six decimals."""
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def sql_json_time(column: str) -> str:
    """The SQL expression writing `column` (a TIMESTAMPTZ) exactly as `json_time` does, for
    statements that build an event's data in the database (one round trip, not three)."""
    return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')"""


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

    async def since(self, person_id: str, after_id: int, *, limit: int = EVENTS_PAGE) -> list[Event]:
        rows = await self._pool.fetch(_SINCE_SQL, person_id, after_id, limit)
        return [Event(r["id"], r["type"], r["data"], r["created_at"]) for r in rows]

    async def prune(self, *, older_than_s: float) -> int:
        """Forget events no client could still resume from."""
        status: str = await self._pool.execute(_PRUNE_SQL, older_than_s)
        return int(status.split()[-1])


class Watch(Protocol):
    """What the hub needs of the process's LISTEN connection (the root passes `database.Listener`):
    `callback` hears each payload on `channel`, and None whenever listening (re)starts."""

    def watch(self, channel: str, callback: Callable[[str | None], None]) -> None: ...


class EventHub:
    """Fans the notifications of the process's one LISTEN connection out to local subscribers."""

    def __init__(self, listener: Watch) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}
        # Process-wide watchers: called with each notified person, and with None after a
        # (re)connect, when a notification may have been missed.
        self._watchers: list[Callable[[str | None], None]] = []
        # Reads in flight that a stream may still join: person -> event id read after -> the
        # read. A notification for the person drops them (see `read`); bounded by the reads
        # in flight, each removed when it ends.
        self._reading: dict[str, dict[int, asyncio.Future[list[Event]]]] = {}
        listener.watch(CHANNEL, self._heard)

    def watch(self, watcher: Callable[[str | None], None]) -> None:
        """Hear every person's notifications (and None after a reconnect) on the one connection."""
        self._watchers.append(watcher)

    def _heard(self, person_id: str | None) -> None:
        # A read that started before this notification may miss what it announces: later
        # readers start their own.
        if person_id is None:
            self._reading.clear()
        else:
            self._reading.pop(person_id, None)
        if person_id is None:
            # After a (re)connect a notification may have been missed: let everyone re-read.
            for waiters in self._waiters.values():
                for waiter in waiters:
                    waiter.set()
        else:
            for waiter in self._waiters.get(person_id, ()):
                waiter.set()
        for watcher in self._watchers:
            watcher(person_id)

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

    async def read(self, log: EventLog, person_id: str, after_id: int) -> list[Event]:
        """The person's events after `after_id`, as `log.since` reads them, sharing a read
        already in flight for the same person and id when no notification for the person
        has arrived since it started.

        Why that is exact: the caller cleared its wake-up before calling. An event the
        shared read cannot see was committed after the read started, so its notification
        comes after that too: if it had come before the caller's call, the read would no
        longer be shared (`_heard` drops it); if after, it wakes the caller, who reads again."""
        reading = self._reading.setdefault(person_id, {})
        shared = reading.get(after_id)
        if shared is None:
            shared = asyncio.ensure_future(log.since(person_id, after_id))
            reading[after_id] = shared
            shared.add_done_callback(functools.partial(self._read_ended, person_id, after_id))
        # A caller that goes away (its client left) does not cancel the others' read.
        return await asyncio.shield(shared)

    def _read_ended(self, person_id: str, after_id: int, read: asyncio.Future[list[Event]]) -> None:
        reading = self._reading.get(person_id)
        if reading is not None and reading.get(after_id) is read:
            del reading[after_id]
            if not reading:
                del self._reading[person_id]
        if not read.cancelled():
            read.exception()  # every caller may have gone: the failure is theirs, not the loop's to log

    def streams(self, person_id: str) -> int:
        return len(self._waiters.get(person_id, ()))
