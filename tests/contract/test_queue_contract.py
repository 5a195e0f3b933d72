"""One contract for every `Queue`: the embedded dispatcher and Cloud Tasks (against an
in-process fake of its API that calls the app's signed callback, as the service would).

Whatever the queue, a scheduled note wakes Ava exactly once at its due time, a cancelled
one never does, enqueueing twice is still once, and a note too far ahead for the queue
today is delivered when its time comes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from database import Listener
from reminders import (
    CallbackGate,
    CallbackSigner,
    Delivery,
    EmbeddedQueue,
    LocalIdTokens,
    Note,
    Notes,
    Queue,
    QueueUnavailable,
    ReminderError,
    Reminders,
    Woken,
)
from reminders.cloudtasks import CloudTasksQueue
from tests.fakes.cloud_tasks import FakeCloudTasks
from web import build_callback_router, on_domain_error

BASE_URL = "https://avagenc.test"
SERVICE_ACCOUNT = "postera@avagenc.iam.gserviceaccount.com"
QUEUE_PATH = "projects/avagenc/locations/asia-southeast1/queues/postera"


@dataclass
class Harness:
    reminders: Reminders
    notes: Notes
    queue: Queue
    woken: Counter[str]
    sweep: Callable[[], Awaitable[object]]
    fake: FakeCloudTasks | None = None


def _delivery(notes: Notes, woken: Counter[str]) -> Delivery:
    async def wake(*, note: Note) -> Woken:
        woken[note.id] += 1
        return Woken(run_id=f"run_{note.id}", reply="Time to stretch!", outcome="ran")

    return Delivery(notes=notes, wake=wake)


@contextlib.asynccontextmanager
async def embedded(database_url: str, pool: asyncpg.Pool) -> AsyncIterator[Harness]:
    notes, woken = Notes(pool), Counter[str]()
    listener = Listener(database_url)
    queue = EmbeddedQueue(notes=notes, listener=listener)
    await listener.start()
    task = asyncio.create_task(queue.serve(delivery=_delivery(notes, woken)))

    async def sweep() -> None:
        return None  # the embedded queue reads due times straight from the table

    try:
        yield Harness(Reminders(notes=notes, queue=queue), notes, queue, woken, sweep)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await queue.drain(timeout_s=5)
        await listener.stop()


@contextlib.asynccontextmanager
async def cloud_tasks(database_url: str, pool: asyncpg.Pool) -> AsyncIterator[Harness]:
    notes, woken = Notes(pool), Counter[str]()
    tokens = LocalIdTokens(b"k" * 32)
    delivery = _delivery(notes, woken)
    app = FastAPI()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL)
    fake = FakeCloudTasks(client=client, tokens=tokens, queue_path=QUEUE_PATH)
    queue = CloudTasksQueue(
        notes=notes,
        api=fake,
        queue_path=QUEUE_PATH,
        target_base_url=BASE_URL,
        service_account=SERVICE_ACCOUNT,
        audience=BASE_URL,
    )
    reminders = Reminders(notes=notes, queue=queue)
    gate = CallbackGate(
        signer=CallbackSigner(b"s" * 32), id_tokens=tokens, audience=BASE_URL, service_account=SERVICE_ACCOUNT
    )
    app.include_router(build_callback_router(reminders, delivery, gate))
    app.add_exception_handler(ReminderError, on_domain_error)
    runner = asyncio.create_task(fake.run())
    try:
        yield Harness(reminders, notes, queue, woken, queue.sweep, fake)
    finally:
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner
        await client.aclose()


@pytest.fixture(params=["embedded", "cloud_tasks"])
async def harness(request: pytest.FixtureRequest, database_url: str, pool: asyncpg.Pool) -> AsyncIterator[Harness]:
    kinds = {"embedded": embedded, "cloud_tasks": cloud_tasks}
    async with kinds[request.param](database_url, pool) as built:
        yield built


async def schedule(h: Harness, *, in_s: float, text: str = "Remind Budi to stretch.") -> Note:
    due = datetime.now(UTC) + timedelta(seconds=in_s)
    return await h.reminders.schedule_at(person_id="usr_budi", text=text, due_at=due, time_zone="Asia/Jakarta")


async def until_woken(h: Harness, note: Note, *, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not h.woken[note.id]:
            await asyncio.sleep(0.01)


async def test_a_note_is_delivered_once_at_its_due_time(harness: Harness) -> None:
    note = await schedule(harness, in_s=0.5)
    await until_woken(harness, note)
    await asyncio.sleep(0.5)
    assert harness.woken[note.id] == 1
    done = await harness.notes.get(note.id)
    assert done is not None and done.status == "delivered"
    assert done.delivered_at is not None and done.delivered_at >= note.due_at
    assert done.run_id == f"run_{note.id}" and done.preview == "Time to stretch!"


async def test_a_cancelled_note_never_fires(harness: Harness) -> None:
    note = await schedule(harness, in_s=0.5)
    await harness.reminders.cancel("usr_budi", note.id)
    await asyncio.sleep(1.2)
    assert harness.woken[note.id] == 0
    assert (await harness.notes.get(note.id)).status == "cancelled"  # type: ignore[union-attr]
    if harness.fake is not None:
        assert not harness.fake.tasks, "the task was deleted, not left to fire"


async def test_enqueueing_twice_is_one_delivery(harness: Harness) -> None:
    note = await schedule(harness, in_s=0.5)
    await harness.queue.enqueue(note=note)
    await until_woken(harness, note)
    await asyncio.sleep(0.5)
    assert harness.woken[note.id] == 1


async def test_a_note_beyond_the_queues_horizon_is_delivered_when_its_time_comes(
    harness: Harness, pool: asyncpg.Pool
) -> None:
    note = await schedule(harness, in_s=40 * 24 * 3600)
    if harness.fake is not None:
        assert not harness.fake.tasks, "Cloud Tasks holds nothing beyond 30 days"
    # Time passes: the note comes within range and falls due.
    await pool.execute(
        "UPDATE wake_notes SET due_at = clock_timestamp() + interval '0.3 seconds' WHERE id = $1", note.id
    )
    await harness.sweep()
    await until_woken(harness, note)
    assert harness.woken[note.id] == 1


async def test_cancelling_everything_for_forget_me(harness: Harness) -> None:
    first = await schedule(harness, in_s=0.6)
    second = await schedule(harness, in_s=0.7, text="Remind Budi to drink water.")
    assert await harness.reminders.cancel_pending("usr_budi") == 2
    assert await harness.reminders.cancel_pending("usr_budi") == 0
    await asyncio.sleep(1.2)
    assert harness.woken[first.id] == harness.woken[second.id] == 0


async def test_a_note_cloud_tasks_refuses_is_not_kept(database_url: str, pool: asyncpg.Pool) -> None:
    async with cloud_tasks(database_url, pool) as h:
        assert h.fake is not None
        h.fake.unavailable = True
        with pytest.raises(QueueUnavailable):
            await schedule(h, in_s=60)
        assert await h.reminders.upcoming("usr_budi") == [], "nothing half-written"
        h.fake.unavailable = False
        note = await schedule(h, in_s=60)
        assert [t.rsplit("/", 1)[-1] for t in h.fake.tasks] == [note.id], "one task, named by the note"
