"""A turn's bookkeeping: the charge of each model call, the record of each tool call, the
end of each run and the turn's one `wallet.changed`, written beside the turn instead of
in its way.

Why: what a person on a call waits for is the turn's path from their words to Ava's
reply. Charging one model call took five statements, each its own commit, and a home
request makes four or five calls: 13 ms of a 34 ms turn, one statement after another on
the connection that holds the thread. Nothing on that path needs those writes done
except at two points, which wait for them (`settled`): a handoff (a specialist runs only
on a wallet that is not empty, counting the calls already made) and the turn's end (its
response carries finished runs, and the next turn's guard sees this one's charges).

The writes keep their order (a tool call's number in its run is the order it was
recorded in; a run's end comes after its charges, so its row carries their usage and
cost) and run on a connection of their own, checked out while there is something to
write (`apart`, from the composition root), so the turn's connection stays free for the
turn. They are detached work: a turn whose request is cancelled still has every call
charged, and shutdown waits for them as for other detached work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager

from chat.detached import detach

log = logging.getLogger(__name__)

# Where the writes run: a connection of their own for as long as the block lasts.
Apart = Callable[[], AbstractAsyncContextManager[None]]
Write = Callable[[], Awaitable[object]]
# Told when a queued write will never run (no connection could be had for it).
Unwritten = Callable[[], None]


class Books:
    """One turn's writes, in the order they were asked for, one at a time."""

    def __init__(self, apart: Apart | None = None) -> None:
        self._apart = apart or contextlib.nullcontext
        self._queue: deque[tuple[Write, asyncio.Future[None], Unwritten | None]] = deque()
        self._waiting: list[asyncio.Future[None]] = []
        self._errors: list[BaseException] = []
        self._writer: asyncio.Task[None] | None = None

    def write(self, work: Write, *, unwritten: Unwritten | None = None) -> None:
        """Queue `work`; it runs after everything queued before it. `unwritten` is told if
        it never runs (its writer found no connection): a model call's charge then goes
        to the sweep at once (chat.outbox), rather than waiting for the next start."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((work, done, unwritten))
        self._waiting.append(done)
        if self._writer is None:
            self._writer = detach(self._write_all(), name="turn-books")

    async def settled(self) -> None:
        """Wait for every write queued so far; raise the first that failed since the last
        time this was asked (a write that fails is not retried here: a charge recorded but
        not settled is what the startup sweep settles)."""
        waiting, self._waiting = self._waiting, []
        if waiting:
            await asyncio.shield(asyncio.gather(*waiting))
        if self._errors:
            first, self._errors = self._errors[0], []
            raise first

    async def _write_all(self) -> None:
        try:
            async with self._apart():
                while self._queue:
                    work, done, _ = self._queue.popleft()
                    try:
                        await work()
                    except Exception as exc:
                        log.exception("a turn's bookkeeping write failed")
                        self._errors.append(exc)
                    finally:
                        done.set_result(None)
                # Nothing left: the next write starts a writer (and a connection) of its
                # own. Cleared before the connection is given back, so no write is left
                # queued behind a writer that is already leaving.
                self._writer = None
        except BaseException as exc:
            if self._writer is not asyncio.current_task():
                # The connection failed on its way back, after the queue emptied: anything
                # queued since belongs to a newer writer, which is left to it.
                if not isinstance(exc, Exception):
                    raise
                log.warning("a turn's bookkeeping connection failed on release: %s", type(exc).__name__)
                return
            # No connection, or a forced stop: what is still queued is not written, and
            # whoever waits for it hears so instead of waiting for ever.
            self._writer = None
            while self._queue:
                _, done, unwritten = self._queue.popleft()
                if unwritten is not None:
                    unwritten()
                done.set_result(None)
                self._errors.append(exc)
            if not isinstance(exc, Exception):
                raise
            log.warning("a turn's bookkeeping could not be written: %s", type(exc).__name__)
