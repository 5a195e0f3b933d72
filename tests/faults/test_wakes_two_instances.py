"""200 wake notes due at once on two server processes sharing one database, one of them
killed with `kill -9` while it delivers: every note is delivered exactly once across both
(one note message in its person's thread, one run of Ava's on it, the person told at most
once), every model call charged once, and the ledger verifies. The dead process's claims
are taken over by the live one when their lease runs out (REMINDERS_LEASE_S, short here);
the live one renews the claims it is still working on, so a slow delivery is never taken
from a process that lives (docs/data.md#wake-notes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import httpx
import pytest

from reminders.notes import new_note_id
from tests.faults import processes
from tests.faults.outages import settled

PEOPLE = 20
NOTES_EACH = 10
NOTES = PEOPLE * NOTES_EACH
# Killed once this many notes are delivered: mid-way, with deliveries in flight.
KILL_AFTER = 40
# Short so the dead process's claims come back within the test; each live claim is renewed.
SETTINGS = {"REMINDERS_LEASE_S": "5", "REMINDERS_CONCURRENT_MAX": "8", "SIGN_INS_PER_ADDRESS_MAX": "1000"}

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow_fault]


async def _wait_for(pool: asyncpg.Pool, sql: str, at_least: int, *, timeout_s: float) -> int:
    """Wait (bounded) until `sql` counts at least `at_least`: a wait for an outcome."""
    async with asyncio.timeout(timeout_s):
        while (count := int(await pool.fetchval(sql))) < at_least:
            await asyncio.sleep(0.05)
    return count


async def _sign_in(client: httpx.AsyncClient, name: str) -> str:
    token = (await client.post("/v1/auth/local", json={"name": name})).json()["token"]
    me = await client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})
    return str(me.json()["id"])


async def test_two_hundred_notes_due_at_once_are_delivered_once_across_two_servers(
    database_url: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    home = tmp_path / "state"  # shared: the live server finds the dead one's outbox file
    home.mkdir()
    with (
        processes.serving(database_url, home, SETTINGS) as (doomed, url_a),
        processes.serving(database_url, home, SETTINGS) as (_live, _url_b),
    ):
        async with httpx.AsyncClient(base_url=url_a, timeout=60) as a:
            people = [await _sign_in(a, f"Tamu{i}") for i in range(PEOPLE)]
        # All due at the same instant, a moment from now (written as Ava's wake tool writes
        # them, one row each; the insert's NOTIFY wakes both dispatchers).
        await pool.executemany(
            """INSERT INTO wake_notes (id, person_id, text, due_at, time_zone)
               VALUES ($1, $2, $3, date_trunc('second', clock_timestamp()) + interval '2 seconds', 'UTC')""",
            [(new_note_id(), person, f"Remind them to stretch ({n}).") for person in people for n in range(NOTES_EACH)],
        )
        await _wait_for(pool, "SELECT count(*) FROM wake_notes WHERE status = 'delivered'", KILL_AFTER, timeout_s=60)
        in_flight = await pool.fetchval("SELECT count(*) FROM wake_notes WHERE status = 'delivering'")
        doomed.kill()
        doomed.wait()
        await _wait_for(
            pool, "SELECT count(*) FROM wake_notes WHERE status IN ('delivered', 'failed')", NOTES, timeout_s=180
        )
        await settled(pool, timeout_s=60)

    rows = await pool.fetch("SELECT status, count(*) AS n FROM wake_notes GROUP BY status")
    statuses = {str(r["status"]): int(r["n"]) for r in rows}
    assert statuses == {"delivered": NOTES}, (statuses, in_flight)
    # Only the dead process's claims were taken again (it held at most its
    # REMINDERS_CONCURRENT_MAX at once): a claim the live process was working on was renewed.
    again = await pool.fetchval("SELECT sum(attempts) - count(*) FROM wake_notes")
    assert again <= int(SETTINGS["REMINDERS_CONCURRENT_MAX"]), again
    # One note message per note, and one run of Ava's on each (never a second wake).
    shapes = await pool.fetchrow(
        """SELECT
             (SELECT count(*) FROM messages WHERE author = 'postera') AS written,
             (SELECT count(*) FROM wake_notes n WHERE NOT EXISTS (
                 SELECT FROM messages m WHERE m.person_id = n.person_id AND m.client_id = 'wake/' || n.id)) AS missing,
             (SELECT count(*) FROM messages m WHERE m.author = 'postera' AND (
                 SELECT count(*) FROM runs r WHERE r.origin_message_id = m.id AND r.parent_run_id IS NULL) <> 1)
               AS not_run_once,
             (SELECT count(*) FROM wake_notes n WHERE n.run_id IS DISTINCT FROM (
                 SELECT r.id FROM runs r JOIN messages m ON m.id = r.origin_message_id
                 WHERE m.person_id = n.person_id AND m.client_id = 'wake/' || n.id AND r.parent_run_id IS NULL))
               AS other_run,
             (SELECT count(*) FROM runs WHERE status = 'running') AS running,
             (SELECT max(c) FROM (SELECT count(*) AS c FROM events WHERE type = 'reminder.delivered'
                                  GROUP BY data ->> 'id') AS t) AS told_most"""
    )
    assert shapes is not None
    assert (shapes["written"], shapes["missing"], shapes["not_run_once"], shapes["other_run"]) == (NOTES, 0, 0, 0)
    assert shapes["running"] == 0
    assert shapes["told_most"] == 1, "nobody is told twice about one note"
    calls = await pool.fetchrow(
        """SELECT (SELECT count(*) FROM run_calls) AS recorded,
                  (SELECT count(*) FROM run_calls WHERE cost_micros IS NULL) AS uncharged,
                  (SELECT count(*) FROM transactions WHERE type = 'agent_call') AS charges"""
    )
    assert calls is not None and calls["uncharged"] == 0
    assert calls["recorded"] == calls["charges"], "each recorded call charged once"
    report = await asyncio.to_thread(processes.wallet_verify, database_url, home)
    assert report.returncode == 0, report.stdout + report.stderr
