"""Forget me (docs/data.md#forgetting): the thread, the knowledge graph and pending wake notes, in one action.

The erasure holds the person's thread (no turn can write meanwhile) and keeps the
learning worker away from them (no batch read before can write facts back after). The
graph and the wake notes go first, because they live behind ports that may fail (or not
answer: they get `timeout_s`); the thread goes last, in one transaction, so a failure leaves the thread whole and the
request can simply be retried. The thread's counter restarts, so the next message opens
a fresh thread.

Kept on purpose: the person's account and their wallet. Money history (top-ups, charges
and their receipts) is a ledger's record and is never erased; the answer says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import asyncpg

from agents import Knowledge
from chat.learning import Learning
from chat.threads import Threads

KEPT = "Your account and your wallet are kept: money history (top-ups, charges and their receipts) is never erased."

# What the answer counts, read under the same transaction as the deletes below.
_COUNTS: tuple[tuple[str, str], ...] = (
    ("messages", "SELECT count(*) FROM messages WHERE person_id = $1"),
    ("runs", "SELECT count(*) FROM runs WHERE person_id = $1"),
    ("run_events", "SELECT count(*) FROM run_events e JOIN runs r ON r.id = e.run_id WHERE r.person_id = $1"),
    ("run_calls", "SELECT count(*) FROM run_calls WHERE person_id = $1"),
    ("events", "SELECT count(*) FROM events WHERE person_id = $1"),
)
# Runs go first: deleting a run deletes its tool events, model-call records and the
# messages it wrote; the person's own messages follow.
_DELETES: tuple[str, ...] = (
    "DELETE FROM runs WHERE person_id = $1",
    "DELETE FROM messages WHERE person_id = $1",
    "DELETE FROM events WHERE person_id = $1",
    "DELETE FROM knowledge_cursors WHERE person_id = $1",
    "UPDATE threads SET last_seq = 0 WHERE person_id = $1",
)


# How the summary names each count, for the person reading it.
_SAID = {
    "messages": "messages",
    "runs": "agent runs",
    "run_events": "tool calls",
    "run_calls": "model-call records",
    "events": "live events",
    "knowledge_nodes": "people, places and things you mentioned",
    "knowledge_edges": "facts about you",
    "wake_notes": "pending wake notes",
}


class PendingWakes(Protocol):
    """Cancels a person's pending wake notes (and their queued deliveries); how many."""

    async def __call__(self, person_id: str) -> int: ...


async def no_wakes(person_id: str) -> int:
    """Until reminders exist there is nothing to cancel."""
    return 0


@dataclass(frozen=True, slots=True)
class Erased:
    counts: dict[str, int]

    def as_json(self) -> dict[str, Any]:
        said = ", ".join(f"{n} {_SAID.get(name, name.replace('_', ' '))}" for name, n in self.counts.items())
        return {"erased": dict(self.counts), "kept": KEPT, "summary": f"Erased {said}."}


class Forgetting:
    def __init__(
        self,
        *,
        pool: asyncpg.Pool,
        threads: Threads,
        learning: Learning,
        knowledge: Knowledge,
        cancel_wakes: PendingWakes = no_wakes,
        settle: Callable[[], Awaitable[int]] | None = None,
        wait_s: float,
        timeout_s: float,
    ) -> None:
        self._pool = pool
        self._threads = threads
        self._learning = learning
        self._knowledge = knowledge
        self._cancel_wakes = cancel_wakes
        self._settle = settle
        self._wait_s = wait_s
        self._timeout_s = timeout_s

    async def forget(self, person_id: str) -> Erased:
        async with (
            self._threads.turn(person_id, wait_s=self._wait_s),
            # A batch being learned (at most its own timeout) is waited for, within bounds.
            self._learning.holding(person_id, wait_s=min(self._wait_s, self._timeout_s)),
        ):
            # Bounded: the person's thread is held meanwhile. A timeout erases nothing more.
            async with asyncio.timeout(self._timeout_s):
                graph = await self._knowledge.forget(person_id=person_id)
                wakes = await self._cancel_wakes(person_id)
            if self._settle is not None:
                await self._settle()  # every completed model call is charged before its record goes
            thread = await self._erase_thread(person_id)
            self._threads.forgotten(person_id)
        return Erased(
            {
                **thread,
                "knowledge_nodes": graph.nodes,
                "knowledge_edges": graph.edges,
                "wake_notes": wakes,
            }
        )

    async def _erase_thread(self, person_id: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        async with self._pool.acquire() as conn, conn.transaction():
            for name, sql in _COUNTS:
                counts[name] = int(await conn.fetchval(sql, person_id))
            for sql in _DELETES:
                await conn.execute(sql, person_id)
        return counts
