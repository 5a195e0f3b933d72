"""The `ThreadStore` port's contract: `Threads` (PostgreSQL) and `MemoryThreads`."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from chat.errors import ThreadBusy
from tests.contract.conftest import Stores


async def person(stores: Stores, name: str = "Budi") -> str:
    found, _ = await stores.people.sign_in_local(name)
    return found.id


async def test_messages_are_numbered_in_order_and_kept_as_written(stores: Stores) -> None:
    me = await person(stores)
    first = await stores.threads.append(me, author="human", text="hello", channel="text", client_id="c-1")
    run = await stores.runs.start(
        me,
        agent="ava",
        trigger="human",
        parent_run_id=None,
        trigger_message_id=first.id,
        origin_message_id=first.id,
        channel="voice",
    )
    second = await stores.threads.append(
        me, author="ava", text="Hi!", channel="voice", emotions=["happy"], run_id=run.id
    )
    assert (first.seq, second.seq) == (1, 2)
    assert (second.author, second.text, second.channel, second.emotions) == ("ava", "Hi!", "voice", ("happy",))
    assert first.client_id == "c-1" and first.id != second.id and second.run_id == run.id
    assert first.created_at.tzinfo is not None
    page = await stores.threads.page(me, before=None, after=None, limit=10)
    assert [m.id for m in page] == [first.id, second.id]


async def test_pages_go_back_with_before_and_forward_with_after(stores: Stores) -> None:
    me = await person(stores)
    for n in range(1, 6):
        await stores.threads.append(me, author="human", text=f"m{n}", channel="text")

    async def texts(before: int | None, after: int | None, limit: int) -> list[str]:
        return [m.text for m in await stores.threads.page(me, before=before, after=after, limit=limit)]

    assert await texts(None, None, 2) == ["m4", "m5"]
    assert await texts(4, None, 2) == ["m2", "m3"]
    assert await texts(None, 1, 2) == ["m2", "m3"]
    assert await texts(None, 5, 10) == []
    assert await texts(1, None, 10) == []


async def test_threads_are_per_person(stores: Stores) -> None:
    me, other = await person(stores, "Budi"), await person(stores, "Sari")
    await stores.threads.append(me, author="human", text="mine", channel="text", client_id="same")
    theirs = await stores.threads.append(other, author="human", text="theirs", channel="text", client_id="same")
    assert theirs.seq == 1
    assert [m.text for m in await stores.threads.page(other, before=None, after=None, limit=10)] == ["theirs"]
    found = await stores.threads.by_client_id(other, "same")
    assert found is not None and found.id == theirs.id
    assert await stores.threads.by_client_id(other, "unknown") is None


async def test_a_turn_is_its_origin_and_what_its_runs_wrote(stores: Stores) -> None:
    me = await person(stores)
    origin = await stores.threads.append(me, author="human", text="turn on the light", channel="text")
    run = await stores.runs.start(
        me,
        agent="ava",
        trigger="human",
        parent_run_id=None,
        trigger_message_id=origin.id,
        origin_message_id=origin.id,
        channel="text",
    )
    await stores.threads.append(me, author="human", text="unrelated", channel="text")
    reply = await stores.threads.append(me, author="ava", text="@zee", channel="text", run_id=run.id)
    turn = await stores.threads.of_turn(me, origin.id, [run.id])
    assert [m.id for m in turn] == [origin.id, reply.id]


async def test_turns_of_one_person_queue_and_other_people_do_not_wait(stores: Stores) -> None:
    me, other = await person(stores, "Budi"), await person(stores, "Sari")
    order: list[str] = []
    first_in = asyncio.Event()
    release = asyncio.Event()

    async def first() -> None:
        async with stores.threads.turn(me, wait_s=5):
            order.append("first in")
            first_in.set()
            await release.wait()
            order.append("first out")

    async def second() -> None:
        async with stores.threads.turn(me, wait_s=5):
            order.append("second in")

    one = asyncio.create_task(first())
    await first_in.wait()
    two = asyncio.create_task(second())
    async with asyncio.timeout(5), stores.threads.turn(other, wait_s=1):
        order.append("other person")
    release.set()
    await asyncio.gather(one, two)
    assert order == ["first in", "other person", "first out", "second in"]


async def test_a_turn_that_waits_too_long_is_refused_as_busy(stores: Stores) -> None:
    me = await person(stores)
    holding = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with stores.threads.turn(me, wait_s=5):
            holding.set()
            await release.wait()

    task = asyncio.create_task(holder())
    await holding.wait()
    with pytest.raises(ThreadBusy):
        async with stores.threads.turn(me, wait_s=0.2):
            pytest.fail("the thread was held")
    release.set()
    await task
    async with stores.threads.turn(me, wait_s=1):
        pass  # given back after the refusal


async def test_an_agents_message_needs_its_run_and_a_persons_message_has_none(stores: Stores) -> None:
    me = await person(stores)
    with pytest.raises((AssertionError, asyncpg.CheckViolationError)):
        await stores.threads.append(me, author="ava", text="no run", channel="text")
    assert await stores.threads.page(me, before=None, after=None, limit=10) == []


async def test_the_recent_page_is_the_newest_page_whoever_wrote(stores: Stores) -> None:
    me = await person(stores)
    for n in range(1, 5):
        await stores.threads.append(me, author="human", text=f"m{n}", channel="text")
    first = await stores.threads.recent(me, limit=3)
    assert [m.text for m in first.messages] == ["m2", "m3", "m4"]
    first.memo("ctx")[first.messages[-1].id] = "line"
    for n in range(5, 7):
        await stores.threads.append(me, author="human", text=f"m{n}", channel="text")
    again = await stores.threads.recent(me, limit=3)
    assert [m.text for m in again.messages] == ["m4", "m5", "m6"]
    assert again.messages == await stores.threads.page(me, before=None, after=None, limit=3)
    assert again.memo("another context") == {}  # a memo is only ever for the context it was made in


async def test_a_turn_is_alone_until_another_of_the_same_person_waits(stores: Stores) -> None:
    me, other = await person(stores, "Budi"), await person(stores, "Sari")
    inside = asyncio.Event()
    release = asyncio.Event()
    seen: list[bool] = []

    async def first() -> None:
        async with stores.threads.turn(me, wait_s=5):
            seen.append(stores.threads.alone(me))
            inside.set()
            await release.wait()
            seen.append(stores.threads.alone(me))  # the second waits meanwhile

    one = asyncio.create_task(first())
    await inside.wait()
    two = asyncio.create_task(_hold_briefly(stores, me))
    async with stores.threads.turn(other, wait_s=1):
        assert stores.threads.alone(other), "another person's turn does not count"
    await asyncio.sleep(0.05)  # the second turn is waiting now
    release.set()
    await asyncio.gather(one, two)
    assert seen == [True, False]


async def _hold_briefly(stores: Stores, person_id: str) -> None:
    async with stores.threads.turn(person_id, wait_s=5):
        pass
