"""One LISTEN connection per process, shared by every part that wants to hear a NOTIFY.

Why: the live events (`chat.EventHub`) and the wake-note dispatcher
(`reminders.EmbeddedQueue`) each kept a reconnecting LISTEN loop of their own, so every
process held two listening connections and two copies of the same reconnect logic.
`Listener` is that loop, once: it keeps one asyncpg connection LISTENing on every channel
anyone watches, and when the connection is lost it reconnects after a growing, bounded
backoff (reset once a connection was up again).

What a callback watching a channel is promised: while the connection lives it is called
with the payload (str) of each notification on its channel; and it is called with None
whenever listening on its channel (re)starts, after every (re)connect and when a channel
is first watched on a live connection, because a notification may have been missed while
nobody listened. Callbacks treat a notification as a hint and None as "re-read
everything": nothing that cannot be lost travels in a payload. They run on the event loop
and must not block; one that raises is logged and does not silence the others.

`listening(channel)` says whether a notification on `channel` sent now would be heard: a
part that trusts what it remembers only until told otherwise (the known device tokens,
chat.device_tokens) asks it before each use, so nothing is trusted in the gap between a lost
connection and the None of the next one.

Domains never import this module (import-linter): each declares the one-method protocol it
needs, `watch(channel, callback)`, and the composition root (`app`) hands this in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeAlias

import asyncpg

log = logging.getLogger(__name__)

Callback: TypeAlias = Callable[[str | None], None]

# The name the connection shows in pg_stat_activity, so it can be found (and, in tests, cut).
APPLICATION_NAME = "avagenc-listener"
# What a lost or refused connection raises (a timeout is an OSError).
_LOST = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError)


class Listener:
    """`watch` any time; `start()` once (it returns when the first connection listens), `stop()` at shutdown."""

    def __init__(
        self,
        dsn: str,
        *,
        reconnect_s: float = 1.0,
        reconnect_max_s: float = 30.0,
        connect_timeout_s: float = 10.0,
    ) -> None:
        assert 0 < reconnect_s <= reconnect_max_s, (reconnect_s, reconnect_max_s)
        self._dsn = dsn
        self._reconnect_s = reconnect_s
        self._reconnect_max_s = reconnect_max_s
        self._connect_timeout_s = connect_timeout_s
        self._callbacks: dict[str, list[Callback]] = {}
        # The live connection, set only once it listens on every channel watched so far.
        self._conn: asyncpg.Connection | None = None
        # The channels LISTENed on that connection (a channel watched late joins once its LISTEN ran).
        self._listened: frozenset[str] = frozenset()
        self._connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Channels first watched on a live connection are added one at a time: asyncpg
        # runs one statement per connection at once.
        self._adding: set[asyncio.Task[None]] = set()
        self._adding_lock = asyncio.Lock()

    def watch(self, channel: str, callback: Callback) -> None:
        """Call `callback` with each payload on `channel`, and with None whenever listening (re)starts."""
        callbacks = self._callbacks.setdefault(channel, [])
        callbacks.append(callback)
        if self._conn is not None and len(callbacks) == 1:
            task = asyncio.create_task(self._add(self._conn, channel), name=f"listen-{channel}")
            self._adding.add(task)
            task.add_done_callback(self._adding.discard)

    def listening(self, channel: str) -> bool:
        """Whether a notification on `channel` sent now would reach its callbacks: the
        connection is up (asyncpg marks a lost one closed as soon as the loss is seen) and
        LISTENs on it."""
        conn = self._conn
        return conn is not None and channel in self._listened and not conn.is_closed()

    async def start(self, *, timeout_s: float = 10.0) -> None:
        """Connect in the background; return once the first connection listens (or raise TimeoutError,
        leaving the loop retrying: call `stop` either way)."""
        assert self._task is None, "started twice"
        self._task = asyncio.create_task(self._run(), name="listener")
        async with asyncio.timeout(timeout_s):
            await self._connected.wait()

    async def stop(self) -> None:
        tasks = [*self._adding, *([self._task] if self._task is not None else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None
        self._connected.clear()

    async def _run(self) -> None:
        delay_s = self._reconnect_s
        while True:
            try:
                conn = await asyncpg.connect(
                    self._dsn,
                    timeout=self._connect_timeout_s,
                    server_settings={"application_name": APPLICATION_NAME},
                )
            except _LOST as exc:
                log.warning("listener could not connect: %s", type(exc).__name__)
            else:
                try:
                    await self._listen(conn)
                    delay_s = self._reconnect_s  # it was up: the backoff starts afresh
                except _LOST as exc:
                    log.warning("listener lost its connection: %s", type(exc).__name__)
                finally:
                    self._conn, self._listened = None, frozenset()
                    if not conn.is_closed():
                        await conn.close(timeout=self._connect_timeout_s)
            await asyncio.sleep(delay_s)
            delay_s = min(2 * delay_s, self._reconnect_max_s)

    async def _listen(self, conn: asyncpg.Connection) -> None:
        """LISTEN on every watched channel, say so (None), and return when the connection is lost."""
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        listened: set[str] = set()
        # A channel watched while these LISTENs run is picked up by the next round.
        while pending := self._callbacks.keys() - listened:
            for channel in sorted(pending):
                await conn.add_listener(channel, self._on_notify)
                listened.add(channel)
        self._conn, self._listened = conn, frozenset(listened)
        self._connected.set()
        for channel in sorted(listened):
            self._tell(channel, None)
        await lost.wait()

    async def _add(self, conn: asyncpg.Connection, channel: str) -> None:
        async with self._adding_lock:
            if conn is not self._conn:
                return  # that connection is gone; the next one listens on every watched channel
            try:
                await conn.add_listener(channel, self._on_notify)
            except _LOST:
                return  # the connection is going: the reconnect listens on this channel too
            if conn is self._conn:
                self._listened |= {channel}
        self._tell(channel, None)

    def _on_notify(self, _conn: Any, _pid: int, channel: str, payload: object) -> None:
        self._tell(channel, str(payload))

    def _tell(self, channel: str, payload: str | None) -> None:
        for callback in tuple(self._callbacks.get(channel, ())):
            try:
                callback(payload)
            except Exception:
                log.exception("a callback watching %s failed", channel)
