"""A turn's statements run on the connection that holds the person's thread lock
(database.TurnPool), not on a connection checked out per statement; outside a turn, and
once the turn has ended, the stores use the pool as before. And the learning worker
waits for a person's turn to end before reading what it wrote."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import asyncpg

from agents import KnowledgeMessage
from chat import EventHub, Learning, People, Threads
from database import Listener, TurnPool, create_pool, holding

_BACKEND_SQL = "SELECT pg_backend_pid()"


async def test_a_turns_statements_run_on_its_lock_connection(pool: asyncpg.Pool, database_url: str) -> None:
    lock_pool = await create_pool(database_url, size_max=2)
    try:
        turn_pool = TurnPool(pool).as_pool()
        threads = Threads(turn_pool, lock_pool=lock_pool, hold=holding)
        person, _ = await People(pool, default_time_zone="UTC").sign_in_local("Budi")
        outside = await turn_pool.fetchval(_BACKEND_SQL)
        async with threads.turn(person.id, wait_s=5):
            assert threads.busy(person.id)
            inside = {await turn_pool.fetchval(_BACKEND_SQL) for _ in range(5)}
            # Tasks the turn starts (a detached charge) inherit its connection.
            inside.add(await asyncio.ensure_future(turn_pool.fetchval(_BACKEND_SQL)))
            message = await threads.append(person.id, author="human", text="hello", channel="text")
            assert len(inside) == 1
            held = inside.pop()
            # The thread's lock is held by the very connection the statements use.
            holders = await pool.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1", held
            )
            assert holders == 1
        assert not threads.busy(person.id)
        # Outside the turn, and after it, statements go to the pool (the lock's pool is another).
        assert held != outside
        assert await turn_pool.fetchval(_BACKEND_SQL) != held
        page = await threads.page(person.id, before=None, after=None, limit=10)
        assert [m.id for m in page] == [message.id]
    finally:
        await lock_pool.close()


async def test_a_statement_still_running_when_the_turn_ends_is_waited_for(pool: asyncpg.Pool) -> None:
    turn_pool = TurnPool(pool).as_pool()
    async with pool.acquire() as conn:
        async with holding(conn):
            slow = asyncio.ensure_future(turn_pool.fetchval("SELECT pg_sleep(0.2)::text || pg_backend_pid()"))
            await asyncio.sleep(0.05)
        # Leaving `holding` waited for it: the connection is free again.
        assert slow.done()
        assert await conn.fetchval("SELECT 1") == 1


class Recording:
    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    async def ingest(self, *, person_id: str, person_name: str, messages: Sequence[KnowledgeMessage]) -> None:
        self.batches.append([m.text for m in messages])


async def test_learning_waits_for_the_turn_to_end(pool: asyncpg.Pool, database_url: str) -> None:
    threads = Threads(pool)
    person, _ = await People(pool, default_time_zone="UTC").sign_in_local("Budi")
    recording = Recording()
    learning = Learning(pool=pool, knowledge=recording, busy=threads.busy, poll_s=3600)  # type: ignore[arg-type]
    threads.on_idle(learning.turn_ended)
    listener = Listener(database_url)
    hub = EventHub(listener)
    await listener.start()
    await learning.start(hub)
    try:
        await asyncio.sleep(0.3)  # the first full pass (nothing to learn yet)
        async with threads.turn(person.id, wait_s=5):
            await threads.append(person.id, author="human", text="my favourite food is rendang", channel="text")
            await asyncio.sleep(0.5)  # notified, yet not read while the turn runs
            assert recording.batches == []
        async with asyncio.timeout(5):
            while not recording.batches:
                await asyncio.sleep(0.05)
        assert recording.batches == [["my favourite food is rendang"]]
    finally:
        await learning.stop()
        await listener.stop()
