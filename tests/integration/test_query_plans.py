"""The statements whose cost must not grow with the database have an index to use
(bench/year_of_data.py measures the cost; this keeps the reason from regressing cheaply).

With sequential scans priced out (`enable_seqscan = off`) PostgreSQL still plans one where
no index can serve the statement, so a `Seq Scan` on a table that grows with use in any of
these plans means a year of data would be read in full."""

from __future__ import annotations

import asyncpg
import pytest

from chat.retention import _CALL_RECORDS_SQL, _EVENTS_SQL, _TOOL_RECORDS_SQL

GROWING = ("events", "messages", "runs", "run_calls", "run_events", "entries", "transactions", "wake_notes")
STATEMENTS = {
    "live-event resume": "SELECT id FROM events WHERE person_id = 'usr_a' AND id > 10 ORDER BY id LIMIT 200",
    "newest event id": "SELECT coalesce(max(id), 0) FROM events WHERE person_id = 'usr_a'",
    "thread page": "SELECT id FROM messages WHERE person_id = 'usr_a' AND seq < 500 ORDER BY seq DESC LIMIT 50",
    "wallet entries": "SELECT id FROM entries WHERE account_id = 'user:usr_a:IDR' AND id < 99"
    " ORDER BY id DESC LIMIT 50",
    "day's usage": "SELECT sum(amount_micros) FROM entries WHERE account_id = 'user:usr_a:IDR'"
    " AND created_at >= now() - interval '1 day' AND created_at < now()",
    "runs of a turn": "SELECT id FROM runs WHERE person_id = 'usr_a' AND origin_message_id = 'msg_a'",
    "events retention": _EVENTS_SQL.replace("$1", "604800").replace("$2", "5000"),
    "tool records retention": _TOOL_RECORDS_SQL.replace("$1", "7776000").replace("$2", "5000"),
    "call records retention": _CALL_RECORDS_SQL.replace("$1", "2592000").replace("$2", "5000"),
    "past wake notes": "SELECT id FROM wake_notes WHERE status IN ('delivered', 'cancelled', 'failed')"
    " AND due_at < now() - interval '30 days' LIMIT 5000",
}


@pytest.mark.parametrize("name", list(STATEMENTS))
async def test_a_statement_that_must_stay_flat_has_an_index(pool: asyncpg.Pool, name: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off")
        # EXPLAIN alone plans a statement without running it (a DELETE deletes nothing).
        plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + STATEMENTS[name]))
    scanned = [table for table in GROWING if f"Seq Scan on {table}" in plan]
    assert not scanned, f"{name} reads {scanned} in full:\n{plan}"
