"""The terminal client's start: from starting `python -m cli chat --url …` in a pseudo-terminal
to its prompt on the screen (issue 23 asks for under a second), against one server.

The server is `python -m cli serve`, its own process on an embedded (or DATABASE_URL)
PostgreSQL, already warm. Each client start runs in a pseudo-terminal read through a terminal
emulator (pyte), which answers the client's cursor-position questions as a real terminal does;
the start ends when the screen's last line above the status line is the prompt, and the client
then leaves with Ctrl-D. Each start is the same person (one name), as someone who opens the
chat every day: its typed history and its remembered session (docs/http.md#terminal-client)
are in folders kept for the whole run. Three kinds of start take turns, so a shared machine's
load falls on all alike:

- `remembered`: this tree's client, with the session the previous start remembered;
- `signs in`: this tree's client with an empty config folder (no remembered session);
- `baseline`: the client of another checkout (`--baseline DIR`, e.g. an older commit's files
  from `git archive`), when given.

One start of each comes first and is not counted (it compiles the bytecode and remembers the
session). Each start's wall time is given, and the CPU the client had used by its prompt (all
its threads, from /proc): on a loaded machine the wall time stretches, much less the CPU.

    .venv/bin/python -m bench.terminal_start [--runs 5] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil
import pyte

from bench.databases import migrated
from bench.report import kept
from bench.servers import ROOT, BenchFailed, environment, exit_with, free_port, started, until_ready

ROWS, COLUMNS = 40, 100
PROMPT = "you>"
# A start that has not shown its prompt by then has failed (a loaded machine takes seconds).
START_TIMEOUT_S = 60.0
EXIT_TIMEOUT_S = 10.0
NAME = "Bench Terminal"


class _Screen(pyte.Screen):
    """A screen that answers the program's questions (where is the cursor?) on its terminal."""

    def __init__(self, answer: Callable[[str], None]) -> None:
        super().__init__(COLUMNS, ROWS)
        self._answer = answer

    def write_process_input(self, data: str) -> None:
        self._answer(data)


def _controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _prompt_shown(screen: pyte.Screen) -> bool:
    lines = [line.rstrip() for line in screen.display if line.strip() and not line.startswith(" wallet")]
    return bool(lines) and lines[-1] == PROMPT


def one_start(tree: Path, url: str, folders: Path) -> tuple[float, float]:
    """Seconds from starting the client of `tree` to its prompt on the screen, and the CPU
    seconds it had used by then (all its threads); it then leaves."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "TERM": "xterm",
        "XDG_STATE_HOME": str(folders / "state"),
        "XDG_CONFIG_HOME": str(folders / "config"),
    }
    started_at = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "chat", "--url", url, "--name", NAME],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=tree,
        start_new_session=True,
        preexec_fn=_controlling_terminal,
    )
    os.close(slave)

    def answer(data: str) -> None:
        os.write(master, data.encode())

    screen = _Screen(answer)
    stream = pyte.ByteStream(screen)
    try:
        while not _prompt_shown(screen):
            if time.perf_counter() - started_at > START_TIMEOUT_S or process.poll() is not None:
                raise BenchFailed(f"no prompt from {tree}:\n" + "\n".join(screen.display).rstrip())
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    stream.feed(os.read(master, 65536))
                except OSError:  # the client closed its terminal: it has left
                    process.wait(EXIT_TIMEOUT_S)
        took = time.perf_counter() - started_at
        used = psutil.Process(process.pid).cpu_times()
        os.write(master, b"\x04")  # Ctrl-D: leave
        process.wait(EXIT_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    return took, used.user + used.system


async def run(admin_url: str, source: str) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a checkout whose client to start in turn with this one's")
    args = parser.parse_args()
    if args.baseline is not None and not (args.baseline / "cli" / "terminal.py").exists():
        raise BenchFailed(f"{args.baseline} has no cli/terminal.py")
    database_url = await migrated(admin_url, f"avagenc_terminal_{os.getpid()}")
    with tempfile.TemporaryDirectory(prefix="avagenc-terminal-") as folder:
        work = Path(folder)
        port = free_port()
        log_path = work / "serve.log"
        env = environment(database_url, work / "home", port, voice_at_start=False)
        # Every start of the baseline and of the signing-in client signs in from 127.0.0.1:
        # the product's 10 a minute per address would refuse the bench, not time it.
        env["SIGN_INS_PER_ADDRESS_MAX"] = "1000"
        url = f"http://127.0.0.1:{port}"
        async with (
            started([sys.executable, "-m", "cli", "serve"], log_path=log_path, env=env) as process,
            httpx.AsyncClient(base_url=url) as client,
        ):
            await until_ready(client, process, log_path, within_s=120, every_s=0.05)
            kinds: dict[str, tuple[Path, Callable[[int], Path]]] = {
                "remembered": (ROOT, lambda _: work / "kept"),
                "signs in": (ROOT, lambda i: work / f"fresh-{i}"),
            }
            if args.baseline is not None:
                kinds["baseline"] = (args.baseline.resolve(), lambda _: work / "baseline")
            for tree, folders in kinds.values():  # compiles the bytecode, remembers the session
                await asyncio.to_thread(one_start, tree, url, folders(-1))
            times: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
            loads = [os.getloadavg()[0]]
            for i in range(args.runs):
                for kind, (tree, folders) in kinds.items():
                    times[kind].append(await asyncio.to_thread(one_start, tree, url, folders(i)))
                loads.append(os.getloadavg()[0])
    print(
        f"terminal client, start to prompt ({source} PostgreSQL, {args.runs} starts each, taking turns;"
        f" load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores):"
    )
    for kind, starts in times.items():
        walls, cpus = sorted(w for w, _ in starts), sorted(c for _, c in starts)
        print(
            f"  {kind:10} median {statistics.median(walls):5.2f} s   range {walls[0]:.2f}-{walls[-1]:.2f} s"
            f"   CPU to the prompt median {statistics.median(cpus):4.2f} s ({cpus[0]:.2f}-{cpus[-1]:.2f})"
            f"   all {' '.join(f'{w:.2f}' for w, _ in starts)}"
        )
    return 0


if __name__ == "__main__":
    with kept("terminal_start"):
        exit_with(run)
