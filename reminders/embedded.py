"""`EmbeddedQueue`: every server process dispatches due notes from PostgreSQL itself.

No fixed polling delay. The dispatcher asks the database how long until the next note
falls due (or a claim's lease runs out), sleeps exactly that long, and is woken early by
LISTEN/NOTIFY whenever a note becomes pending (the table's trigger notifies on commit),
so a note written for two seconds from now is not slept past. It hears the NOTIFY on the
process's one LISTEN connection, which the composition root passes in (the `Watch` protocol), and looks
again whenever that connection is re-established, since a notification may have been
missed. Due rows are claimed with `FOR UPDATE SKIP LOCKED`, so any number of processes
share the work and each note is claimed by one of them. Time is the database's clock, the
same for every process.

Deliveries run as their own tasks, at most `concurrent_max` at once; stopping lets those
in flight finish (within a bound) before the pool closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

import asyncpg

from reminders.delivery import Delivery
from reminders.notes import Note
from reminders.store import Notes

log = logging.getLogger(__name__)

CHANNEL = "avagenc_wakes"
# Even with nothing scheduled the dispatcher looks again this often: a bound, not a poll
# (a NOTIFY wakes it first whenever there is something to do).
SLEEP_MAX_S = 3600.0
# When other processes hold every due row the next due time is "now"; yield this long
# instead of spinning until their claims commit.
_CONTENDED_S = 0.005


class Watch(Protocol):
    """What the dispatcher needs of the process's LISTEN connection (the root passes
    `database.Listener`): `callback` hears each payload on `channel`, and None whenever
    listening (re)starts."""

    def watch(self, channel: str, callback: Callable[[str | None], None]) -> None: ...


class EmbeddedQueue:
    def __init__(
        self,
        *,
        notes: Notes,
        listener: Watch,
        concurrent_max: int = 8,
        retry_s: float = 1.0,
    ) -> None:
        assert concurrent_max >= 1
        self._notes = notes
        self._concurrent_max = concurrent_max
        # How long to wait before asking the database again after it failed.
        self._retry_s = retry_s
        self._woken = asyncio.Event()
        self._in_flight: set[asyncio.Task[Any]] = set()
        listener.watch(CHANNEL, self._heard)

    async def enqueue(self, *, note: Note) -> None:
        """Nothing to do: the row is the queue, and its insert already woke every dispatcher."""

    async def cancel(self, *, note: Note) -> None:
        """Nothing to do: a cancelled row is never claimed."""

    async def serve(self, *, delivery: Delivery) -> None:
        await self._dispatch(delivery)

    async def drain(self, *, timeout_s: float) -> None:
        """Let deliveries in flight finish (call after cancelling `serve`)."""
        pending = [t for t in self._in_flight if not t.done()]
        if pending:
            _, still = await asyncio.wait(pending, timeout=timeout_s)
            for task in still:
                task.cancel()

    async def _dispatch(self, delivery: Delivery) -> None:
        while True:
            self._woken.clear()
            free = self._concurrent_max - len(self._in_flight)
            claimed: list[Note] = []
            if free > 0:
                try:
                    claimed = await self._notes.claim_due(limit=free, lease_s=delivery.limits.lease_s)
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                    # InterfaceError too: a connection the database cut mid-statement (an
                    # outage) otherwise ended the dispatcher, and no note was delivered again.
                    log.warning("claiming due notes failed: %s", type(exc).__name__)
                    await asyncio.sleep(self._retry_s)
                    continue
            for note in claimed:
                self._start(delivery, note)
            if claimed and len(claimed) == free:
                continue  # there may be more due right now
            await self._sleep(full=free <= 0)

    def _start(self, delivery: Delivery, note: Note) -> None:
        task = asyncio.create_task(self._deliver(delivery, note), name=f"deliver-{note.id}")
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _deliver(self, delivery: Delivery, note: Note) -> None:
        try:
            await delivery.run_claimed(note)
        except Exception:
            log.exception("delivering %s failed", note.id)
        finally:
            self._woken.set()  # a slot is free again

    async def _sleep(self, *, full: bool) -> None:
        if full:
            delay = SLEEP_MAX_S  # only a finished delivery (or a NOTIFY) can help now
        else:
            try:
                seconds = await self._notes.seconds_to_next()
            except (OSError, asyncpg.PostgresError):
                seconds = self._retry_s
            delay = SLEEP_MAX_S if seconds is None else min(max(seconds, _CONTENDED_S), SLEEP_MAX_S)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self._woken.wait()

    def _heard(self, _payload: str | None) -> None:
        # A note became pending, or (None) one may have while nobody listened: look again.
        self._woken.set()
