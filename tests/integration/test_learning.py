"""The learning worker: a backlog written while no worker ran is learned when one starts,
the cursor makes a second worker carry on instead of starting over, and a batch that keeps
failing is retried a bounded number of times and then skipped."""

from __future__ import annotations

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
