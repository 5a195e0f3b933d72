"""One asyncpg pool per process, with JSON codecs so JSONB columns read as Python values;
and `TurnPool`, the pool a turn's stores are given, which runs a turn's statements on the
connection that already holds the person's thread lock.

Why: a turn used to check a connection out of the pool for every statement (about 45 per
home request), and each check-in costs a round trip of its own (asyncpg resets the
connection). The turn already holds one connection for its whole length, the one its
advisory lock lives on (chat.threads), so its statements can run there. `holding(conn)`
marks that connection for the current task and the tasks it starts (a context variable:
the detached charges of its model calls inherit it); `TurnPool` uses it while it is
marked, and the real pool otherwise (API reads, workers, another person's turn). Uses of
the held connection are serialised, so a charge still finishing when the turn ends is
waited for before the lock is given back, and nothing runs on it afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

import asyncpg

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

    Conn = asyncpg.Connection | PoolConnectionProxy[Any]


def _encode(value: object) -> str:
    # Timestamps and other non-JSON scalars inside payloads are written as text.
    return json.dumps(value, default=str, ensure_ascii=False)


async def _init_connection(conn: asyncpg.Connection) -> None:
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, encoder=_encode, decoder=json.loads, schema="pg_catalog")


# How long a connection nobody used stays open. asyncpg closes it after 300 s by default,
# and the next statements pay for a new one: its connect, the preparation of each statement
# and the database's compile of every trigger they fire. That is the usual case of a home
# speaker, one request after a quiet spell: Ava's reply to a home request took 20-27 ms on
# fresh connections against 8-13 on warm ones (in-process probe, 2026-12-02). A connection
# kept idle costs the database a few MB; a process opens at most its two pools' sizes.
IDLE_CONNECTION_LIFETIME_S = 86_400.0


class DatabaseUnreachable(ConnectionError):
    """A new connection to the database could not be opened: nothing listens at its address
    (a stopped server's Unix socket is gone, so connecting raises FileNotFoundError rather
    than a refused connection), or connecting timed out. A `ConnectionError`, so every
    caller that treats a lost database as a passing outage (the HTTP edge's 503, the
    workers' retries) treats this one the same way."""


async def _connect(*args: Any, **kwargs: Any) -> asyncpg.Connection:
    # Why: a database stopped cleanly removes its socket file, and the FileNotFoundError a
    # request's first statement then raised was answered 500 instead of 503 (an external
    # database restarted mid-burst, tests/faults/test_external_restart.py).
    try:
        conn: asyncpg.Connection = await asyncpg.connect(*args, **kwargs)
    except ConnectionError:
        raise
    except OSError as exc:  # FileNotFoundError, TimeoutError, ...
        raise DatabaseUnreachable(f"cannot connect to the database: {type(exc).__name__}") from exc
    return conn


async def _end_an_open_transaction(conn: asyncpg.Connection) -> None:
    # All a single statement run outside a transaction can leave behind (none, in fact,
    # unless it was cut short); asyncpg has already dropped the connection's own listeners.
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


async def create_pool(url: str, *, size_max: int, single_statements: bool = False) -> asyncpg.Pool:
    """A pool of up to `size_max` connections (one opened at once).

    `single_statements`: its users run only single statements outside a transaction that
    leave no session state (no SET, LISTEN, cursor or session-level advisory lock), so a
    connection handed back needs no reset. Why: asyncpg resets every connection handed
    back with a statement of its own (`RESET ALL`, `UNLISTEN *`, unlocking every advisory
    lock), a second round trip the caller waits for; for the limiter's one counting
    statement that was about a third of its cost (docs/http.md#limits)."""
    pool = await asyncpg.create_pool(
        url,
        connect=_connect,
        min_size=1,
        max_size=size_max,
        init=_init_connection,
        command_timeout=60,
        max_inactive_connection_lifetime=IDLE_CONNECTION_LIFETIME_S,
        reset=_end_an_open_transaction if single_statements else None,
    )
    assert pool is not None
    return pool


def _alive(conn: Conn) -> bool:
    """Whether `conn` can still run a statement. asyncpg gives a connection it lost back
    to the pool at once, while its holder still holds it, and every later use of it fails
    with "connection has been released back to the pool"."""
    try:
        return not conn.is_closed()
    except asyncpg.InterfaceError:
        return False


class _Held:
    """One connection a task holds, lent to that task's statements one at a time.

    `replaceable`: once the connection is lost, later statements run on connections of
    the pool's (work beside a turn, which needs no particular connection). Otherwise they
    keep failing on it: a turn's statements run on the connection that holds the person's
    thread lock, and a lost connection took the lock with it, so the turn must not go on
    as if it held the thread."""

    def __init__(self, conn: Conn, *, replaceable: bool = False) -> None:
        self.conn = conn
        self.replaceable = replaceable
        self.open = True
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None

    @contextlib.asynccontextmanager
    async def use(self, pool: asyncpg.Pool) -> AsyncIterator[Conn]:
        task = asyncio.current_task()
        if self._owner is not None and self._owner is task:
            yield self.conn  # a statement inside another's block, on the same task: same connection
            return
        async with self._lock:
            if self.open and (not self.replaceable or _alive(self.conn)):
                self._owner = task
                try:
                    yield self.conn
                finally:
                    self._owner = None
                return
        async with pool.acquire() as conn:  # the turn ended while this waited, or its connection was lost
            yield conn

    async def close(self) -> None:
        async with self._lock:
            self.open = False


_HELD: ContextVar[_Held | None] = ContextVar("avagenc_held_connection", default=None)


@contextlib.asynccontextmanager
async def holding(conn: Conn, *, replaceable: bool = False) -> AsyncIterator[None]:
    """Run the statements a `TurnPool` gets from this task (and tasks it starts) on `conn`,
    until the block ends; on the way out, wait for the one in flight, if any."""
    held = _Held(conn, replaceable=replaceable)
    token = _HELD.set(held)
    try:
        yield
    finally:
        _HELD.reset(token)
        await asyncio.shield(held.close())


@contextlib.asynccontextmanager
async def holding_own(pool: asyncpg.Pool) -> AsyncIterator[None]:
    """Like `holding`, on a connection checked out of `pool` for the block: for work that
    runs beside a turn (its bookkeeping, chat.bookkeeping) and must not queue on the
    turn's connection. `pool` is the real pool, never a `TurnPool`."""
    async with pool.acquire() as conn, holding(conn, replaceable=True):
        yield


class TurnPool:
    """The pool's interface (what the stores use of it) over a real pool, running the
    statements of a task inside `holding` on the held connection."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    def acquire(self) -> contextlib.AbstractAsyncContextManager[Conn]:
        held = _HELD.get()
        if held is None or not held.open:
            return cast("contextlib.AbstractAsyncContextManager[Conn]", self._pool.acquire())
        return held.use(self._pool)

    async def fetch(self, query: str, *args: object) -> list[asyncpg.Record]:
        async with self.acquire() as conn:
            return await conn.fetch(query, *args)

    async def fetchrow(self, query: str, *args: object) -> asyncpg.Record | None:
        async with self.acquire() as conn:
            return await conn.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: object, column: int = 0) -> Any:
        async with self.acquire() as conn:
            return await conn.fetchval(query, *args, column=column)

    async def execute(self, query: str, *args: object) -> str:
        async with self.acquire() as conn:
            return await conn.execute(query, *args)

    def __getattr__(self, name: str) -> Any:
        # Everything else (release, get_max_size, close...) is the real pool's.
        return getattr(self._pool, name)

    def as_pool(self) -> asyncpg.Pool:
        """Typed as the pool the stores are written against (they use only the above)."""
        return cast(asyncpg.Pool, self)
