"""`verify`: proves, from the rows themselves, that the ledger holds its invariants.

The schema already refuses writes that would break them; this is the independent check
an operator runs (`avagenc wallet verify`) and the tests run after every scenario. It
reads everything in one repeatable-read snapshot, so concurrent writers cannot make a
healthy ledger look broken, and it reports at most PROBLEMS_MAX problems per kind.

Checked: every transaction has at least two entries summing to zero; every entry names
an existing transaction and account; every account's balance snapshot equals the sum of
its entries; no person's wallet is further below zero than one model call can cost at the
dearest price in the book (a turn stops before a call its wallet cannot pay for, so it
ends at most one call past zero: docs/money.md#the-guard).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from ledger.prices import CALL_INPUT_TOKENS_MAX, CALL_OUTPUT_TOKENS_MAX

PROBLEMS_MAX = 100

_COUNTS_SQL = """
SELECT (SELECT count(*) FROM transactions) AS transactions,
       (SELECT count(*) FROM entries) AS entries,
       (SELECT count(*) FROM accounts) AS accounts
"""
_UNBALANCED_SQL = """
SELECT t.id, t.ref, count(e.id) AS entries, coalesce(sum(e.amount_micros), 0) AS total_micros
FROM transactions AS t LEFT JOIN entries AS e ON e.transaction_id = t.id
GROUP BY t.id
HAVING count(e.id) < 2 OR coalesce(sum(e.amount_micros), 0) <> 0
ORDER BY t.id
LIMIT $1
"""
_ORPHANS_SQL = """
SELECT e.id, e.transaction_id, e.account_id,
       EXISTS (SELECT FROM transactions AS t WHERE t.id = e.transaction_id) AS has_transaction
FROM entries AS e
WHERE NOT EXISTS (SELECT FROM transactions AS t WHERE t.id = e.transaction_id)
   OR NOT EXISTS (SELECT FROM accounts AS a WHERE a.id = e.account_id)
ORDER BY e.id
LIMIT $1
"""
_SNAPSHOTS_SQL = """
WITH summed AS (SELECT account_id, sum(amount_micros) AS micros FROM entries GROUP BY account_id),
     snapshot AS (SELECT account_id, sum(balance_micros) AS micros FROM account_balances GROUP BY account_id)
SELECT account_id, coalesce(s.micros, 0) AS entries_micros, coalesce(b.micros, 0) AS snapshot_micros
FROM summed AS s FULL JOIN snapshot AS b USING (account_id)
WHERE coalesce(s.micros, 0) <> coalesce(b.micros, 0)
ORDER BY account_id
LIMIT $1
"""
# Rupiah per million tokens times tokens is micro-rupiah.
_OVERDRAWN_SQL = """
WITH ceiling AS (
    SELECT coalesce(max(input_per_mtok_idr * $2::bigint + output_per_mtok_idr * $3::bigint), 0) AS micros FROM prices
)
SELECT b.account_id, sum(b.balance_micros) AS balance_micros, (SELECT micros FROM ceiling) AS ceiling_micros
FROM account_balances AS b
WHERE b.account_id LIKE 'user:%'
GROUP BY b.account_id
HAVING sum(b.balance_micros) < -(SELECT micros FROM ceiling)
ORDER BY b.account_id
LIMIT $1
"""


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str  # 'unbalanced' | 'orphan_entry' | 'snapshot_mismatch' | 'overdrawn'
    subject: str  # the transaction ref, entry id or account id concerned
    detail: str


@dataclass(frozen=True, slots=True)
class VerifyReport:
    transactions: int
    entries: int
    accounts: int
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _unbalanced(row: asyncpg.Record) -> Problem:
    detail = f"transaction {row['id']} has {row['entries']} entries summing to {row['total_micros']}"
    return Problem("unbalanced", row["ref"], detail)


def _orphan(row: asyncpg.Record) -> Problem:
    missing = f"account {row['account_id']}" if row["has_transaction"] else f"transaction {row['transaction_id']}"
    return Problem("orphan_entry", str(row["id"]), f"the entry names {missing}, which does not exist")


async def audit(pool: asyncpg.Pool) -> VerifyReport:
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        counts = await conn.fetchrow(_COUNTS_SQL)
        assert counts is not None
        problems = [_unbalanced(r) for r in await conn.fetch(_UNBALANCED_SQL, PROBLEMS_MAX)]
        problems += [_orphan(r) for r in await conn.fetch(_ORPHANS_SQL, PROBLEMS_MAX)]
        problems += [
            Problem(
                "snapshot_mismatch",
                r["account_id"],
                f"entries sum to {r['entries_micros']} but the balance snapshot says {r['snapshot_micros']}",
            )
            for r in await conn.fetch(_SNAPSHOTS_SQL, PROBLEMS_MAX)
        ]
        problems += [
            Problem(
                "overdrawn",
                r["account_id"],
                f"the balance {r['balance_micros']} is below minus one call's most ({r['ceiling_micros']})",
            )
            for r in await conn.fetch(_OVERDRAWN_SQL, PROBLEMS_MAX, CALL_INPUT_TOKENS_MAX, CALL_OUTPUT_TOKENS_MAX)
        ]
    return VerifyReport(
        transactions=counts["transactions"],
        entries=counts["entries"],
        accounts=counts["accounts"],
        problems=tuple(problems),
    )
