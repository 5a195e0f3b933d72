"""The hub's shared read (chat.events.EventHub.read): a person's streams woken together
read the events table once, and a notification that arrives while a read is in flight
makes the next stream read for itself, so no stream can miss what it announces."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from chat.events import Event, EventHub, EventLog


class FakeListener:
    def __init__(self) -> None:
        self.heard: Callable[[str | None], None] | None = None

    def watch(self, channel: str, callback: Callable[[str | None], None]) -> None:
        self.heard = callback

    def notify(self, person_id: str | None) -> None:
        assert self.heard is not None
        self.heard(person_id)


class GatedLog(EventLog):
    """An event log whose reads wait for the test to let them answer, counting each read."""

    def __init__(self) -> None:
        self.reads: list[tuple[str, int]] = []
        self.gate = asyncio.Event()
        self.rows: list[Event] = []  # usr_a's; nobody else has any

    async def since(self, person_id: str, after_id: int, *, limit: int = 200) -> list[Event]:
        self.reads.append((person_id, after_id))
        mine = self.rows if person_id == "usr_a" else []
        rows = [e for e in mine if e.id > after_id][:limit]  # what the snapshot holds now
        await self.gate.wait()
        return rows


async def _started(log: GatedLog, reads: int) -> None:
    """Until `reads` reads have taken their snapshot (a read starts on a later loop turn)."""
    async with asyncio.timeout(5):
        while len(log.reads) < reads:
            await asyncio.sleep(0)


def _event(id_: int) -> Event:
    return Event(id_, "message", {"text": f"m{id_}"}, datetime(2026, 12, 3, tzinfo=UTC))


async def test_streams_of_one_person_at_the_same_id_share_one_read() -> None:
    listener, log = FakeListener(), GatedLog()
    hub = EventHub(listener)
    log.rows = [_event(1), _event(2)]
    readers = [asyncio.create_task(hub.read(log, "usr_a", 0)) for _ in range(4)]
    other = asyncio.create_task(hub.read(log, "usr_b", 0))
    later = asyncio.create_task(hub.read(log, "usr_a", 2))
    await _started(log, 3)
    log.gate.set()
    results = await asyncio.gather(*readers)
    assert [[e.id for e in r] for r in results] == [[1, 2]] * 4
    assert await other == [] and await later == []
    assert sorted(log.reads) == [("usr_a", 0), ("usr_a", 2), ("usr_b", 0)]


async def test_a_notification_during_a_read_makes_the_next_stream_read_for_itself() -> None:
    listener, log = FakeListener(), GatedLog()
    hub = EventHub(listener)
    log.rows = [_event(1)]
    first = asyncio.create_task(hub.read(log, "usr_a", 0))
    await _started(log, 1)
    log.rows.append(_event(2))  # committed after the first read's snapshot
    listener.notify("usr_a")
    second = asyncio.create_task(hub.read(log, "usr_a", 0))
    await _started(log, 2)
    log.gate.set()
    assert [e.id for e in await first] == [1]
    assert [e.id for e in await second] == [1, 2]
    assert log.reads == [("usr_a", 0), ("usr_a", 0)]


async def test_a_reconnect_makes_every_stream_read_for_itself() -> None:
    listener, log = FakeListener(), GatedLog()
    hub = EventHub(listener)
    first = asyncio.create_task(hub.read(log, "usr_a", 0))
    await _started(log, 1)
    listener.notify(None)  # the LISTEN connection came back: anything may have been missed
    second = asyncio.create_task(hub.read(log, "usr_a", 0))
    await _started(log, 2)
    log.gate.set()
    await asyncio.gather(first, second)
    assert len(log.reads) == 2


async def test_a_stream_that_leaves_does_not_cancel_the_read_the_others_wait_for() -> None:
    listener, log = FakeListener(), GatedLog()
    hub = EventHub(listener)
    log.rows = [_event(1)]
    leaving = asyncio.create_task(hub.read(log, "usr_a", 0))
    staying = asyncio.create_task(hub.read(log, "usr_a", 0))
    await _started(log, 1)
    leaving.cancel()
    await asyncio.sleep(0)
    log.gate.set()
    assert [e.id for e in await staying] == [1]
    assert leaving.cancelled()
    assert len(log.reads) == 1
    # Once it ended, the read is no longer shared: a later stream reads afresh.
    assert [e.id for e in await hub.read(log, "usr_a", 0)] == [1]
    assert len(log.reads) == 2
