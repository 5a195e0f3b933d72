"""What the fault tests share: cutting every connection to the database, a model that does
it between a call's return and its record, and the invariants read from the database."""

from __future__ import annotations

import asyncio

import asyncpg

from agents import Model, ModelRequest, ModelResponse, OfflineModel
from chat.outbox import Outbox
from ledger import user_account


async def cut_every_connection(database_url: str) -> int:
    """Terminate every other connection to the database (as a restart or a failover does)
    and wait until they are gone."""
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        cut = [row["pid"] for row in rows]
        async with asyncio.timeout(10):
            while await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])", cut):
                await asyncio.sleep(0.02)
    finally:
        await conn.close()
    return len(cut)


class CuttingModel:
    """Answers as the offline model does, counting every call it answered; on the calls
    numbered in `cut_after`, it cuts the database's connections after the model has
    answered and before the server can record the call: the charge the outbox must save."""

    def __init__(self, database_url: str, cut_after: set[int], inner: Model | None = None) -> None:
        self._url = database_url
        self._inner = inner or OfflineModel()
        self.cut_after = cut_after
        self.calls = 0
        self.cuts = 0

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        response = await self._inner.generate(request=request)
        self.calls += 1
        if self.calls in self.cut_after:
            self.cuts += await cut_every_connection(self._url) > 0
        return response


async def settled(pool: asyncpg.Pool, *, outbox: Outbox | None = None, timeout_s: float = 60.0) -> None:
    """Wait (bounded) until the server's sweep has left nothing to settle: no run running,
    no call recorded without a cost, no human message without a run, and, given the
    in-process server's `outbox`, no call in it (a charge the cut failed is in the outbox
    only, not in the database, until the sweep's next pass). (A wait for an outcome, not a
    timing assertion.)"""
    async with asyncio.timeout(timeout_s):
        while True:
            if outbox is not None and outbox.pending:
                await asyncio.sleep(0.1)
                continue
            left = await pool.fetchval(
                """SELECT (SELECT count(*) FROM runs WHERE status = 'running')
                        + (SELECT count(*) FROM run_calls WHERE cost_micros IS NULL)
                        + (SELECT count(*) FROM messages m WHERE m.author = 'human'
                           AND NOT EXISTS (SELECT FROM runs r WHERE r.origin_message_id = m.id))"""
            )
            if left == 0:
                return
            await asyncio.sleep(0.1)


async def billed_calls(pool: asyncpg.Pool, person_id: str) -> tuple[int, int, int, int]:
    """(calls recorded, calls recorded with a cost, agent_call charges on the wallet, the
    micro-rupiah those charges took less what the runs say they cost)."""
    row = await pool.fetchrow(
        """SELECT (SELECT count(*) FROM run_calls WHERE person_id = $1) AS recorded,
                  (SELECT count(*) FROM run_calls WHERE person_id = $1 AND cost_micros IS NOT NULL) AS costed,
                  (SELECT count(*) FROM entries e JOIN transactions t ON t.id = e.transaction_id
                   WHERE e.account_id = $2 AND t.type = 'agent_call') AS charges,
                  (SELECT coalesce(-sum(e.amount_micros), 0) FROM entries e JOIN transactions t
                   ON t.id = e.transaction_id WHERE e.account_id = $2 AND t.type = 'agent_call')
                  - (SELECT coalesce(sum(cost_micros), 0) FROM runs WHERE person_id = $1) AS gap""",
        person_id,
        user_account(person_id),
    )
    assert row is not None
    return row["recorded"], row["costed"], row["charges"], row["gap"]
