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

import httpx
import pytest

from database import EmbeddedPostgres
from tests.e2e.test_shutdown import exit_code, postgres_of, server

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


@pytest.mark.slow_fault
async def test_a_killed_postmaster_is_started_again_and_requests_succeed(state: Path) -> None:
    with server(state, "cli") as (process, url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            signed = await client.post("/v1/auth/local", json={"name": "Budi"})
            assert signed.status_code == 200
            headers = {"Authorization": f"Bearer {signed.json()['token']}"}
            assert (await client.post("/v1/messages", json={"text": "hello"}, headers=headers)).status_code == 200

            killed = postmaster_pid(state)
            os.kill(killed, signal.SIGKILL)
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
            assert postmaster_pid(state) != killed and alive(postmaster_pid(state))
            thread = (await client.get("/v1/messages", headers=headers)).json()["messages"]
            assert thread[-1]["author"] != "human", "the turn after the restart was answered"
        process.send_signal(signal.SIGTERM)
        assert exit_code(process, state) == 0


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
