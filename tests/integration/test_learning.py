"""The learning worker: a backlog written while no worker ran is learned when one starts,
the cursor makes a second worker carry on instead of starting over, and a batch that keeps
failing is retried a bounded number of times and then skipped."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import asyncpg
import pytest

from agents import KnowledgeError, KnowledgeMessage, LocalKnowledge, RuleExtractor
from chat import Learning, People, Threads


class Recording:
    """A Knowledge stand-in that records batches and fails while told to (ingest only)."""

    def __init__(self, failures: int = 0) -> None:
        self.batches: list[list[str]] = []
        self.failures = failures

    async def ingest(self, *, person_id: str, person_name: str, messages: Sequence[KnowledgeMessage]) -> None:
        if self.failures:
            self.failures -= 1
            raise KnowledgeError("down")
        self.batches.append([m.text for m in messages])


async def _person(pool: asyncpg.Pool, name: str) -> str:
    person, _ = await People(pool, default_time_zone="UTC").sign_in_local(name)
    return person.id


async def test_a_backlog_is_learned_and_the_cursor_carries_over(pool: asyncpg.Pool, database_url: str) -> None:
    threads = Threads(pool)
    budi = await _person(pool, "Budi")
    await threads.append(budi, author="human", text="my favourite food is rendang", channel="text")
    await threads.append(budi, author="human", text="I live in Bandung", channel="text")
    knowledge = LocalKnowledge(pool, extractor=RuleExtractor())
    first = Learning(pool=pool, knowledge=knowledge, batch_max=1)
    assert await first.drain() == 2
    graph = await knowledge.graph(person_id=budi)
    assert sorted(e.text for e in graph.edges) == ["Budi lives in Bandung", "Budi's favourite food is rendang"]

    await threads.append(budi, author="human", text="I work at Gojek", channel="text")
    recording = Recording()
    second = Learning(pool=pool, knowledge=recording)  # type: ignore[arg-type]
    assert await second.drain() == 1
    assert recording.batches == [["I work at Gojek"]]
    assert await second.drain() == 0


@pytest.mark.parametrize(("failures", "learned"), [(2, True), (3, False)])
async def test_a_failing_batch_is_retried_then_skipped(
    pool: asyncpg.Pool, database_url: str, failures: int, learned: bool
) -> None:
    sari = await _person(pool, "Sari")
    await Threads(pool).append(sari, author="human", text="I'm allergic to peanuts", channel="text")
    recording = Recording(failures=failures)
    learning = Learning(pool=pool, knowledge=recording, failures_max=3)  # type: ignore[arg-type]
    for _ in range(failures):
        await learning.drain()
    await learning.drain()
    assert recording.batches == ([["I'm allergic to peanuts"]] if learned else [])
    cursor = await pool.fetchval("SELECT last_seq FROM knowledge_cursors WHERE person_id = $1", sari)
    assert cursor == 1


_WAITING_SQL = "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)"


async def test_catch_up_waits_for_the_worker_already_learning_that_person(
    pool: asyncpg.Pool, database_url: str
) -> None:
    """A question right after a fact: the worker may hold the person at that moment. Catching
    up waits for it (within its bound) instead of answering before the fact is known."""
    nay = await _person(pool, "Nay")
    await Threads(pool).append(nay, author="human", text="my favourite food is rendang", channel="text")
    recording = Recording()
    learning = Learning(pool=pool, knowledge=recording)  # type: ignore[arg-type]
    worker = await pool.acquire()  # the worker, holding this person mid-ingest
    try:
        assert await worker.fetchval("SELECT pg_try_advisory_lock(hashtextextended('knowledge:' || $1, 0))", nay)
        waiting = asyncio.create_task(learning.catch_up(nay, timeout_s=30))
        for _ in range(200):  # until catch-up waits on the lock, or has given up on it
            if waiting.done() or await pool.fetchval(_WAITING_SQL):
                break
            await asyncio.sleep(0.05)
        assert not waiting.done(), "caught up at once, before the worker let go of the person"
        await worker.execute("SELECT pg_advisory_unlock(hashtextextended('knowledge:' || $1, 0))", nay)
        assert await waiting == 1
    finally:
        await pool.release(worker)
    assert recording.batches == [["my favourite food is rendang"]]


class Statements:
    """Every statement the connections of some pools send while `counting` (asyncpg's query
    loggers), by pool: asyncpg's reset on handing a connection back is one of them."""

    def __init__(self) -> None:
        self.sent: dict[str, list[str]] = {}

    async def watch(self, name: str, pool: asyncpg.Pool) -> None:
        held = [await pool.acquire() for _ in range(pool.get_max_size())]
        for conn in held:
            conn.add_query_logger(lambda record, name=name: self.sent.setdefault(name, []).append(record.query))
        for conn in held:
            await pool.release(conn)
        await asyncio.sleep(0)  # loggers run from call_soon: the check-ins above land now
        self.sent.clear()

    async def taken(self) -> dict[str, list[str]]:
        await asyncio.sleep(0)
        sent, self.sent = self.sent, {}
        return sent


async def test_a_pass_that_finds_nothing_new_is_one_statement_and_takes_no_lock(database_url: str) -> None:
    """Most of the worker's passes find nothing new (issue 24: about 2.4 a turn): each is the
    one backlog check on a connection handed back without a reset, not a try-lock, a cursor
    read, an unlock and the pool's reset. With a backlog the pass still learns it, once."""
    from database import create_pool

    pool = await create_pool(database_url, size_max=2)
    reads = await create_pool(database_url, size_max=1, single_statements=True)
    try:
        mira = await _person(pool, "Mira")
        await Threads(pool).append(mira, author="human", text="I live in Jakarta", channel="text")
        recording = Recording()
        learning = Learning(pool=pool, knowledge=recording, reads=reads)  # type: ignore[arg-type]
        statements = Statements()
        await statements.watch("statements", pool)
        await statements.watch("reads", reads)

        assert await learning.catch_up(mira, timeout_s=30) == 1
        learned = await statements.taken()
        # The backlog seen; the batch reached the thread's last message: no pass after it.
        assert len(learned["reads"]) == 1
        assert sum("pg_advisory_lock" in q for q in learned["statements"]) == 1

        assert await learning.catch_up(mira, timeout_s=30) == 0
        empty = await statements.taken()
        assert list(empty) == ["reads"] and len(empty["reads"]) == 1, empty  # no lock, no reset
        assert "knowledge_cursors" in empty["reads"][0]
        assert recording.batches == [["I live in Jakarta"]]

        # A thread longer than a batch: passes follow each other until its end.
        threads = Threads(pool)
        for text in ("I work at Gojek", "I have a cat", "my sister is Rina"):
            await threads.append(mira, author="human", text=text, channel="text")
        two_at_a_time = Learning(pool=pool, knowledge=recording, batch_max=2, reads=reads)  # type: ignore[arg-type]
        assert await two_at_a_time.catch_up(mira, timeout_s=30) == 3
        assert recording.batches[1:] == [["I work at Gojek", "I have a cat"], ["my sister is Rina"]]
        assert len((await statements.taken())["reads"]) == 1  # before the first batch only
    finally:
        await reads.close()
        await pool.close()
