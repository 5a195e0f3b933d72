"""Learning: every thread message reaches the knowledge graph, off the reply's path.

A background worker hands each person's new messages, in `seq` order and in bounded
batches, to the `Knowledge` port, then moves the person's durable cursor past them. It
wakes on the thread's own NOTIFY (every message writes an event, and the notification
names the person, so only that person is read) and also polls everyone with a backlog,
at start and every `poll_s`, so a missed notification costs only latency, and a backlog left by a crash or a restart is
simply the distance between the thread's `last_seq` and the cursor. A turn never waits
for it: the person's message is written before any run starts, so it is learned whether
the run that followed succeeded or failed.

It never competes with a reply: a person whose turn is waiting or running in this process
is skipped when a notification names them (a turn writes a dozen events) and read once
their last turn has ended (`Threads.on_idle`), after a short settling pause that lets the
reply go out first and gathers a turn's notifications into one pass.

Most passes find nothing new (a turn's own notifications, a recall's catch-up, the read
after a batch), so a pass first asks, in one statement on a connection that needs no reset,
whether the thread has gone past the person's cursor, and takes the lock only when it has:
an empty pass is one round trip instead of four (the try-lock, the cursor, the unlock and
the pool's reset; BENCHMARKS.md, issue 24). That read only saves work: what is learned is
still decided under the lock, so a message it misses (written just after) is announced by
its own notification and read by the next pass. For the same reason a pass that reached
the thread's last message as it stood is not followed by another one to find nothing.

Each person's batch runs under a per-person advisory lock (skipped, not waited for,
when another process holds it); forgetting a person takes the same lock, so no batch
read before the erasure can write facts back after it. A batch that keeps failing is
retried a bounded number of times and then skipped, so one unreadable message cannot
stop a person's learning for good.

When a model reads the messages (the Gemini extractor), its call is charged to the person
(docs/money.md#learning) before the cursor moves past the batch, named by the batch's first
message: a crash between the charge and the cursor, or a retry, reads the batch again and
is charged once. On an empty wallet the batch is skipped unread (no model call, nothing
charged), as a turn would be refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

import asyncpg

from agents import ExtractionFailed, Knowledge, KnowledgeMessage, ModelSpend
from chat.errors import ThreadBusy
from chat.events import Conn, EventHub
from chat.wallet import Wallet

log = logging.getLogger(__name__)

_PENDING_SQL = """
SELECT t.person_id FROM threads t LEFT JOIN knowledge_cursors c USING (person_id)
WHERE t.last_seq > coalesce(c.last_seq, 0) ORDER BY t.person_id LIMIT $1
"""
# Whether the person's thread has gone past their cursor (a person never learned has none).
_BACKLOG_SQL = """
SELECT t.last_seq > coalesce(c.last_seq, 0) FROM threads t LEFT JOIN knowledge_cursors c USING (person_id)
WHERE t.person_id = $1
"""
_CURSOR_SQL = """
SELECT p.name, coalesce(c.last_seq, 0) AS last_seq, coalesce(c.failures, 0) AS failures, t.last_seq AS thread_seq
FROM people p JOIN threads t ON t.person_id = p.id LEFT JOIN knowledge_cursors c ON c.person_id = p.id
WHERE p.id = $1
"""
_MESSAGES_SQL = """
SELECT id, seq, author, text, created_at FROM messages WHERE person_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
"""
_ADVANCE_SQL = """
INSERT INTO knowledge_cursors (person_id, last_seq, failures) VALUES ($1, $2, $3)
ON CONFLICT (person_id) DO UPDATE SET last_seq = EXCLUDED.last_seq, failures = EXCLUDED.failures, updated_at = now()
"""
_TRY_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended('knowledge:' || $1, 0))"
_LOCK_SQL = "SELECT pg_advisory_lock(hashtextextended('knowledge:' || $1, 0))"
_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended('knowledge:' || $1, 0))"

_PEOPLE_PER_ROUND = 100
_ROUNDS_MAX = 1_000
_DUE_MAX = 10_000


class Learning:
    """The ingestion worker: `start()` once, `stop()` at shutdown; `drain()` runs one pass."""

    def __init__(
        self,
        *,
        pool: asyncpg.Pool,
        knowledge: Knowledge,
        batch_max: int = 50,
        poll_s: float = 30.0,
        retry_s: float = 5.0,
        ingest_timeout_s: float = 60.0,
        failures_max: int = 3,
        busy: Callable[[str], bool] = lambda _person_id: False,
        settle_s: float = 0.05,
        wallet: Wallet | None = None,
        reads: asyncpg.Pool | None = None,
    ) -> None:
        assert batch_max >= 1, batch_max
        assert failures_max >= 1, failures_max
        self._pool = pool
        # Where the backlog check runs: a pool that hands connections back without asyncpg's
        # reset (database.create_pool's `single_statements`) makes it one round trip.
        self._reads = reads if reads is not None else pool
        self._knowledge = knowledge
        self._batch_max = batch_max
        self._poll_s = poll_s
        self._retry_s = retry_s
        self._ingest_timeout_s = ingest_timeout_s
        self._failures_max = failures_max
        # Whether a turn of this process holds (or waits for) the person's thread.
        self._busy = busy
        self._settle_s = settle_s
        # Given when reading messages costs the person (a model reads them): charged, and
        # skipped on an empty wallet. None: learning is free (rules, or Zep's own plan).
        self._wallet = wallet
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._failing = False
        # People named by notifications since the worker last looked (bounded: past the
        # bound, the next full pass finds them anyway).
        self._due: set[str] = set()

    async def start(self, hub: EventHub) -> None:
        """Work in the background, woken by the thread's notifications on the hub's connection."""
        hub.watch(self._heard)
        self._tasks = [asyncio.create_task(self._work(), name="learning-work")]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def wake(self) -> None:
        self._wake.set()

    def turn_ended(self, person_id: str) -> None:
        """The person's last turn in this process ended: learn what it wrote (`Threads.on_idle`)."""
        self._heard(person_id)

    async def drain(self) -> int:
        """Ingest every person's backlog now; the number of messages handed on."""
        total = 0
        self._failing = False
        for _ in range(_ROUNDS_MAX):
            pending = await self._pool.fetch(_PENDING_SQL, _PEOPLE_PER_ROUND)
            progressed = 0
            for row in pending:
                # The round's own query found a backlog: no need to ask again per person.
                learned, _ = await self._drain_person(row["person_id"], checked=True)
                progressed += learned
            total += progressed
            if not progressed:
                break  # nothing left, or everyone left is busy elsewhere or failing
        return total

    async def catch_up(self, person_id: str, *, timeout_s: float) -> int:
        """Learn one person's backlog now, within `timeout_s`: a fact said a moment ago is
        known to the question that follows it, instead of a few seconds later. Returns the
        messages handed on; a slow graph only makes the answer older, never the turn fail."""
        total = 0
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                more = False
                for _ in range(_ROUNDS_MAX):
                    # Waits for the worker when it is learning this very person right now:
                    # returning at once would answer before the fact it is reading is known.
                    learned, more = await self._drain_person(person_id, wait=True, checked=more)
                    total += learned
                    if not (learned and more):
                        break
        return total

    @contextlib.asynccontextmanager
    async def holding(self, person_id: str, *, wait_s: float) -> AsyncIterator[None]:
        """Keep the worker away from one person (while their knowledge is forgotten)."""
        conn = await self._pool.acquire()
        try:
            try:
                async with asyncio.timeout(wait_s):
                    await conn.execute(_LOCK_SQL, person_id)
            except TimeoutError as exc:
                raise ThreadBusy("Your memory is being updated; try again shortly.") from exc
            try:
                yield
            finally:
                await asyncio.shield(conn.execute(_UNLOCK_SQL, person_id))
        finally:
            await self._pool.release(conn)

    async def _drain_person(self, person_id: str, *, wait: bool = False, checked: bool = False) -> tuple[int, bool]:
        """One batch of the person's, under their lock: the messages handed on, and whether
        the thread held more than the batch when it was read (else the next pass would find
        nothing: what is written later is announced by its own notification).
        `checked`: a backlog was just seen. Waiting (`wait`) for a worker mid-batch is still
        waited for: its cursor has not moved yet, so the backlog it is reading is seen."""
        if not checked and not await self._reads.fetchval(_BACKLOG_SQL, person_id):
            return 0, False  # nothing past the cursor (or no such person): no lock, no reset
        async with self._pool.acquire() as conn:
            if wait:
                # A cancelled wait leaves no lock behind: asyncpg's release resets the session's advisory locks.
                await conn.execute(_LOCK_SQL, person_id)
            elif not await conn.fetchval(_TRY_LOCK_SQL, person_id):
                return 0, False
            try:
                return await self._ingest_batch(conn, person_id)
            finally:
                await conn.execute(_UNLOCK_SQL, person_id)

    async def _ingest_batch(self, conn: Conn, person_id: str) -> tuple[int, bool]:
        state = await conn.fetchrow(_CURSOR_SQL, person_id)
        if state is None or state["last_seq"] >= state["thread_seq"]:
            return 0, False  # no such person, or nothing new
        rows = await conn.fetch(_MESSAGES_SQL, person_id, state["last_seq"], self._batch_max)
        if not rows:
            # Nothing to read below the thread's counter (its messages are gone).
            await conn.execute(_ADVANCE_SQL, person_id, state["thread_seq"], 0)
            return 0, False
        messages = [KnowledgeMessage(r["id"], r["seq"], r["author"], r["text"], r["created_at"]) for r in rows]
        if self._wallet is not None and await self._wallet.balance_micros(person_id) <= 0:
            # No model call on an empty wallet (docs/money.md#learning): the batch is passed
            # over unread rather than held, so people who never top up leave no backlog.
            log.info("learning %s skipped %d messages: the wallet is empty", person_id, len(messages))
            await conn.execute(_ADVANCE_SQL, person_id, messages[-1].seq, 0)
            return len(messages), messages[-1].seq < state["thread_seq"]
        try:
            async with asyncio.timeout(self._ingest_timeout_s):
                spent = await self._knowledge.ingest(person_id=person_id, person_name=state["name"], messages=messages)
        except Exception as exc:
            # A model that answered something unreadable was still paid for.
            await self._charge(person_id, messages, exc.spent if isinstance(exc, ExtractionFailed) else None)
            failures = state["failures"] + 1
            self._failing = True
            if failures < self._failures_max:
                log.warning("learning %s failed (%s); will retry", person_id, type(exc).__name__)
                await conn.execute(_ADVANCE_SQL, person_id, state["last_seq"], failures)
                return 0, False
            log.error("learning %s skipped %d messages after %d failures", person_id, len(rows), failures)
        else:
            # Before the cursor moves: a charge that cannot be written now leaves the batch to
            # be read (and charged, once) again.
            await self._charge(person_id, messages, spent)
        await conn.execute(_ADVANCE_SQL, person_id, messages[-1].seq, 0)
        return len(messages), messages[-1].seq < state["thread_seq"]

    async def _charge(self, person_id: str, messages: list[KnowledgeMessage], spent: ModelSpend | None) -> None:
        if self._wallet is None or spent is None:
            return
        await self._wallet.charge_extraction(
            person_id=person_id,
            first_message_id=messages[0].id,
            messages=len(messages),
            model=spent.model,
            usage=spent.usage.as_dict(),
        )

    async def _work(self) -> None:
        """Drain the people a notification named; everyone with a backlog at start and every poll."""
        loop = asyncio.get_running_loop()
        full_at = loop.time()
        while True:
            self._wake.clear()
            due, self._due = self._due, set()
            try:
                if loop.time() >= full_at:
                    await self.drain()
                    full_at = loop.time() + (self._retry_s if self._failing else self._poll_s)
                else:
                    for person_id in sorted(due):
                        if not self._busy(person_id):  # else read when the turn ends (turn_ended)
                            await self._drain_one(person_id)
                    if self._failing:
                        full_at = min(full_at, loop.time() + self._retry_s)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("learning paused: %s", type(exc).__name__)
                full_at = loop.time() + self._retry_s
            except Exception:
                # A bug must not stop learning for everyone for the rest of the process.
                log.exception("learning failed")
                full_at = loop.time() + self._retry_s
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, full_at - loop.time())):
                    await self._wake.wait()
            if self._settle_s > 0:
                # Let the reply that caused the wake-up go out, and gather the turn's notifications.
                await asyncio.sleep(self._settle_s)

    async def _drain_one(self, person_id: str) -> None:
        self._failing = False
        more = False
        for _ in range(_ROUNDS_MAX):
            # After a batch that left more behind, the backlog is known: no need to ask.
            learned, more = await self._drain_person(person_id, checked=more)
            if not (learned and more):
                return

    def _heard(self, person_id: str | None) -> None:
        # None: the hub reconnected and may have missed a notification; the next pass looks.
        if person_id is not None and len(self._due) < _DUE_MAX:
            self._due.add(person_id)
        self._wake.set()
