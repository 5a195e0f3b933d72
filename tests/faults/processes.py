"""Whole server processes for the fault tests: `avagenc serve` on a database the test owns,
started with the settings a test gives and waited for until it answers `/readyz`."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx

from tests.fakes.servers import free_port

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def serving(
    database_url: str, home: Path, extra: Mapping[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """One server process on `database_url` with AVAGENC_HOME `home` (its log beside it),
    stopped with SIGTERM at the end if it still lives."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "AVAGENC_HOME": str(home),
        "SESSION_SECRET": "fault-servers-" + "x" * 40,
        "VOICE_PRELOAD": "false",
        "SWEEP_INTERVAL_S": "0.5",
        **(extra or {}),
    }
    log = (home.parent / f"server-{port}.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--port", str(port)], env=env, cwd=ROOT, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, "the server exited early"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.2)
        yield process, url
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)
        log.close()


def wallet_verify(database_url: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`avagenc wallet verify` on the database, as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "cli", "wallet", "verify"],
        env={**os.environ, "DATABASE_URL": database_url, "AVAGENC_HOME": str(home)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
