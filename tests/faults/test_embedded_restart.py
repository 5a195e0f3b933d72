"""The embedded PostgreSQL's postmaster killed with `kill -9` under a serving process:
the server starts it again on its own, and requests succeed again without a restart of
the server (database/embedded.py, `supervise`)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from database import EmbeddedPostgres
from tests.e2e.test_shutdown import exit_code, postgres_of, server
from tests.faults import processes

pytestmark = pytest.mark.timeout(240)

# How long the server may take to notice, restart PostgreSQL and answer again: one check a
# second, pg_ctl's own wait, and the pool's next connection.
BACK_WITHIN_S = 60


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    """The server's AVAGENC_HOME; a PostgreSQL a failed test left running is stopped after."""
    folder = tmp_path / "state"
    yield folder
    if postgres_of(folder):
        embedded = EmbeddedPostgres(folder / "pg")
        embedded.start()
        embedded.stop()


def postmaster_pid(folder: Path) -> int:
    return int((folder / "pg" / "postmaster.pid").read_text().splitlines()[0])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_cleanly(folder: Path) -> None:
    """`pg_ctl stop -m fast`, as an operator stops PostgreSQL (run as the OS user it runs as)."""
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

    # pg_ctl waits 60 s by default; under CI's load a fast stop once took longer (why was
    # not found), which is slow, not the failure this test is about.
    pg_ctl(
        ["-w", "-t", "120", "-m", "fast", "stop"], pgdata=folder / "pg", user="pgserver" if os.geteuid() == 0 else None
    )


@pytest.mark.slow_fault
@pytest.mark.parametrize("how", ["kill", "clean"])
async def test_a_killed_postmaster_is_started_again_and_requests_succeed(state: Path, how: str) -> None:
    """`kill -9` of the postmaster, or a clean stop: either way the server starts it again."""
    with server(state, "cli") as (process, url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            signed = await client.post("/v1/auth/local", json={"name": "Budi"})
            assert signed.status_code == 200
            headers = {"Authorization": f"Bearer {signed.json()['token']}"}
            assert (await client.post("/v1/messages", json={"text": "hello"}, headers=headers)).status_code == 200

            killed = postmaster_pid(state)
            burst = [
                asyncio.create_task(
                    client.post("/v1/messages", json={"text": "turn on the bedroom light"}, headers=headers)
                )
                for _ in range(12)
            ]
            await asyncio.sleep(0.05)  # mid-burst
            if how == "kill":
                os.kill(killed, signal.SIGKILL)
            else:
                await asyncio.to_thread(stop_cleanly, state)
            cut = [r.status_code for r in await asyncio.gather(*burst)]
            # 429: one person's 12 turns at once pass the in-flight limit (nothing written).
            assert set(cut) <= {200, 429, 503}, cut
            statuses: list[int] = []
            deadline = time.monotonic() + BACK_WITHIN_S
            while True:
                response = await client.post("/v1/messages", json={"text": "hello again"}, headers=headers)
                statuses.append(response.status_code)
                if response.status_code == 200:
                    break
                # Meanwhile: 503 with Retry-After, never a 500.
                assert response.status_code == 503, response.text
                assert response.headers.get("retry-after")
                assert time.monotonic() < deadline, f"still {statuses[-1]} after {BACK_WITHIN_S} s"
                await asyncio.sleep(0.5)
            assert process.poll() is None, "the server itself kept running"
            await _settled_and_billed(state, statuses)
            assert postmaster_pid(state) != killed and alive(postmaster_pid(state))
            thread = (await client.get("/v1/messages", headers=headers)).json()["messages"]
            assert thread[-1]["author"] != "human", "the turn after the restart was answered"
        process.send_signal(signal.SIGTERM)
        assert exit_code(process, state) == 0


async def _settled_and_billed(state: Path, statuses: list[int]) -> None:
    """What the kill left, settled by the server's sweep, read from the database: no run
    running, every recorded call charged once, every message with a run."""
    url = f"postgresql://postgres@/postgres?host={state / 'pg'}"
    conn = await asyncpg.connect(url)
    try:
        async with asyncio.timeout(60):
            while True:
                row = await conn.fetchrow(
                    """SELECT (SELECT count(*) FROM runs WHERE status = 'running') AS running,
                              (SELECT count(*) FROM run_calls WHERE cost_micros IS NULL) AS uncharged,
                              (SELECT count(*) FROM messages m WHERE m.author = 'human' AND NOT EXISTS
                                  (SELECT FROM runs r WHERE r.origin_message_id = m.id)) AS unanswered,
                              (SELECT count(*) FROM run_calls) AS recorded,
                              (SELECT count(*) FROM transactions WHERE type = 'agent_call') AS charges"""
                )
                assert row is not None
                if (row["running"], row["uncharged"], row["unanswered"]) == (0, 0, 0):
                    break
                await asyncio.sleep(0.2)
        if row["recorded"] != row["charges"]:
            # Which charges have no recorded call, and what their runs look like: the clue a
            # rare failure needs (the recorded call is the charge's only source).
            orphans = await conn.fetch(
                """SELECT t.ref, t.created_at, r.id AS run, r.status, r.started_at, r.model_calls
                   FROM transactions t
                   LEFT JOIN run_calls c ON t.ref = 'run:' || c.run_id || ':call:' || c.idx
                   LEFT JOIN runs r ON t.ref LIKE 'run:' || r.id || ':call:%'
                   WHERE t.type = 'agent_call' AND c.run_id IS NULL"""
            )
            raise AssertionError(f"{dict(row)}; charges without a recorded call: {[dict(o) for o in orphans]}")
    finally:
        await conn.close()
    report = await asyncio.to_thread(processes.wallet_verify, url, state)
    assert report.returncode == 0, report.stdout + report.stderr


class _Dead(EmbeddedPostgres):
    """A postmaster that is gone and will not come back, or comes back elsewhere."""

    def __init__(self, data_dir: Path, *, back_at: str | None = None) -> None:
        super().__init__(data_dir)
        self.back_at = back_at
        self.attempts = 0

    def is_running(self) -> bool:
        return False

    def restart(self) -> str:
        self.attempts += 1
        if self.back_at is None:
            raise RuntimeError("pg_ctl: could not start server")
        return self.back_at


@pytest.mark.parametrize("back_at", [None, "postgresql://elsewhere"])
async def test_a_postmaster_that_will_not_come_back_makes_the_server_give_up_with_one_line(
    tmp_path: Path, back_at: str | None
) -> None:
    dead = _Dead(tmp_path / "pg", back_at=back_at)
    reasons: list[str] = []
    async with asyncio.timeout(30):
        await dead.supervise(url="postgresql://here", on_give_up=reasons.append, check_s=0.01, attempts=3)
    assert len(reasons) == 1
    if back_at is None:
        assert dead.attempts == 3 and "could not be restarted (3 attempts)" in reasons[0]
    else:
        assert dead.attempts == 1 and "another address" in reasons[0]
