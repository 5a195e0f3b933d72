"""Stopping a real server process: SIGTERM (how Docker, Kubernetes and systemd stop it)
and Ctrl-C end the same graceful way, and even `kill -9` leaves no PostgreSQL behind
for good.

Each test runs the server as its own OS process with the embedded PostgreSQL in its own
state folder (DATABASE_URL unset), and looks for that folder's PostgreSQL with `ps`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from database import EmbeddedPostgres
from tests.fakes.servers import free_port
from tests.fakes.speech import Heard, listen

ROOT = Path(__file__).resolve().parents[2]
START = {"type": "start", "sample_rate": 16000, "encoding": "pcm_s16le", "channels": 1, "time_zone": "Asia/Jakarta"}

pytestmark = pytest.mark.timeout(240)


def postgres_of(state: Path) -> list[str]:
    """The PostgreSQL processes serving this state folder's data directory."""
    data_dir = str((state / "pg").resolve())
    listing = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines() if "postgres" in line and f"-D {data_dir}" in line]


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    """The server's AVAGENC_HOME; a PostgreSQL a failed test left running is stopped after."""
    folder = tmp_path / "state"
    yield folder
    if postgres_of(folder):
        embedded = EmbeddedPostgres(folder / "pg")
        embedded.start()  # takes over from the dead owner, so this stop really stops it
        embedded.stop()


def environment(state: Path, slow_model_s: float) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return {
        **env,
        "AVAGENC_HOME": str(state),
        "SESSION_SECRET": "shutdown-test-" + "x" * 40,
        "VOICE_PRELOAD": "false",
        "SHUTDOWN_GRACE_S": "30",
        "SLOW_MODEL_S": str(slow_model_s),
    }


@contextlib.contextmanager
def server(state: Path, module: str, *, slow_model_s: float = 3) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`python -m <module> serve`-like process on a free port; yields it once ready."""
    port = free_port()
    log_path = state.parent / f"server-{port}.log"
    state.mkdir(parents=True, exist_ok=True)
    args = ["serve", "--port", str(port)] if module == "cli" else ["--port", str(port)]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            env=environment(state, slow_model_s),
            cwd=ROOT,
            stdout=log,
            stderr=log,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, f"server exited early:\n{log_path.read_text()[-3000:]}\n{pg_log(state)}"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, f"server not ready:\n{log_path.read_text()[-3000:]}"
            time.sleep(0.2)
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def pg_log(state: Path) -> str:
    """The end of PostgreSQL's own log, to explain a server that would not start."""
    path = state / "pg" / "log"
    return "PostgreSQL log:\n" + path.read_text(errors="replace")[-2000:] if path.exists() else "no PostgreSQL log"


def exit_code(process: subprocess.Popen[bytes], state: Path) -> int:
    try:
        return process.wait(timeout=90)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("the server did not stop within 90 s") from None


async def read(state: Path, query: str, name: str) -> list[tuple[str, ...]]:
    """Rows about one person, read with the server stopped (and the database stopped after)."""
    embedded = EmbeddedPostgres(state / "pg")
    try:
        conn = await asyncpg.connect(await asyncio.to_thread(embedded.start))
        try:
            rows = await conn.fetch(query, name)
        finally:
            await conn.close()
    finally:
        await asyncio.to_thread(embedded.stop)
    return [tuple(r.values()) for r in rows]


async def thread_of(state: Path, name: str) -> list[tuple[str, ...]]:
    """(author, text) of a person's thread."""
    return await read(
        state,
        "SELECT m.author, m.text FROM messages m JOIN people p ON p.id = m.person_id "
        "WHERE p.local_key = $1 ORDER BY m.seq",
        name,
    )


async def runs_of(state: Path, name: str) -> list[tuple[str, ...]]:
    """(agent, status, error code) of a person's runs."""
    return await read(
        state,
        "SELECT r.agent, r.status, r.error_code FROM runs r JOIN people p ON p.id = r.person_id "
        "WHERE p.local_key = $1 ORDER BY r.started_at",
        name,
    )


async def test_sigterm_finishes_the_turn_in_flight_hangs_up_the_call_and_stops_postgres(state: Path) -> None:
    with server(state, "tests.fakes.slow_serve") as (process, url):
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            token = (await client.post("/v1/auth/local", json={"name": "Budi"})).json()["token"]
            headers = {"Authorization": f"Bearer {token}", "time-zone": "Asia/Jakarta"}
            ws_url = url.replace("http://", "ws://") + "/v1/voice/speaker"
            # `avagenc serve` builds the call doors after /readyz; the handshake waits for them
            # (web/doors.py), longer than websockets' 10 s on a busy machine.
            async with connect(ws_url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=60) as ws:
                await ws.send(json.dumps(START))
                assert json.loads(await ws.recv())["type"] == "ready"
                heard = Heard()
                listener = asyncio.create_task(listen(ws, heard))
                turn = asyncio.create_task(client.post("/v1/messages", json={"text": "hello"}, headers=headers))
                await asyncio.sleep(1.0)  # the slow model is now thinking
                assert not turn.done()
                process.send_signal(signal.SIGTERM)
                response = await turn
                with contextlib.suppress(ConnectionClosed):
                    await asyncio.wait_for(listener, timeout=30)
        assert exit_code(process, state) == 0
    assert response.status_code == 200, response.text
    assert [m["author"] for m in response.json()["messages"]] == ["human", "ava"]
    hangups = heard.of("hangup")
    assert hangups and hangups[-1]["reason"] == "shutdown", heard.events
    assert postgres_of(state) == []
    assert await thread_of(state, "budi") == [("human", "hello"), ("ava", "Sorry to keep you waiting: here I am.")]
    assert postgres_of(state) == []


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_after_kill_9_the_next_server_starts_and_its_clean_stop_leaves_no_postgres(
    state: Path, stop: signal.Signals
) -> None:
    with server(state, "cli") as (process, _url):
        process.kill()
        process.wait()
    assert postgres_of(state), "kill -9 leaves the embedded PostgreSQL running (it is its own process)"
    with server(state, "cli") as (process, url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert (await client.post("/v1/auth/local", json={"name": "Budi"})).status_code == 200
        process.send_signal(stop)
        assert exit_code(process, state) == 0
    assert postgres_of(state) == []
    # The servers' terminal shows their own lines, first of all; PostgreSQL's go to files.
    for log in state.parent.glob("server-*.log"):
        lines = log.read_text().splitlines()
        assert " avagenc " in lines[0] or " database.embedded " in lines[0], lines[:3]
        assert not [line for line in lines if "pgserver" in line or "initdb" in line]


async def test_a_second_signal_stops_at_once_and_the_next_start_fails_the_cut_run(state: Path) -> None:
    with server(state, "tests.fakes.slow_serve", slow_model_s=60) as (process, url):
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            token = (await client.post("/v1/auth/local", json={"name": "Budi"})).json()["token"]
            headers = {"Authorization": f"Bearer {token}"}
            turn = asyncio.create_task(client.post("/v1/messages", json={"text": "hello"}, headers=headers))
            await asyncio.sleep(1.0)
            process.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.5)
            started = time.monotonic()
            process.send_signal(signal.SIGINT)
            assert exit_code(process, state) == 0
            assert time.monotonic() - started < 20, "the second signal did not wait out the 30 s grace"
            with contextlib.suppress(httpx.HTTPError):
                await turn
    assert postgres_of(state) == []
    # The person's message is kept; the run it started is failed by the next start's sweep.
    with server(state, "cli") as (process, url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            page = (await client.get("/v1/messages", headers=headers)).json()["messages"]
        process.send_signal(signal.SIGTERM)
        assert exit_code(process, state) == 0
    assert [(m["author"], m["text"]) for m in page] == [("human", "hello")]
    assert await runs_of(state, "budi") == [("ava", "failed", "abandoned")]
    assert postgres_of(state) == []
