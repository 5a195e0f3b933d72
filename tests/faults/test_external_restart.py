"""An external database (DATABASE_URL set: the server does not own it) stopped in the
middle of a burst of turns and started again, cleanly (`pg_ctl stop -m fast`) and by
`kill -9` of its postmaster. The server does nothing to the database: it answers 503 with
`Retry-After` meanwhile (never a 500), its pools heal when the database is back, a retry
of a refused message under its `client_id` returns the whole turn, and afterwards, read
from the database, every acknowledged message is answered or shows its failure, every
human message has a run, every model call is charged once and `wallet verify` passes."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from database import EmbeddedPostgres
from tests.faults import processes
from tests.faults.outages import settled

PEOPLE = 3
TURNS_EACH = 6
BACK_WITHIN_S = 60
DOWN_REQUESTS = 6
SETTINGS = {
    # the burst is about the outage, not the per-person limits (tests/e2e covers those)
    "RUNS_IN_FLIGHT_PER_PERSON_MAX": str(TURNS_EACH),
    "RUNS_PER_PERSON_PER_MINUTE_MAX": "1000",
}

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow_fault]


class OwnPostgres(EmbeddedPostgres):
    """A PostgreSQL the test starts, stops and kills: to the server it is just a URL."""

    def stop_cleanly(self) -> None:
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

        server: Any = self._server
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.data_dir, user=server.system_user)

    def kill(self) -> None:
        pid = int((self.data_dir / "postmaster.pid").read_text().splitlines()[0])
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while self.is_running():
            assert time.monotonic() < deadline, "the postmaster outlived kill -9"
            time.sleep(0.05)


@pytest.fixture
async def external(tmp_path: Path) -> AsyncIterator[tuple[OwnPostgres, str]]:
    own = OwnPostgres(tmp_path / "external" / "pg")
    url = await asyncio.to_thread(own.start)
    try:
        yield own, url
    finally:
        if not own.is_running():
            await asyncio.to_thread(own.restart)  # so that stopping it lets go of everything
        await asyncio.to_thread(own.stop)


async def _say(client: httpx.AsyncClient, headers: dict[str, str], text: str, client_id: str) -> httpx.Response:
    return await client.post("/v1/messages", json={"text": text, "client_id": client_id}, headers=headers)


@pytest.mark.parametrize("how", ["clean", "kill"])
async def test_an_external_database_restarted_mid_burst_heals_and_leaves_nothing_unanswered(
    external: tuple[OwnPostgres, str], tmp_path: Path, how: str
) -> None:
    own, url = external
    home = tmp_path / "state"
    home.mkdir()
    with processes.serving(url, home, SETTINGS) as (process, base):
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            people = []
            for i in range(PEOPLE):
                token = (await client.post("/v1/auth/local", json={"name": f"Dewi{i}"})).json()["token"]
                people.append({"Authorization": f"Bearer {token}"})
            assert (await _say(client, people[0], "hello", "warm-up")).status_code == 200

            sent = [(h, f"p{i}-t{j}") for j in range(TURNS_EACH) for i, h in enumerate(people)]
            burst = [asyncio.create_task(_say(client, h, "turn on the bedroom light", cid)) for h, cid in sent]
            await asyncio.sleep(0.2)  # mid-burst
            await asyncio.to_thread(own.stop_cleanly if how == "clean" else own.kill)
            first = await asyncio.gather(*burst)
            assert {r.status_code for r in first} <= {200, 503}, [r.text for r in first if r.status_code >= 500]

            # Down: every request is refused as unavailable, with a time to come back.
            for n in range(DOWN_REQUESTS):
                down = await _say(client, people[n % PEOPLE], "are you there?", f"down-{n}")
                assert down.status_code == 503, down.text
                assert down.headers["content-type"].startswith("application/problem+json")
                assert int(down.headers["retry-after"]) >= 1
            assert (await client.get("/v1/messages", headers=people[0])).status_code == 503

            await asyncio.to_thread(own.restart)
            assert own.is_running()

            # Healed without a restart of the server: the first request that succeeds.
            deadline = time.monotonic() + BACK_WITHIN_S
            while (again := await _say(client, people[0], "hello again", "after")).status_code != 200:
                assert again.status_code == 503, again.text
                assert time.monotonic() < deadline, f"still {again.status_code} after {BACK_WITHIN_S} s"
                await asyncio.sleep(0.5)
            assert process.poll() is None, "the server itself kept running"

            # A message refused with 503, retried under its client id, returns its whole turn.
            refused = [(h, cid) for (h, cid), r in zip(sent, first, strict=True) if r.status_code != 200]
            for h, cid in refused:
                retried = await _say(client, h, "turn on the bedroom light", cid)
                assert retried.status_code == 200, retried.text
                body = retried.json()
                assert body["runs"], "the retry returns the turn's runs"
                assert body["runs"][0]["status"] in ("succeeded", "failed")
                if body["runs"][0]["status"] == "succeeded":
                    assert any(m["author"] != "human" for m in body["messages"]), body

            pool = await asyncpg.create_pool(url, min_size=1, max_size=2)
            try:
                await settled(pool, timeout_s=60)
                row = await pool.fetchrow(
                    """SELECT (SELECT count(*) FROM messages m WHERE m.author = 'human' AND NOT EXISTS
                                  (SELECT FROM runs r WHERE r.origin_message_id = m.id)) AS unanswered,
                              (SELECT count(*) FROM messages m WHERE m.author = 'human' AND NOT EXISTS
                                  (SELECT FROM messages a JOIN runs r ON r.id = a.run_id
                                   WHERE r.origin_message_id = m.id)
                                AND NOT EXISTS (SELECT FROM runs r WHERE r.origin_message_id = m.id
                                                AND r.status = 'failed')) AS silent,
                              (SELECT count(*) FROM (SELECT origin_message_id FROM runs WHERE parent_run_id IS NULL
                                  GROUP BY origin_message_id HAVING count(*) > 1) AS t) AS twice,
                              (SELECT count(*) FROM runs WHERE status = 'running') AS running,
                              (SELECT count(*) FROM run_calls WHERE cost_micros IS NULL) AS uncharged,
                              (SELECT count(*) FROM run_calls) AS recorded,
                              (SELECT count(*) FROM transactions WHERE type = 'agent_call') AS charges,
                              (SELECT count(*) FROM messages WHERE author = 'human'
                                  AND client_id = ANY($1::text[])) AS kept""",
                    [cid for _, cid in sent],
                )
            finally:
                await pool.close()
            assert row is not None
            assert (row["unanswered"], row["silent"], row["twice"], row["running"], row["uncharged"]) == (0,) * 5, dict(
                row
            )
            assert row["kept"] == len(sent), "every message of the burst kept once (first try or its retry)"
            assert row["recorded"] == row["charges"], "each recorded call charged once"
    log = next(home.parent.glob("server-*.log")).read_text()
    assert '" 500 ' not in log and "unhandled error" not in log, "no request was answered 500"
    report = await asyncio.to_thread(processes.wallet_verify, url, home)
    assert report.returncode == 0, report.stdout + report.stderr
