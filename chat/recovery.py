"""What a crash or an outage left behind, settled by the running server, every few seconds.

A process that dies mid-turn, or a database that goes away mid-turn, leaves runs marked
`running`, model calls not charged (recorded without a cost, or not recorded at all and
kept in a process's outbox, chat.outbox) and a person's message that no run answers. All
are the chat's own records, so putting them right is the chat's job. It used to be done
once, when a server started; an outage the server lived through then stayed unsettled
until the next restart. Now the server's own sweep does it at startup and then every
`SWEEP_INTERVAL_S` for as long as it serves (docs/money.md#charging), and the same
invariants hold after each pass:

- a run left `running` where no live turn holds the thread is failed (`abandoned`): another
  server process sharing the database may be running it right now, and then its turn
  holds the thread;
- every call and voice slice in this process's outbox whose charge failed, every one in
  the outbox file of a process that is gone, and every call recorded without a cost is
  charged, with its ref, so once and only once;
- a person's message of the last day that no run answers is answered (or, on an empty
  wallet, given a short reply of ours saying why), under the person's thread, so a retry
  of the same message and the sweep answer it once between them.

Only a serving process sweeps (a read-only command never writes). A pass that meets the
database still gone logs one line and waits for the next.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import asyncpg

from chat.errors import ThreadBusy
from chat.people import People
from chat.runs import Runs
from chat.threads import Threads
from chat.turns import Turns
from chat.wallet import Wallet

log = logging.getLogger("avagenc")

# A call recorded within this is left to the turn charging it (its books write the charge
# milliseconds after the record); an older one was left by an outage or a crash.
IN_FLIGHT_S = 10.0
# A message younger than this is left to the turn that wrote it (it holds the thread until
# its run has started, so the sweep would only wait for it).
_UNANSWERED_AGE_S = 2.0
# How far back the sweep looks for messages nobody answered, and how many it answers a pass.
_UNANSWERED_HORIZON_S = 86_400.0
_UNANSWERED_MAX = 20
# How long the sweep waits for a person's thread before leaving their message to the next pass.
_THREAD_WAIT_S = 1.0
_UNANSWERED_SQL = """
SELECT m.person_id, m.id FROM messages AS m
WHERE m.author = 'human'
  AND m.created_at > clock_timestamp() - make_interval(secs => $1)
  AND m.created_at < clock_timestamp() - make_interval(secs => $2)
  AND NOT EXISTS (SELECT FROM runs AS r WHERE r.origin_message_id = m.id)
ORDER BY m.created_at
LIMIT $3
"""


@dataclass(frozen=True, slots=True)
class Swept:
    abandoned: int = 0
    charged: int = 0
    answered: int = 0


async def fail_abandoned_runs(threads: Threads, runs: Runs, pool: asyncpg.Pool) -> int:
    """Runs left `running` by a crash are failed, but only where no live turn holds the
    thread: another server process sharing the database may be running them right now."""
    failed = 0
    # Read before the connection below is taken: one connection at a time, never two.
    running = await runs.people_with_running()
    if not running:
        return 0
    async with pool.acquire() as conn:
        for person_id in running:
            # A turn of this process may have lost the thread's lock with its connection
            # (an outage) and still be finishing its runs: left to it.
            if threads.busy(person_id):
                continue
            if await threads.is_idle(conn, person_id):
                try:
                    failed += len(await runs.abandon(conn, person_id))
                finally:
                    await threads.release(conn, person_id)
    return failed


class Sweeper:
    """The running server's sweep: once at startup (`settle`), then every `interval_s`
    (`run`) until it is stopped."""

    def __init__(
        self,
        *,
        threads: Threads,
        runs: Runs,
        wallet: Wallet,
        turns: Turns,
        people: People,
        pool: asyncpg.Pool,
        interval_s: float,
    ) -> None:
        self._threads = threads
        self._runs = runs
        self._wallet = wallet
        self._turns = turns
        self._people = people
        self._pool = pool
        self.interval_s = interval_s
        self._failing = False  # the last pass met an outage: said once, not every pass

    async def settle(self, *, in_flight_s: float = IN_FLIGHT_S) -> Swept:
        """Fail abandoned runs and charge every call not charged (startup's part: quick,
        and done before the server serves), but those recorded within `in_flight_s`."""
        charged = await self._wallet.settle_outbox()
        abandoned = await fail_abandoned_runs(self._threads, self._runs, self._pool)
        # A call recorded a moment ago is most likely being charged by its own turn right
        # now: charging it here too would be harmless (one ref, one charge) but would be
        # reported as a leftover that never was.
        recent = datetime.now(UTC) - timedelta(seconds=in_flight_s)
        charged += await self._wallet.settle_uncharged(returned_before=recent if in_flight_s > 0 else None)
        return Swept(abandoned=abandoned, charged=charged)

    async def sweep(self) -> Swept:
        """One whole pass: `settle`, then answer the messages no run answers."""
        settled = await self.settle()
        answered = 0
        for row in await self._pool.fetch(_UNANSWERED_SQL, _UNANSWERED_HORIZON_S, _UNANSWERED_AGE_S, _UNANSWERED_MAX):
            person = await self._people.get(row["person_id"])
            if person is None:
                continue
            try:
                if await self._turns.answer(person, row["id"], zone=ZoneInfo(person.time_zone), wait_s=_THREAD_WAIT_S):
                    answered += 1
            except ThreadBusy:
                continue  # a turn of theirs is running: the next pass looks again
        return Swept(abandoned=settled.abandoned, charged=settled.charged, answered=answered)

    async def run(self) -> None:
        """Sweep every `interval_s` until cancelled; a pass that fails is logged and retried."""
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                swept = await self.sweep()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                if not self._failing:
                    log.warning("the sweep cannot reach the database (%s); retrying", type(exc).__name__)
                self._failing = True
                continue
            except Exception:
                log.exception("the sweep failed; retrying")
                continue
            if self._failing:
                log.info("the sweep reaches the database again")
                self._failing = False
            _report(swept)


def _report(swept: Swept) -> None:
    if swept.abandoned:
        log.warning("marked %d abandoned runs as failed", swept.abandoned)
    if swept.charged:
        log.warning("charged %d model calls an outage or a crash had left uncharged", swept.charged)
    if swept.answered:
        log.warning("answered %d messages an outage had left without a run", swept.answered)


async def settle_crash(sweeper: Sweeper) -> None:
    """At startup: fail the runs a crash abandoned and charge the model calls it left
    uncharged, however recent (no turn of this process is charging them)."""
    _report(await sweeper.settle(in_flight_s=0))
