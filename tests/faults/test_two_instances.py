"""Two server processes on one database, one killed with `kill -9` in the middle of a burst
of turns: the live one's sweep settles what the dead one left (its runs, its uncharged calls,
the calls in its outbox file, its unanswered messages), so afterwards, read from the
database, every message is answered or shows its failure, every call is charged once, and
the ledger verifies."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.faults import processes
from tests.faults.outages import settled

PEOPLE = 6
TURNS_EACH = 8

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow_fault]


def serving(database_url: str, home: Path) -> contextlib.AbstractContextManager[tuple[subprocess.Popen[bytes], str]]:
    # the burst is about a crash, not the per-person limits (tests/e2e covers those)
    limits = {"RUNS_IN_FLIGHT_PER_PERSON_MAX": str(TURNS_EACH), "RUNS_PER_PERSON_PER_MINUTE_MAX": "1000"}
    return processes.serving(database_url, home, limits)


async def _say(client: httpx.AsyncClient, token: str, text: str, client_id: str) -> int:
    try:
        response = await client.post(
            "/v1/messages",
            json={"text": text, "client_id": client_id},
            headers={"Authorization": f"Bearer {token}"},
        )
    except httpx.HTTPError:
        return 0  # the process answering it was killed
    return response.status_code


async def test_one_of_two_servers_killed_mid_burst_leaves_nothing_unsettled(
    database_url: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    home = tmp_path / "state"  # shared: the live server finds the dead one's outbox file
    home.mkdir()
    with serving(database_url, home) as (doomed, url_a), serving(database_url, home) as (_live, url_b):
        async with (
            httpx.AsyncClient(base_url=url_a, timeout=60) as a,
            httpx.AsyncClient(base_url=url_b, timeout=60) as b,
        ):
            tokens = [
                (await b.post("/v1/auth/local", json={"name": f"Tamu{i}"})).json()["token"] for i in range(PEOPLE)
            ]
            burst = [
                asyncio.create_task(_say(a if (i + j) % 2 else b, token, "turn on the bedroom light", f"p{i}-t{j}"))
                for j in range(TURNS_EACH)
                for i, token in enumerate(tokens)
            ]
            await asyncio.sleep(0.3)
            doomed.kill()
            doomed.wait()
            statuses = await asyncio.gather(*burst)
            assert set(statuses) <= {0, 200, 503}, statuses
            assert statuses.count(200) > 0

            await settled(pool, timeout_s=90)

    human = await pool.fetchval("SELECT count(*) FROM messages WHERE author = 'human'")
    assert human >= statuses.count(200)
    unanswered = await pool.fetchval(
        """SELECT count(*) FROM messages m WHERE m.author = 'human'
           AND NOT EXISTS (SELECT FROM runs r WHERE r.origin_message_id = m.id)"""
    )
    twice = await pool.fetchval(
        """SELECT count(*) FROM (SELECT origin_message_id FROM runs WHERE parent_run_id IS NULL
           GROUP BY origin_message_id HAVING count(*) > 1) AS t"""
    )
    calls = await pool.fetchrow(
        """SELECT (SELECT count(*) FROM run_calls) AS recorded,
                  (SELECT count(*) FROM run_calls WHERE cost_micros IS NULL) AS uncharged,
                  (SELECT count(*) FROM transactions WHERE type = 'agent_call') AS charges,
                  (SELECT count(*) FROM runs WHERE status = 'running') AS running"""
    )
    assert (unanswered, twice) == (0, 0)
    assert calls is not None and calls["uncharged"] == 0 and calls["running"] == 0
    assert calls["recorded"] == calls["charges"], "each recorded call charged once"
    assert not list(home.glob("outbox/calls-*.jsonl")) or all(
        p.stat().st_size == 0 for p in home.glob("outbox/calls-*.jsonl")
    ), "the dead server's outbox was charged and let go"
    report = await asyncio.to_thread(processes.wallet_verify, database_url, home)
    assert report.returncode == 0, report.stdout + report.stderr
