"""Real servers for end-to-end tests: the app under uvicorn on 127.0.0.1, in this
process or as a separate `avagenc serve` process, and a small SSE reader."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI


@contextlib.asynccontextmanager
async def serve_in_process(app: FastAPI, host: str = "127.0.0.1") -> AsyncIterator[str]:
    """Serve `app` with a real uvicorn on a free port of `host` (loopback by default);
    yields the base URL."""
    config = uvicorn.Config(app, host=host, port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serve_subprocess(
    env: dict[str, str],
    *,
    log_path: Path | None = None,
    command: Sequence[str] | None = None,
    cwd: Path | None = None,
    ready_s: float = 30,
) -> Iterator[str]:
    """Run `avagenc serve` as its own OS process; yields the base URL once it is healthy.
    Its log (standard error) goes to `log_path` when one is given, for the test to read.
    `command` runs another program in its place (an installed `avagenc`), in `cwd`."""
    port = free_port()
    # A file, not a pipe: a chatty server can never block on a full pipe.
    log = (  # closed in the finally below, after the process
        log_path.open("w+b") if log_path is not None else tempfile.TemporaryFile()  # noqa: SIM115
    )
    process = subprocess.Popen(
        [*(command or (sys.executable, "-m", "cli")), "serve", "--port", str(port)],
        env={**os.environ, **env},
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"server exited: {log.read().decode()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError("server did not become ready")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@dataclass(frozen=True)
class SseEvent:
    id: int | None
    type: str
    data: dict[str, Any]


async def read_events(response: httpx.Response) -> AsyncIterator[SseEvent]:
    """Parse a text/event-stream into events; comments and retry hints are skipped."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if "data" in fields:
                yield SseEvent(
                    int(fields["id"]) if "id" in fields else None,
                    fields.get("event", "message"),
                    json.loads(fields["data"]),
                )
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


async def collect(events: AsyncIterator[SseEvent], until: str, *, timeout_s: float = 10) -> list[SseEvent]:
    """Events up to and including the first whose type and author/agent match `until`
    (written as `type` or `type:who`)."""
    seen: list[SseEvent] = []
    kind, _, who = until.partition(":")
    async with asyncio.timeout(timeout_s):
        async for event in events:
            seen.append(event)
            if event.type == kind and (not who or who in (event.data.get("author"), event.data.get("agent"))):
                return seen
    raise AssertionError(f"stream ended before {until}: {[e.type for e in seen]}")
