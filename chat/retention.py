"""Retention: the records that grow with use and are not the thread or the ledger, pruned by
the serving process itself, every `RETENTION_INTERVAL_S` (docs/data.md#retention).

A year of use writes about 6.5 live events per turn, a tool record per tool call and a
model-call record per model call; none of them is history a person or a model reads again
once it has done its job, and left alone they outgrow the thread they describe (SPEC §2:
everything that grows with use has a bound or a retention that runs by itself). What each
window keeps, and why that is enough:

- live events (`events`): `EVENTS_KEEP_S` (7 days). This is the resume window: a client
  that comes back with a `Last-Event-ID` within it misses nothing; one that was away longer
  gets what is left after its id and reloads the thread, which is kept.
- tool records (`run_events`): `TOOL_RECORDS_KEEP_S` (90 days), for audits of what an
  agent did; the run itself (who, when, usage, cost) is kept with the thread.
- model-call records (`run_calls`): `CALL_RECORDS_KEEP_S` (30 days), and only those
  already charged. A charge's receipt lives in the ledger (kept for ever), and a call not
  yet charged is the sweep's to settle (chat.recovery), so its record is never pruned.
- past wake notes and settled risky actions: the lower domains' own pruners, passed in by
  the composition root (they own those tables).
- expired sessions, door tickets and limit rows: already deleted as they appear, by the
  writers that meet them; this pass sweeps them too, so an idle server holds none.

The learning cursors are one row per person (bounded by people, not by time) and are kept:
deleting one would make learning read the whole thread again.

Each table is pruned in batches of `PRUNE_BATCH` rows per statement, so a pass never holds
many row locks or a long transaction beside the turns; a pass that meets the database gone
logs one line and waits for the next.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import asyncpg

log = logging.getLogger("avagenc")

# Rows deleted per statement (each its own short transaction).
PRUNE_BATCH = 5_000
# Batches per table per pass: a backlog larger than this is finished by the next passes.
PRUNE_BATCHES_MAX = 200
# The first pass runs this soon after startup (or after the interval, if shorter): an
# instance scaled to zero between requests may never live a whole interval.
FIRST_PASS_S = 60.0

# Each deletes at most $2 rows older than $1 seconds; a BRIN index on the time column
# (chat/sql/0080_retention.sql) finds them without reading the table.
_EVENTS_SQL = """
DELETE FROM events WHERE id IN (
    SELECT id FROM events WHERE created_at < now() - make_interval(secs => $1) LIMIT $2)
"""
_TOOL_RECORDS_SQL = """
DELETE FROM run_events WHERE (run_id, idx) IN (
    SELECT run_id, idx FROM run_events WHERE created_at < now() - make_interval(secs => $1) LIMIT $2)
"""
# Only charged calls: an uncharged one is the sweep's to charge, however old it is.
_CALL_RECORDS_SQL = """
DELETE FROM run_calls WHERE (run_id, idx) IN (
    SELECT run_id, idx FROM run_calls
    WHERE at < now() - make_interval(secs => $1) AND cost_micros IS NOT NULL LIMIT $2)
"""
_EXPIRED_SQL = (
    "DELETE FROM revoked_sessions WHERE expires_at < now()",
    "DELETE FROM door_tickets WHERE expires_at < now()",
    "DELETE FROM limit_windows WHERE ends_at < now()",
    "DELETE FROM limit_leases WHERE expires_at < now()",
)

# A lower domain's pruner: deletes one batch of its own expired rows, returns how many.
Pruner = Callable[[int], Awaitable[int]]


@dataclass(frozen=True, slots=True)
class Keep:
    """How long each kind of record is kept, in seconds."""

    events_s: float = 7 * 86_400
    tool_records_s: float = 90 * 86_400
    call_records_s: float = 30 * 86_400


async def _deleted(pool: asyncpg.Pool, sql: str, *args: object) -> int:
    status: str = await pool.execute(sql, *args)
    return int(status.split()[-1])


class Retention:
    """Prunes every `interval_s`: its own tables by `keep`, and each of `pruners` (by name)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        keep: Keep,
        interval_s: float,
        pruners: Mapping[str, Pruner] | None = None,
    ) -> None:
        self._pool = pool
        self.keep = keep
        self.interval_s = interval_s
        self._pruners: dict[str, Pruner] = {
            "events": lambda n: _deleted(pool, _EVENTS_SQL, keep.events_s, n),
            "tool_records": lambda n: _deleted(pool, _TOOL_RECORDS_SQL, keep.tool_records_s, n),
            "call_records": lambda n: _deleted(pool, _CALL_RECORDS_SQL, keep.call_records_s, n),
            **(pruners or {}),
        }
        self._failing = False
        self.passes = 0

    async def prune(self) -> Pruned:
        """One pass: every table in batches until it has nothing older than its window."""
        pruned = Pruned()
        for name, prune in self._pruners.items():
            total = 0
            for _ in range(PRUNE_BATCHES_MAX):
                deleted = await prune(PRUNE_BATCH)
                total += deleted
                if deleted < PRUNE_BATCH:
                    break
                await asyncio.sleep(0)  # let the turns in between
            if total:
                pruned.deleted[name] = total
        expired = 0
        for sql in _EXPIRED_SQL:
            expired += await _deleted(self._pool, sql)
        if expired:
            pruned.deleted["expired"] = expired
        self.passes += 1
        return pruned

    async def run(self) -> None:
        """Prune soon after startup, then every `interval_s` until cancelled; a pass that fails
        is logged and retried."""
        wait_s = min(FIRST_PASS_S, self.interval_s)
        while True:
            await asyncio.sleep(wait_s)
            wait_s = self.interval_s
            try:
                pruned = await self.prune()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                if not self._failing:
                    log.warning("retention cannot reach the database (%s); retrying", type(exc).__name__)
                self._failing = True
                continue
            except Exception:
                log.exception("retention failed; retrying")
                continue
            self._failing = False
            if pruned.deleted:
                log.info("retention pruned %s", ", ".join(f"{n} {k}" for k, n in pruned.deleted.items()))


@dataclass(slots=True)
class Pruned:
    """What one pass deleted, per table (only those it deleted from)."""

    deleted: dict[str, int] = field(default_factory=dict)
