"""Retention runs by itself in the serving process (chat/retention.py): with a short
interval, records older than their windows disappear without anyone asking, and nothing a
receipt, a resume, the sweep or the thread needs is touched (docs/data.md#retention).

The rows are made old by moving their times back, not by waiting: the windows stay the
product's defaults."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from chat import EventLog
from settings import Settings
from tests.conftest import App

DAY_S = 86_400


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # Retention every 0.1 s; the sweep out of the way (it would charge the uncharged call
    # this test leaves on purpose, which then becomes prunable).
    return settings.model_copy(update={"retention_interval_s": 0.1, "sweep_interval_s": 3600.0})


async def _passes(app: App, more: int) -> None:
    """Wait until the server's own retention has run `more` more passes."""
    retention = app.services.retention
    assert retention is not None
    target = retention.passes + more
    for _ in range(600):
        if retention.passes >= target:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("retention did not run by itself")


async def _count(pool: asyncpg.Pool, sql: str, *args: object) -> int:
    return int(await pool.fetchval(sql, *args))


async def test_old_records_go_by_themselves_and_what_receipts_and_resumes_need_stays(
    app: App, pool: asyncpg.Pool
) -> None:
    headers = await app.sign_in("Budi")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    for i, text in enumerate(("turn on the bedroom light", "hello Ava", "turn off the bedroom light")):
        assert (await app.say(headers, text, client_id=f"m-{i}")).status_code == 200
    # The first turn becomes 10 days old: its events past the 7-day resume window, its
    # charged model calls past their 30 days only when moved 40 days back.
    first_run_ids = [
        r["id"] for r in await pool.fetch("SELECT id FROM runs WHERE person_id = $1 ORDER BY started_at LIMIT 2", me)
    ]
    recent_event = await _count(pool, "SELECT max(id) FROM events WHERE person_id = $1", me)
    events_before = await _count(pool, "SELECT count(*) FROM events WHERE person_id = $1", me)
    old_events = await _count(pool, "SELECT count(*) FROM events WHERE person_id = $1 AND id <= $2", me, 6)
    messages = await _count(pool, "SELECT count(*) FROM messages WHERE person_id = $1", me)
    runs = await _count(pool, "SELECT count(*) FROM runs WHERE person_id = $1", me)
    receipts = await _count(pool, "SELECT count(*) FROM transactions")
    tool_records = await _count(pool, "SELECT count(*) FROM run_events")
    assert tool_records > 0, "the light turned on through a tool"
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("UPDATE events SET created_at = now() - interval '10 days' WHERE id <= 6")
        await conn.execute("UPDATE run_events SET created_at = now() - interval '100 days'")
        await conn.execute("UPDATE run_calls SET at = now() - interval '40 days' WHERE run_id = ANY($1)", first_run_ids)
        # One old call never charged (a crash): the sweep's to settle, so retention keeps it.
        await conn.execute(
            "UPDATE run_calls SET cost_micros = NULL WHERE (run_id, idx) = (SELECT run_id, idx FROM run_calls"
            " WHERE run_id = ANY($1) ORDER BY run_id, idx LIMIT 1)",
            first_run_ids,
        )
        await conn.execute(
            "INSERT INTO revoked_sessions (session_id, expires_at) VALUES ('gone', now() - interval '1 hour'),"
            " ('live', now() + interval '1 hour')"
        )
        await conn.execute(
            "INSERT INTO wake_notes (id, person_id, text, due_at, time_zone, status, delivered_at) VALUES"
            " ('pstr_old', $1, 'old', now() - interval '40 days', 'UTC', 'delivered', now() - interval '40 days'),"
            " ('pstr_recent', $1, 'recent', now() - interval '1 day', 'UTC', 'delivered', now() - interval '1 day'),"
            " ('pstr_ahead', $1, 'ahead', now() + interval '1 day', 'UTC', 'pending', NULL)",
            me,
        )
    old_calls = await _count(pool, "SELECT count(*) FROM run_calls WHERE at < now() - interval '30 days'")
    assert old_calls >= 2

    await _passes(app, 2)

    # Gone: events past the resume window, old tool records, old charged call records,
    # past notes past their window, expired sessions.
    assert await _count(pool, "SELECT count(*) FROM events WHERE id <= 6") == 0
    assert await _count(pool, "SELECT count(*) FROM events WHERE person_id = $1", me) == events_before - old_events
    assert await _count(pool, "SELECT count(*) FROM run_events") == 0
    assert await _count(pool, "SELECT count(*) FROM run_calls WHERE at < now() - interval '30 days'") == 1
    assert await _count(pool, "SELECT count(*) FROM run_calls WHERE cost_micros IS NULL") == 1, "uncharged: kept"
    assert [r["session_id"] for r in await pool.fetch("SELECT session_id FROM revoked_sessions")] == ["live"]
    notes = {r["id"] for r in await pool.fetch("SELECT id FROM wake_notes")}
    assert notes == {"pstr_recent", "pstr_ahead"}

    # Kept: the thread, its runs, every receipt, and a resume within the window.
    assert await _count(pool, "SELECT count(*) FROM messages WHERE person_id = $1", me) == messages
    assert await _count(pool, "SELECT count(*) FROM runs WHERE person_id = $1", me) == runs
    assert await _count(pool, "SELECT count(*) FROM transactions") == receipts
    assert (await app.services.ledger.verify()).ok
    resumed = await EventLog(pool).since(me, 6)
    assert [e.id for e in resumed][-1] == recent_event and len(resumed) == events_before - old_events
    page = await app.client.get("/v1/messages", headers=headers)
    assert page.status_code == 200 and len(page.json()["messages"]) == messages
