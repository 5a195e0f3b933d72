"""The processes a bench starts and stops, and the loops that drive them, written once.

Every bench that measures the product runs it the way a deployment does: its own OS process
on 127.0.0.1 (so the driver never shares its interpreter), on a PostgreSQL that is either
DATABASE_URL or an embedded one made for the run. Starting such a process, waiting for its
`/readyz`, and stopping it with SIGINT (uvicorn's graceful shutdown, then the services
close; a kill only when that hangs) used to be written out in each bench; a fix to one copy
(a longer start on a loaded machine, a log kept when it fails) then missed the others.
The open-loop text turns of the load benches live here for the same reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import httpx

from database import EmbeddedPostgres

ROOT = Path(__file__).parent.parent
STOP_TIMEOUT_S = 60.0  # a graceful shutdown longer than this is a hang: the process is killed
LOG_TAIL_CHARS = 2_000


class BenchFailed(Exception):
    """The run cannot produce honest numbers; the message says why."""


def serve_with_probe(probe: Path, figures: Callable[[], dict[str, Any]]) -> None:
    """In a bench's server process: on each SIGUSR1 write `figures()` (numbered `n`) to
    `probe` whole, then run `avagenc serve` itself until stopped. The signal handler runs
    between two bytecodes of whatever the loop was doing, so the work is handed to the loop,
    to run as one of its callbacks."""
    count = [0]

    def report() -> None:
        count[0] += 1
        partial = probe.with_suffix(".tmp")
        partial.write_text(json.dumps({"n": count[0], **figures()}))
        partial.replace(probe)

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().call_soon_threadsafe(report)

    signal.signal(signal.SIGUSR1, on_signal)
    from cli import main

    main(["serve"])


def log_tail(path: Path) -> str:
    return path.read_text(errors="replace")[-LOG_TAIL_CHARS:] if path.exists() else ""


@contextlib.contextmanager
def postgres() -> Iterator[tuple[str, str]]:
    """(a URL to create databases with, where it came from): DATABASE_URL or an embedded server."""
    url = os.environ.get("DATABASE_URL")
    if url:
        yield url, "DATABASE_URL"
        return
    folder = Path(tempfile.mkdtemp(prefix="avagenc-bench-"))
    embedded = EmbeddedPostgres(folder / "pg")
    try:
        yield embedded.start(), "embedded"
    finally:
        embedded.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def logs_kept_on_failure(prefix: str) -> Iterator[Path]:
    """A scratch folder for a run's server logs: removed after a run that went through, kept
    and named on stderr after one that failed (the log says why)."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    except BaseException:
        print(f"the servers' logs are kept in {work}", file=sys.stderr)
        raise
    shutil.rmtree(work, ignore_errors=True)


def exit_with(
    run: Callable[[str, str], Coroutine[Any, Any, int]],
    *,
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
) -> NoReturn:
    """A bench's end: `run(admin URL, where PostgreSQL came from)` inside `postgres()`, and
    its status as the exit code; a BenchFailed is one line on stderr and exit 1."""
    with postgres() as (admin_url, source), asyncio.Runner(loop_factory=loop_factory) as runner:
        try:
            status = runner.run(run(admin_url, source))
        except BenchFailed as exc:
            print(f"bench failed: {exc}", file=sys.stderr)
            status = 1
    sys.exit(status)


def fast_loop() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop where it is installed: a load generator's own overhead should be as small as it can be."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bound_socket(backlog: int) -> socket.socket:
    """A listening socket on 127.0.0.1 for a server started with `--fd`: the port is known
    before the server runs, and no other process can take it meanwhile."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(backlog)
    return listener


def environment(database_url: str, home: Path, port: int, *, voice_at_start: bool) -> dict[str, str]:
    """`avagenc serve`'s environment for a bench: offline everything (no vendor keys reach it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "FIREBASE_"))}
    env.update(
        DATABASE_URL=database_url,
        AVAGENC_HOME=str(home),
        PORT=str(port),
        SESSION_SECRET="cold-start-bench-" + "x" * 40,
        RUNS_PER_PERSON_PER_MINUTE_MAX="1000",
        VOICE_AT_START="true" if voice_at_start else "false",
    )
    return env


async def stop(process: asyncio.subprocess.Process, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGINT (uvicorn's graceful shutdown, then the services close), a kill past `timeout_s`."""
    if process.returncode is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        async with asyncio.timeout(timeout_s):
            await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()


@contextlib.asynccontextmanager
async def started(
    command: Sequence[str],
    *,
    log_path: Path,
    env: dict[str, str] | None = None,
    pass_fds: Sequence[int] = (),
    stderr_path: Path | None = None,
    stop_timeout_s: float = STOP_TIMEOUT_S,
    cwd: Path = ROOT,
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`command` run from the repository's root (or `cwd`: another tree of it), its output
    in `log_path` (stderr in `stderr_path` when given), stopped on the way out whatever
    happened."""
    with log_path.open("wb") as log, stderr_path.open("wb") if stderr_path else contextlib.nullcontext() as err:
        process = await asyncio.create_subprocess_exec(
            *command, stdout=log, stderr=err if err is not None else log, env=env, pass_fds=pass_fds, cwd=cwd
        )
    try:
        yield process
    finally:
        await stop(process, stop_timeout_s)


async def until_ready(
    client: httpx.AsyncClient,
    process: asyncio.subprocess.Process,
    log_path: Path,
    *,
    within_s: float,
    every_s: float,
    request_timeout_s: float = 5.0,
) -> float:
    """Poll `/readyz` until it answers 200; seconds it took. A server that exits or is not
    ready within `within_s` fails the run with the end of its log."""
    started_at = time.perf_counter()
    while process.returncode is None and time.perf_counter() - started_at < within_s:
        with contextlib.suppress(httpx.TransportError):
            if (await client.get("/readyz", timeout=request_timeout_s)).status_code == 200:
                return time.perf_counter() - started_at
        await asyncio.sleep(every_s)
    raise BenchFailed(f"the server did not become ready (log {log_path}):\n{log_tail(log_path)}")


@contextlib.asynccontextmanager
async def serving_module(
    module: str,
    arguments: Sequence[str],
    *,
    log_path: Path,
    backlog: int,
    python_flags: Sequence[str] = (),
    stop_timeout_s: float = 30.0,
) -> AsyncIterator[tuple[int, int]]:
    """A bench server (`python <python_flags> -m <module> <arguments> --fd N`) on a socket
    bound here, ready; yields its port and pid."""
    listener = bound_socket(backlog)
    port = int(listener.getsockname()[1])
    command = [sys.executable, *python_flags, "-m", module, *arguments, "--fd", str(listener.fileno())]
    async with started(
        command, log_path=log_path, pass_fds=(listener.fileno(),), stop_timeout_s=stop_timeout_s
    ) as process:
        listener.close()  # the server holds its own copy
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            await until_ready(client, process, log_path, within_s=90, every_s=0.2)
        yield port, process.pid


class TextTurns:
    """Text turns sent open loop: each on time, whether the ones before have answered or not."""

    def __init__(self) -> None:
        self.latencies_s: list[float] = []
        self.errors: list[str] = []

    async def say(self, client: httpx.AsyncClient, headers: dict[str, str]) -> None:
        at = time.perf_counter()
        try:
            answer = await client.post("/v1/messages", json={"text": "hello Ava"}, headers=headers)
        except httpx.HTTPError as exc:
            self.errors.append(type(exc).__name__)
            return
        if answer.status_code != 200:
            self.errors.append(str(answer.status_code))
        self.latencies_s.append(time.perf_counter() - at)

    async def open_loop(
        self, rate: float, seconds: float, turn: Callable[[int], tuple[httpx.AsyncClient, dict[str, str]]]
    ) -> float:
        """`rate` turns a second for `seconds`, turn i said by `turn(i)`'s client and person;
        the wall time until the last one answered."""
        total = int(rate * seconds)
        started_at = time.perf_counter()
        tasks = []
        for i in range(total):
            await asyncio.sleep(max(0.0, started_at + i / rate - time.perf_counter()))
            tasks.append(asyncio.create_task(self.say(*turn(i))))
        await asyncio.gather(*tasks)
        return time.perf_counter() - started_at
