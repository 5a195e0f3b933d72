"""The thread: one per person, the agents' shared record of what was said (docs/data.md#one-thread-per-person).

Appending a message takes the next `seq` from the thread row and records a `message`
event in the same transaction. `turn()` serialises whole turns for one person across
requests and server processes with a PostgreSQL advisory lock held on a dedicated
connection; waiters queue in arrival order and different people never wait on each
other. Lock connections come from their own small pool, never from the pool the turn's
statements use: a turn holds its lock connection while it borrows others, so sharing one
pool would deadlock as soon as every connection held a lock. The lock pool's size is
also this process's cap on concurrent turns.

The lock's connection does more than hold the lock: `hold` (given by the composition root)
lends it to the turn's own statements, so a turn runs on the one connection it already
holds instead of checking one out per statement (see database.pool.TurnPool).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg

from chat.errors import ThreadBusy
from chat.events import Conn, json_time, sql_json_time
from chat.recent import RecentPage, RecentPages

_COLUMNS = "id, seq, author, text, channel, run_id, emotions, client_id, created_at"
# One statement, so one round trip and its own transaction: the thread's next seq, the
# message, and its `message` event (the data `Message.as_json` gives, built here from the
# row). Nothing is written for a person without a thread (no row comes back).
_APPEND_SQL = f"""
WITH next AS (
    UPDATE threads SET last_seq = last_seq + 1 WHERE person_id = $2 RETURNING last_seq
), written AS (
    INSERT INTO messages (id, person_id, seq, author, text, channel, run_id, emotions, client_id)
    SELECT $1, $2, last_seq, $3, $4, $5, $6, $7, $8 FROM next
    RETURNING {_COLUMNS}
), announced AS (
    INSERT INTO events (person_id, type, data)
    SELECT $2, 'message', jsonb_build_object(
        'id', id, 'seq', seq, 'author', author, 'text', text, 'created_at', {sql_json_time("created_at")},
        'channel', channel, 'run_id', run_id, 'emotions', to_jsonb(emotions))
    FROM written
)
SELECT {_COLUMNS} FROM written
"""
_PAGE_BEFORE_SQL = f"""
SELECT {_COLUMNS} FROM messages WHERE person_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3
"""
_PAGE_AFTER_SQL = f"""
SELECT {_COLUMNS} FROM messages WHERE person_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
"""
_BY_IDS_SQL = f"SELECT {_COLUMNS} FROM messages WHERE person_id = $1 AND id = ANY($2::text[]) ORDER BY seq"
_BY_CLIENT_SQL = f"SELECT {_COLUMNS} FROM messages WHERE person_id = $1 AND client_id = $2"
_OF_RUNS_SQL = f"""
SELECT {_COLUMNS} FROM messages WHERE person_id = $1 AND (id = $2 OR run_id = ANY($3::text[])) ORDER BY seq
"""
_LOCK_SQL = "SELECT pg_advisory_lock(hashtextextended('thread:' || $1, 0))"
_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended('thread:' || $1, 0))"
_TRY_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended('thread:' || $1, 0))"
_LAZY_COMMITS_SQL = "SET synchronous_commit = off"


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    seq: int
    author: str
    text: str
    channel: str
    run_id: str | None
    created_at: datetime
    emotions: tuple[str, ...] = field(default=())
    client_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "seq": self.seq,
            "author": self.author,
            "text": self.text,
            "created_at": json_time(self.created_at),
            "channel": self.channel,
            "run_id": self.run_id,
            "emotions": list(self.emotions),
        }


def _message(row: asyncpg.Record) -> Message:
    return Message(
        id=row["id"],
        seq=row["seq"],
        author=row["author"],
        text=row["text"],
        channel=row["channel"],
        run_id=row["run_id"],
        created_at=row["created_at"],
        emotions=tuple(row["emotions"]),
        client_id=row["client_id"],
    )


class Threads:
    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        lock_pool: asyncpg.Pool | None = None,
        hold: Callable[[Conn], AbstractAsyncContextManager[None]] | None = None,
    ) -> None:
        self._pool = pool
        self._lock_pool = lock_pool or pool
        # Lends the lock's connection to the turn's statements while the turn runs.
        self._hold = hold
        # Turns of this process per person, waiting or running, and who hears a person's
        # last one end (background work that must not compete with a reply: learning).
        self._turning: Counter[str] = Counter()
        self._idle_listeners: list[Callable[[str], None]] = []
        # Each person's newest page, for their next turn (chat.recent).
        self._recent: RecentPages[Message] = RecentPages()

    def busy(self, person_id: str) -> bool:
        """True while a turn of this process waits for or holds the person's thread."""
        return self._turning[person_id] > 0

    def alone(self, person_id: str) -> bool:
        """True when the caller's turn is this process's only one for the person: with the
        thread held, a run of theirs still `running` is then nobody's (cut off by an outage
        or a crash), since a turn that lost the lock with its connection still counts here
        until it has finished its books."""
        return self._turning.get(person_id, 0) == 1

    def on_idle(self, listener: Callable[[str], None]) -> None:
        """Call `listener(person_id)` whenever the last turn of this process for a person ends."""
        self._idle_listeners.append(listener)

    async def append(
        self,
        person_id: str,
        *,
        author: str,
        text: str,
        channel: str,
        run_id: str | None = None,
        emotions: Sequence[str] = (),
        client_id: str | None = None,
    ) -> Message:
        row = await self._pool.fetchrow(
            _APPEND_SQL,
            f"msg_{secrets.token_hex(10)}",
            person_id,
            author,
            text,
            channel,
            run_id,
            list(emotions),
            client_id,
        )
        assert row is not None, f"person {person_id} has no thread"
        message = _message(row)
        self._recent.wrote(person_id, message)
        return message

    async def page(self, person_id: str, *, before: int | None, after: int | None, limit: int) -> list[Message]:
        """Messages in seq order: the newest `limit` before `before`, or the oldest after `after`."""
        if after is not None:
            rows = await self._pool.fetch(_PAGE_AFTER_SQL, person_id, after, limit)
            return [_message(r) for r in rows]
        rows = await self._pool.fetch(_PAGE_BEFORE_SQL, person_id, before or 2**62, limit)
        return [_message(r) for r in reversed(rows)]

    async def recent(self, person_id: str, *, limit: int) -> RecentPage[Message]:
        """The newest `limit` messages, from the page kept since the person's last turn
        here plus what follows it (one statement either way; see chat.recent)."""
        kept = self._recent.get(person_id, limit=limit)
        if kept is not None and kept.messages:
            newest = kept.messages[-1]
            after = await self.page(person_id, before=None, after=newest.seq - 1, limit=limit)
            if after and after[0].id == newest.id and len(after) < limit:
                # A write of this process that landed meanwhile has joined the page already.
                last = kept.messages[-1].seq
                kept.extend(m for m in after[1:] if m.seq > last)
                return self._recent.keep(person_id, kept)
        messages = await self.page(person_id, before=None, after=None, limit=limit)
        return self._recent.keep(person_id, RecentPage(messages, limit))

    def forgotten(self, person_id: str) -> None:
        """The person's thread was erased: drop what this process kept of it."""
        self._recent.drop(person_id)

    async def by_ids(self, person_id: str, ids: Sequence[str]) -> list[Message]:
        rows = await self._pool.fetch(_BY_IDS_SQL, person_id, list(ids))
        return [_message(r) for r in rows]

    async def by_client_id(self, person_id: str, client_id: str) -> Message | None:
        row = await self._pool.fetchrow(_BY_CLIENT_SQL, person_id, client_id)
        return _message(row) if row else None

    async def of_turn(self, person_id: str, origin_id: str, run_ids: Sequence[str]) -> list[Message]:
        """The message that started a turn and every message its runs wrote."""
        rows = await self._pool.fetch(_OF_RUNS_SQL, person_id, origin_id, list(run_ids))
        return [_message(r) for r in rows]

    async def commit_lazily(self) -> None:
        """Inside `turn`: the turn's statements run on the lock's connection, and from now
        on its commits return without waiting for the write-ahead log to reach the disk.

        Why: a commit that waits for the disk costs 1-2 ms here and, when the disk stalls,
        tens to hundreds; a home request commits five times between the person's words and
        Ava's reply. Nothing is lost that was not at risk anyway: the log is one ordered
        stream, so the turn's next commit that does wait (its bookkeeping's, on a
        connection of its own, which the turn waits for before it ends) makes every earlier
        one durable too, and a crash before that keeps a prefix of the turn's writes, never
        a later write without an earlier one. One write is the exception: a run's start
        commits durably (chat.runs), since its model calls are kept outside the log (the
        outbox) and must never outlive their run. The setting lives on the lock's connection
        and is reset when the connection goes back to its pool (asyncpg's RESET ALL)."""
        await self._pool.execute(_LAZY_COMMITS_SQL)

    @asynccontextmanager
    async def turn(self, person_id: str, *, wait_s: float) -> AsyncIterator[None]:
        """Hold the person's thread for one whole turn."""
        self._turning[person_id] += 1
        try:
            async with self._locked(person_id, wait_s=wait_s):
                yield
        finally:
            self._turning[person_id] -= 1
            if not self._turning[person_id]:
                del self._turning[person_id]
                for listener in self._idle_listeners:
                    listener(person_id)

    @asynccontextmanager
    async def _locked(self, person_id: str, *, wait_s: float) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(wait_s):
                conn = await self._lock_pool.acquire()
        except TimeoutError as exc:
            raise ThreadBusy("The server is answering many people at once; try again shortly.") from exc
        try:
            try:
                async with asyncio.timeout(wait_s):
                    await conn.execute(_LOCK_SQL, person_id)
            except TimeoutError as exc:
                raise ThreadBusy("Another request is still being answered; try again shortly.") from exc
            try:
                async with self._hold(conn) if self._hold is not None else nullcontext():
                    yield
            finally:
                # Shielded: a cancelled request must still give the thread back. (Were
                # the unlock lost anyway, returning the connection to the pool resets it,
                # which releases every advisory lock it held.) A connection the database
                # lost took its session's locks with it: nothing to give back.
                with contextlib.suppress(asyncpg.InterfaceError, asyncpg.ConnectionDoesNotExistError):
                    await asyncio.shield(conn.execute(_UNLOCK_SQL, person_id))
        finally:
            await self._lock_pool.release(conn)

    async def latest_said(self, person_id: str) -> tuple[str, datetime] | None:
        """The person's latest message and when it came: what a confirmation is checked against."""
        recent = await self.page(person_id, before=None, after=None, limit=20)
        said = [m for m in recent if m.author == "human"]
        return (said[-1].text, said[-1].created_at) if said else None

    async def is_idle(self, conn: Conn, person_id: str) -> bool:
        """True (and then held by `conn` until unlocked) when no turn holds the thread."""
        return bool(await conn.fetchval(_TRY_LOCK_SQL, person_id))

    async def release(self, conn: Conn, person_id: str) -> None:
        await conn.execute(_UNLOCK_SQL, person_id)
