"""The ledger port and its PostgreSQL adapter.

`transact` is the only write. It is one SQL statement (one round trip, its own database
transaction): insert the header unless its ref exists, open any new user account, insert
the entries. The schema's triggers then do the rest inside that statement: refuse
entries for unknown accounts, update the balance snapshot rows in (account, stripe)
order — the lock order, so concurrent writers queue instead of deadlocking — and at
COMMIT refuse a transaction that does not balance.

Idempotency: a ref that already exists writes nothing. If the stored transaction has the
same type and postings it is returned with `replayed=True` (a retry after a crash or a
lost reply); otherwise `RefConflict`. Concurrent writers of one ref serialise on its
unique index, so exactly one of them writes. The receipt (metadata) is not compared: it
describes the event, the postings are the event.

A write, once started, finishes even if its caller is cancelled (a client that hangs up
is still charged for what it used). Balances are never negative-checked here: the wallet
is post-paid and the guard refuses new runs instead (see charging.py).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import asyncpg

from ledger.accounts import check_account
from ledger.audit import VerifyReport, audit
from ledger.errors import RefConflict
from ledger.model import CHARGE_TYPES, Posting, Transaction, TransactionSpec
from ledger.postings import checked_postings
from ledger.usage import USAGE_FOR_DAY_SQL, DayUsage, day_bounds, day_usage

log = logging.getLogger(__name__)

ENTRIES_PAGE_MAX = 200
_ID_MAX = 2**63 - 1

_TRANSACT_SQL = """
WITH header AS (
    INSERT INTO transactions (type, ref, metadata, created_at)
    VALUES ($1, $2, $3, coalesce($4::timestamptz, now()))
    ON CONFLICT (ref) DO NOTHING
    RETURNING id, metadata, created_at
), opened AS (
    INSERT INTO accounts (id, kind)
    SELECT DISTINCT account_id, 'user' FROM unnest($5::text[]) AS account_id
    WHERE account_id LIKE 'user:%'
      AND EXISTS (SELECT FROM header)
      AND NOT EXISTS (SELECT FROM accounts AS a WHERE a.id = account_id)
    ORDER BY account_id
    ON CONFLICT (id) DO NOTHING
), posted AS (
    INSERT INTO entries (transaction_id, account_id, amount_micros, created_at)
    SELECT header.id, p.account_id, p.amount_micros, header.created_at
    FROM header CROSS JOIN unnest($5::text[], $6::bigint[]) AS p (account_id, amount_micros)
)
SELECT id, metadata, created_at FROM header
"""
_BY_REF_SQL = """
SELECT t.id, t.type, t.ref, t.metadata, t.created_at,
       array_agg(e.account_id ORDER BY e.account_id, e.amount_micros) AS accounts,
       array_agg(e.amount_micros ORDER BY e.account_id, e.amount_micros) AS amounts
FROM transactions AS t JOIN entries AS e ON e.transaction_id = t.id
WHERE t.ref = $1
GROUP BY t.id
"""
_BALANCE_SQL = "SELECT coalesce(sum(balance_micros), 0)::bigint FROM account_balances WHERE account_id = $1"
_ENTRIES_SQL = """
SELECT e.id, e.transaction_id, e.account_id, e.amount_micros, e.created_at, t.type, t.ref, t.metadata
FROM entries AS e JOIN transactions AS t ON t.id = e.transaction_id
WHERE e.account_id = $1 AND e.id < $2
ORDER BY e.id DESC
LIMIT $3
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """One posting as stored, with its transaction's type, ref and receipt."""

    id: int
    transaction_id: int
    account_id: str
    amount_micros: int
    created_at: datetime
    type: str
    ref: str
    metadata: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "transaction_id": self.transaction_id,
            "amount_micros": self.amount_micros,
            "created_at": self.created_at.isoformat(),
            "type": self.type,
            "ref": self.ref,
            "receipt": self.metadata,
        }


class Ledger(Protocol):
    async def transact(self, *, spec: TransactionSpec) -> Transaction:
        """Write `spec` once; the same ref again returns the first write (see module doc)."""
        ...

    async def balance_micros(self, account_id: str) -> int:
        """The account's balance; 0 for an account that has never been posted to."""
        ...

    async def entries(self, account_id: str, *, before_id: int | None = None, limit: int = 50) -> list[Entry]:
        """Up to `limit` (≤ ENTRIES_PAGE_MAX) entries, newest first, older than `before_id`."""
        ...

    async def usage_for_day(self, account_id: str, *, day: date, zone: ZoneInfo) -> DayUsage:
        """The charges of the local `day` in `zone`."""
        ...

    async def verify(self) -> VerifyReport:
        """Check every invariant against the stored rows."""
        ...


def _report_orphaned(write: asyncio.Task[Transaction]) -> None:
    """A write whose caller was cancelled has nobody else to tell that it failed."""
    if not write.cancelled() and (exc := write.exception()) is not None:
        log.error("ledger write %r failed after its caller went away", write.get_name(), exc_info=exc)


class PostgresLedger:
    """The ledger in PostgreSQL. `pool` must decode JSONB (database.create_pool does)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        # Every write in flight, held so one whose caller was cancelled is not collected
        # before it finishes (asyncio keeps only weak references to tasks).
        self._writing: set[asyncio.Task[Transaction]] = set()

    async def transact(self, *, spec: TransactionSpec) -> Transaction:
        postings = checked_postings(spec)
        # Shielded: a cancelled caller must not abandon a charge halfway through its
        # round trip, leaving nobody to learn whether it committed.
        write = asyncio.create_task(self._write(spec, postings), name=f"ledger {spec.ref}")
        self._writing.add(write)
        write.add_done_callback(self._writing.discard)
        try:
            return await asyncio.shield(write)
        except asyncio.CancelledError:
            write.add_done_callback(_report_orphaned)
            raise

    async def _write(self, spec: TransactionSpec, postings: tuple[Posting, ...]) -> Transaction:
        row = await self._pool.fetchrow(
            _TRANSACT_SQL,
            spec.type,
            spec.ref,
            dict(spec.metadata),
            spec.at,
            [p.account_id for p in postings],
            [p.amount_micros for p in postings],
        )
        if row is not None:
            return Transaction(
                id=row["id"],
                type=spec.type,
                ref=spec.ref,
                postings=postings,
                metadata=row["metadata"],
                created_at=row["created_at"],
            )
        first = await self._by_ref(spec.ref)
        # The ref conflicted with a committed transaction, and transactions are never deleted.
        assert first is not None, f"ref {spec.ref!r} conflicted but cannot be found"
        if first.type != spec.type or first.postings != postings:
            raise RefConflict(
                f"ref {spec.ref!r} was already used for a different {first.type} transaction", existing=first
            )
        return replace(first, replayed=True)

    async def _by_ref(self, ref: str) -> Transaction | None:
        row = await self._pool.fetchrow(_BY_REF_SQL, ref)
        if row is None:
            return None
        return Transaction(
            id=row["id"],
            type=row["type"],
            ref=row["ref"],
            postings=tuple(Posting(a, m) for a, m in zip(row["accounts"], row["amounts"], strict=True)),
            metadata=row["metadata"],
            created_at=row["created_at"],
        )

    async def balance_micros(self, account_id: str) -> int:
        balance: int = await self._pool.fetchval(_BALANCE_SQL, check_account(account_id))
        return balance

    async def entries(self, account_id: str, *, before_id: int | None = None, limit: int = 50) -> list[Entry]:
        if not 1 <= limit <= ENTRIES_PAGE_MAX:
            raise ValueError(f"a page holds 1 to {ENTRIES_PAGE_MAX} entries, not {limit}")
        before = _ID_MAX if before_id is None else before_id
        rows = await self._pool.fetch(_ENTRIES_SQL, check_account(account_id), before, limit)
        return [
            Entry(
                id=r["id"],
                transaction_id=r["transaction_id"],
                account_id=r["account_id"],
                amount_micros=r["amount_micros"],
                created_at=r["created_at"],
                type=r["type"],
                ref=r["ref"],
                metadata=r["metadata"],
            )
            for r in rows
        ]

    async def usage_for_day(self, account_id: str, *, day: date, zone: ZoneInfo) -> DayUsage:
        start, end = day_bounds(day, zone)
        row = await self._pool.fetchrow(USAGE_FOR_DAY_SQL, check_account(account_id), start, end, list(CHARGE_TYPES))
        assert row is not None
        return day_usage(day, row)

    async def verify(self) -> VerifyReport:
        return await audit(self._pool)
