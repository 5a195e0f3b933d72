"""The embedded dispatcher on a real PostgreSQL: two dispatchers with their own pools
and LISTEN connections (each a `database.Listener`, as two server processes have) share
one database and deliver each of 200 notes exactly once; a note is delivered at its due
time, not a polling interval later, including one written while the dispatcher sleeps."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg

from database import Listener, create_pool
from reminders import Delivery, DeliveryLimits, EmbeddedQueue, Note, Notes, Reminders, Woken


class CountingWake:
    """Stands in for Ava: remembers which dispatcher woke on which note."""

    def __init__(self, name: str, woken: Counter[str], by: Counter[str], takes_s: float = 0.002) -> None:
        self._name = name
        self._woken = woken
        self._by = by
        self._takes_s = takes_s

    async def __call__(self, *, note: Note) -> Woken:
        self._woken[note.id] += 1
        self._by[self._name] += 1
        await asyncio.sleep(self._takes_s)  # a run takes a moment; claims overlap
        return Woken(run_id=f"run_{note.id}", reply="Time!", outcome="ran")


@contextlib.asynccontextmanager
async def dispatcher(
    dsn: str,
    name: str,
    woken: Counter[str],
    by: Counter[str],
    limits: DeliveryLimits | None = None,
    takes_s: float = 0.002,
) -> AsyncIterator[tuple[Notes, EmbeddedQueue]]:
    pool = await create_pool(dsn, size_max=10)
    listener = Listener(dsn)
    notes = Notes(pool)
    queue = EmbeddedQueue(notes=notes, listener=listener, concurrent_max=8)
    await listener.start()
    delivery = Delivery(notes=notes, wake=CountingWake(name, woken, by, takes_s), limits=limits or DeliveryLimits())
    task = asyncio.create_task(queue.serve(delivery=delivery))
    try:
        yield notes, queue
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await queue.drain(timeout_s=10)
        await listener.stop()
        await pool.close()


async def statuses(pool: asyncpg.Pool) -> Counter[str]:
    return Counter(
        {r["status"]: r["n"] for r in await pool.fetch("SELECT status, count(*) AS n FROM wake_notes GROUP BY 1")}
    )


async def test_two_dispatchers_deliver_each_of_200_notes_exactly_once(database_url: str, pool: asyncpg.Pool) -> None:
    woken: Counter[str] = Counter()
    by: Counter[str] = Counter()
    async with dispatcher(database_url, "a", woken, by) as (notes, _), dispatcher(database_url, "b", woken, by):
        start = datetime.now(UTC) + timedelta(seconds=1)
        written = [
            await notes.add(
                person_id=f"usr_{i % 7}",
                text=f"note {i}",
                due_at=start + timedelta(milliseconds=5 * i),
                time_zone="UTC",
                created_by_run_id=None,
            )
            for i in range(200)
        ]
        async with asyncio.timeout(60):
            while (await statuses(pool))["delivered"] < 200:
                await asyncio.sleep(0.1)
    assert set(woken) == {n.id for n in written}
    assert set(woken.values()) == {1}, "no note woke Ava twice"
    assert by["a"] + by["b"] == 200
    assert by["a"] > 0 and by["b"] > 0, f"both dispatchers share the work: {dict(by)}"
    rows = await pool.fetch("SELECT attempts, run_id, id FROM wake_notes")
    assert all(r["attempts"] == 1 and r["run_id"] == f"run_{r['id']}" for r in rows)


async def test_a_delivery_that_outlasts_its_lease_is_not_taken_by_the_other_dispatcher(
    database_url: str, pool: asyncpg.Pool
) -> None:
    """Each wake takes three leases long: the dispatcher working on it renews its claim, so
    the other never claims it again (a lease lapses only when its holder is gone)."""
    woken: Counter[str] = Counter()
    by: Counter[str] = Counter()
    limits = DeliveryLimits(lease_s=1.0)
    async with (
        dispatcher(database_url, "a", woken, by, limits, takes_s=3.0) as (notes, _),
        dispatcher(database_url, "b", woken, by, limits, takes_s=3.0),
    ):
        due = datetime.now(UTC) + timedelta(milliseconds=500)
        for i in range(6):
            await notes.add(person_id="usr_1", text=f"note {i}", due_at=due, time_zone="UTC", created_by_run_id=None)
        async with asyncio.timeout(60):
            while (await statuses(pool))["delivered"] < 6:
                await asyncio.sleep(0.1)
    assert sorted(woken.values()) == [1] * 6, woken
    assert await pool.fetchval("SELECT max(attempts) FROM wake_notes") == 1


async def test_a_note_written_while_the_dispatcher_sleeps_is_delivered_on_time(
    database_url: str, pool: asyncpg.Pool
) -> None:
    woken: Counter[str] = Counter()
    async with dispatcher(database_url, "a", woken, Counter()) as (notes, queue):
        reminders = Reminders(notes=notes, queue=queue)
        # Something far off first: the dispatcher goes to sleep until then.
        await reminders.schedule_at(
            person_id="usr_1", text="later", due_at=datetime.now(UTC) + timedelta(hours=5), time_zone="UTC"
        )
        await asyncio.sleep(0.3)
        soon = await reminders.schedule_at(
            person_id="usr_1", text="soon", due_at=datetime.now(UTC) + timedelta(seconds=1), time_zone="UTC"
        )
        # Waits for the note to be finished, not merely for Ava to wake: its delivery time
        # is written after the run.
        async with asyncio.timeout(10):
            while (done := await notes.get(soon.id)) is None or done.status in ("pending", "delivering"):
                await asyncio.sleep(0.01)
    assert woken[soon.id] == 1
    assert done.status == "delivered", done
    # A note without a delivery time was never finished, so it cannot count as on time.
    assert done.delivered_at is not None, done
    lateness_s = (done.delivered_at - done.due_at).total_seconds()
    # Without the NOTIFY the dispatcher would have slept for five hours; woken by it, it
    # slept until the note's own due time. (How late, at scale: bench/reminder_lateness.py.)
    assert 0 <= lateness_s < 2.0, lateness_s


async def test_a_failing_delivery_is_retried_with_a_growing_backoff_then_given_up(pool: asyncpg.Pool) -> None:
    notes = Notes(pool)  # no dispatcher runs here: every attempt is this test's
    calls: list[str] = []

    async def broken(*, note: Note) -> Woken:
        calls.append(note.id)
        raise ConnectionResetError("the thread's database went away")

    async def tell(*, note: Note, woken: Woken) -> None:
        raise AssertionError("a failed note is not announced")

    delivery = Delivery(
        notes=notes,
        wake=broken,
        tell=tell,
        limits=DeliveryLimits(lease_s=60, attempts_max=2, backoff_s=0.1),
    )
    note = await notes.add(
        person_id="usr_nobody",
        text="Remind nobody.",
        due_at=datetime.now(UTC) + timedelta(seconds=30),
        time_zone="UTC",
        created_by_run_id=None,
    )
    assert await delivery.deliver(note.id) == "retrying"
    assert await delivery.deliver(note.id) == "busy", "the retry waits for its backoff"
    await asyncio.sleep(0.15)
    assert await delivery.deliver(note.id) == "failed"
    assert await delivery.deliver(note.id) == "failed", "a given-up note stays given up"
    assert len(calls) == 2
