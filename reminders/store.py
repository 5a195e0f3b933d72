"""Wake notes in PostgreSQL: writing them within the limits, claiming due ones, and
recording what delivery did.

Every state change is one conditional UPDATE, so two processes (or a retry racing the
first attempt) can never both move a note: `pending -> delivering` is a claim with a
lease, `delivering -> delivered | failed` happens only to a claimed note, and only
`pending` notes can be cancelled. A claim whose lease ran out is somebody's crash and may
be claimed again; delivery itself is idempotent, so that costs at most a wait. The worker
holding a claim renews its lease while it works, so a slow delivery (a model that takes its
time, a thread another turn holds) is never taken from a process that lives.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import asyncpg

from reminders.errors import TooManyPending
from reminders.notes import PENDING_MAX, Note, new_note_id

_COLUMNS = """id, person_id, agent, text, due_at, time_zone, status, created_at, created_by_run_id, attempts,
run_id, outcome, preview, delivered_at, cancelled_at"""
_LOCK_PERSON_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('wakes:' || $1, 0))"
_COUNT_PENDING_SQL = "SELECT count(*) FROM wake_notes WHERE person_id = $1 AND status IN ('pending', 'delivering')"
_INSERT_SQL = f"""
INSERT INTO wake_notes (id, person_id, text, due_at, time_zone, created_by_run_id)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING {_COLUMNS}
"""
_GET_SQL = f"SELECT {_COLUMNS} FROM wake_notes WHERE id = $1"
_GET_OWN_SQL = f"SELECT {_COLUMNS} FROM wake_notes WHERE id = $1 AND person_id = $2"
_LIST_SQL = f"""
SELECT {_COLUMNS} FROM wake_notes WHERE person_id = $1 AND status = ANY($2::text[])
ORDER BY due_at, id LIMIT $3
"""
_LIST_RECENT_SQL = f"""
SELECT {_COLUMNS} FROM wake_notes WHERE person_id = $1 AND status = ANY($2::text[])
ORDER BY due_at DESC, id DESC LIMIT $3
"""
_CANCEL_SQL = f"""
UPDATE wake_notes SET status = 'cancelled', cancelled_at = clock_timestamp()
WHERE id = $1 AND person_id = $2 AND status = 'pending' RETURNING {_COLUMNS}
"""
_CANCEL_ALL_SQL = f"""
UPDATE wake_notes SET status = 'cancelled', cancelled_at = clock_timestamp()
WHERE person_id = $1 AND status = 'pending' RETURNING {_COLUMNS}
"""
# Due notes, and claims whose lease ran out, oldest first; rows another process is
# claiming right now are skipped rather than waited for.
_CLAIM_DUE_SQL = f"""
WITH due AS (
    SELECT id FROM wake_notes
    WHERE (status = 'pending' AND due_at <= clock_timestamp())
       OR (status = 'delivering' AND lease_until <= clock_timestamp())
    ORDER BY due_at LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE wake_notes AS n SET status = 'delivering', attempts = n.attempts + 1,
    lease_until = clock_timestamp() + make_interval(secs => $2)
FROM due WHERE n.id = due.id
RETURNING {", ".join("n." + c.strip() for c in _COLUMNS.split(","))}
"""
_CLAIM_ONE_SQL = f"""
UPDATE wake_notes SET status = 'delivering', attempts = attempts + 1,
    lease_until = clock_timestamp() + make_interval(secs => $2)
WHERE id = $1 AND (
    (status = 'pending' AND due_at <= clock_timestamp() + make_interval(secs => $3))
    OR (status = 'delivering' AND lease_until <= clock_timestamp())
) RETURNING {_COLUMNS}
"""
_NEXT_DUE_SQL = """
SELECT EXTRACT(EPOCH FROM (least(
    (SELECT min(due_at) FROM wake_notes WHERE status = 'pending'),
    (SELECT min(lease_until) FROM wake_notes WHERE status = 'delivering')
) - clock_timestamp()))::float8
"""
# The queue's lag for /metrics: notes due and not delivered, and how long the oldest has waited.
_BACKLOG_SQL = """
SELECT count(*)::int, coalesce(EXTRACT(EPOCH FROM (clock_timestamp() - min(due_at))), 0)::float8
FROM wake_notes WHERE status IN ('pending', 'delivering') AND due_at <= clock_timestamp()
"""
_DELIVERED_SQL = f"""
UPDATE wake_notes SET status = 'delivered', delivered_at = clock_timestamp(), lease_until = NULL,
    run_id = $2, outcome = $3, preview = $4, error = NULL
WHERE id = $1 AND status = 'delivering' RETURNING {_COLUMNS}
"""
# A claim still being worked on is held a lease longer; only the claim that took it (its
# attempt number) may renew it, so a lapsed claim someone took over stays theirs.
_RENEW_SQL = """
UPDATE wake_notes SET lease_until = clock_timestamp() + make_interval(secs => $3)
WHERE id = $1 AND status = 'delivering' AND attempts = $2 RETURNING id
"""
# A failed attempt keeps the claim but moves its lease to the retry time; the last
# allowed attempt gives up for good.
_ATTEMPT_FAILED_SQL = f"""
UPDATE wake_notes SET
    status = CASE WHEN attempts >= $3 THEN 'failed' ELSE 'delivering' END,
    lease_until = CASE WHEN attempts >= $3 THEN NULL
                       ELSE clock_timestamp() + make_interval(secs => $4::float8 * attempts) END,
    outcome = CASE WHEN attempts >= $3 THEN 'gave_up' END,
    error = $2
WHERE id = $1 AND status = 'delivering' AND attempts = $5 RETURNING {_COLUMNS}
"""
_UNQUEUED_SQL = f"""
SELECT {_COLUMNS} FROM wake_notes
WHERE status = 'pending' AND queued_at IS NULL AND due_at <= clock_timestamp() + make_interval(secs => $1)
ORDER BY due_at LIMIT $2
"""
_QUEUED_SQL = "UPDATE wake_notes SET queued_at = clock_timestamp() WHERE id = $1"
_DELETE_SQL = "DELETE FROM wake_notes WHERE id = $1"
# Past notes whose due time is older than $1 seconds, at most $2 of them (chat.retention):
# what they did is in the thread as a `postera` message and its run, which are kept.
_PRUNE_PAST_SQL = """
DELETE FROM wake_notes WHERE id IN (
    SELECT id FROM wake_notes
    WHERE status IN ('delivered', 'cancelled', 'failed') AND due_at < clock_timestamp() - make_interval(secs => $1)
    LIMIT $2)
"""
_PREVIOUS_OUTCOME_SQL = """
SELECT outcome FROM wake_notes WHERE person_id = $1 AND status = 'delivered' AND id <> $2
ORDER BY delivered_at DESC LIMIT 1
"""

UPCOMING: tuple[str, ...] = ("pending", "delivering")
PAST: tuple[str, ...] = ("delivered", "cancelled", "failed")


def _note(row: asyncpg.Record) -> Note:
    return Note(
        id=row["id"],
        person_id=row["person_id"],
        agent=row["agent"],
        text=row["text"],
        due_at=row["due_at"],
        time_zone=row["time_zone"],
        status=row["status"],
        created_at=row["created_at"],
        created_by_run_id=row["created_by_run_id"],
        attempts=row["attempts"],
        run_id=row["run_id"],
        outcome=row["outcome"],
        preview=row["preview"],
        delivered_at=row["delivered_at"],
        cancelled_at=row["cancelled_at"],
    )


class Notes:
    """The `wake_notes` table; every method is one short statement or transaction."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def backlog(self) -> tuple[int, float]:
        """Notes due and not yet delivered (on every instance), and the oldest one's wait in seconds."""
        row = await self._pool.fetchrow(_BACKLOG_SQL)
        assert row is not None
        return int(row[0]), float(row[1])

    async def add(
        self, *, person_id: str, text: str, due_at: datetime, time_zone: str, created_by_run_id: str | None
    ) -> Note:
        """Insert a pending note, refusing the person's 101st pending one."""
        async with self._pool.acquire() as conn, conn.transaction():
            # Serialises one person's writers so the count below cannot be raced past.
            await conn.execute(_LOCK_PERSON_SQL, person_id)
            pending = await conn.fetchval(_COUNT_PENDING_SQL, person_id)
            if pending >= PENDING_MAX:
                raise TooManyPending(
                    f"There are already {PENDING_MAX} pending notes; cancel one before adding another."
                )
            row = await conn.fetchrow(_INSERT_SQL, new_note_id(), person_id, text, due_at, time_zone, created_by_run_id)
        assert row is not None
        return _note(row)

    async def remove(self, note_id: str) -> None:
        """Take back a note the queue refused (it was never visible as scheduled)."""
        await self._pool.execute(_DELETE_SQL, note_id)

    async def prune_past(self, *, older_than_s: float, limit: int) -> int:
        """Delete up to `limit` delivered, cancelled or failed notes due more than `older_than_s` ago."""
        status: str = await self._pool.execute(_PRUNE_PAST_SQL, older_than_s, limit)
        return int(status.split()[-1])

    async def get(self, note_id: str) -> Note | None:
        row = await self._pool.fetchrow(_GET_SQL, note_id)
        return _note(row) if row else None

    async def get_own(self, person_id: str, note_id: str) -> Note | None:
        row = await self._pool.fetchrow(_GET_OWN_SQL, note_id, person_id)
        return _note(row) if row else None

    async def of_person(self, person_id: str, *, statuses: Sequence[str], limit: int, newest_first: bool) -> list[Note]:
        sql = _LIST_RECENT_SQL if newest_first else _LIST_SQL
        return [_note(r) for r in await self._pool.fetch(sql, person_id, list(statuses), limit)]

    async def cancel(self, person_id: str, note_id: str) -> Note | None:
        row = await self._pool.fetchrow(_CANCEL_SQL, note_id, person_id)
        return _note(row) if row else None

    async def cancel_all(self, person_id: str) -> list[Note]:
        return [_note(r) for r in await self._pool.fetch(_CANCEL_ALL_SQL, person_id)]

    async def claim_due(self, *, limit: int, lease_s: float) -> list[Note]:
        return [_note(r) for r in await self._pool.fetch(_CLAIM_DUE_SQL, limit, lease_s)]

    async def claim(self, note_id: str, *, lease_s: float, early_s: float) -> Note | None:
        """Claim one note by id, if it is due (within `early_s`) or its last claim lapsed."""
        row = await self._pool.fetchrow(_CLAIM_ONE_SQL, note_id, lease_s, early_s)
        return _note(row) if row else None

    async def seconds_to_next(self) -> float | None:
        """Seconds until the next note falls due or a lease lapses (negative: overdue)."""
        value = await self._pool.fetchval(_NEXT_DUE_SQL)
        return None if value is None else float(value)

    async def delivered(self, note_id: str, *, run_id: str | None, outcome: str, preview: str | None) -> Note | None:
        """Finish a claimed note; None when it was not (still) claimed: someone else finished it."""
        row = await self._pool.fetchrow(_DELIVERED_SQL, note_id, run_id, outcome, preview)
        return _note(row) if row else None

    async def renew(self, note_id: str, *, attempt: int, lease_s: float) -> bool:
        """Hold claim number `attempt` for `lease_s` more; False when it is no longer held
        (finished, or taken over after it lapsed)."""
        return await self._pool.fetchval(_RENEW_SQL, note_id, attempt, lease_s) is not None

    async def attempt_failed(
        self, note_id: str, *, attempt: int, error: str, attempts_max: int, backoff_s: float
    ) -> Note | None:
        """Claim number `attempt` failed: retry later or give up. A later claim (this one
        lapsed and was taken over) is left alone: it may be succeeding right now."""
        row = await self._pool.fetchrow(_ATTEMPT_FAILED_SQL, note_id, error[:500], attempts_max, backoff_s, attempt)
        return _note(row) if row else None

    async def previous_outcome(self, person_id: str, *, besides: str) -> str | None:
        """How the person's last other delivered note ended (None: there was none)."""
        value = await self._pool.fetchval(_PREVIOUS_OUTCOME_SQL, person_id, besides)
        return None if value is None else str(value)

    async def unqueued(self, *, within_s: float, limit: int) -> list[Note]:
        """Pending notes no external queue holds yet, due within `within_s`."""
        return [_note(r) for r in await self._pool.fetch(_UNQUEUED_SQL, within_s, limit)]

    async def mark_queued(self, note_id: str) -> None:
        await self._pool.execute(_QUEUED_SQL, note_id)
