"""What a call costs in memory, whether calls leak, and what a spoken turn adds to the thread.

One `avagenc serve` process (`cli.main(["serve"])`, the offline model and offline engines,
the call doors built before `/readyz`) on a migrated database of its own, embedded
PostgreSQL unless DATABASE_URL is set. Callers speak the partner speaker protocol over
`WS /v1/voice/speaker` with espeak-ng audio, through bench/voice_latency.py's microphone
(a 20 ms frame every 20 ms, silence between utterances). Three measurements:

1. **Per-call memory.** The server's resident memory idle (after one warm-up call, so the
   speech models and everything a first call builds are loaded), then with 1, 2, 4 … up to
   `--calls` calls open at once, each a different person who has said one request and heard
   the reply; MB per call is the increment over idle divided by the calls open.
2. **Leak.** `--sequence` calls one after another by one person (connect, say a request,
   hear the reply, hang up); after each, the server collects its garbage and the driver
   reads its memory. Reported: the slope of resident memory after the warm-up
   (`--warm-up` calls) in MB per 100 calls, and the live asyncio tasks, tracked objects,
   open file descriptors and threads before and after.
3. **Thread growth on a call.** Rows the person gains in every table keyed by person (the
   thread, runs, call records, live events …) per spoken turn, against a text turn with the
   same words in the same run.

Memory and descriptors are read from /proc. The server's own figures (live tasks, objects
the collector tracks) come from a probe this module installs in the server process before
it hands over to `avagenc serve`: SIGUSR1 asks the event loop to run `gc.collect()` and
write them to a file; nothing in the product changes. The figures are the process's: a
shared machine's load makes them slower to get, not different.

    .venv/bin/python -m bench.call_memory [--calls 8 --sequence 40]   # ~4 min
    .venv/bin/python -m bench.call_memory --quick                     # ~1-2 min, `make bench`

Exits 0 when every call was answered, 1 when a call got no reply (or a wrong one) or the
server would not start: the figures would not be honest then.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import gc
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import Any

import asyncpg
import httpx

from bench.databases import migrated
from bench.report import kept
from bench.servers import BenchFailed, environment, free_port, log_tail, postgres, started, until_ready
from bench.voice_latency import Clip, make_clip, voice_call

# Requests the offline model answers, with words its reply must contain; on and off in turn,
# so the home ends each pair as it began and every call does the same work.
REQUESTS: tuple[tuple[str, str], ...] = (
    ("turn on the bedroom light", "bedroom light is on"),
    ("turn off the bedroom light", "bedroom light is off"),
)
PROBE_TIMEOUT_S = 30.0
SETTLE_S = 1.0  # after a hang-up, for the server to close the call before it is measured


# --- the server's side: a probe, then `avagenc serve` ------------------------------------


def _serve_with_probe(probe: Path) -> None:
    """In the server process: install the SIGUSR1 probe, then run `avagenc serve` itself."""
    count = [0]

    def report() -> None:
        gc.collect()
        objects = gc.get_objects()
        tasks = asyncio.all_tasks()
        kinds = collections.Counter(task.get_coro().__qualname__ for task in tasks)  # type: ignore[union-attr]
        count[0] += 1
        figures = {
            "n": count[0],
            "tasks": len(tasks),
            "task_kinds": dict(kinds.most_common(12)),
            "objects": len(objects),
            "types": dict(collections.Counter(type(o).__qualname__ for o in objects).most_common(400)),
            "frozen": gc.get_freeze_count(),
        }
        partial = probe.with_suffix(".tmp")
        partial.write_text(json.dumps(figures))
        partial.replace(probe)

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        # A signal handler runs between two bytecodes of whatever the loop was doing: the
        # work is handed to the loop, to run as one of its callbacks.
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().call_soon_threadsafe(report)

    signal.signal(signal.SIGUSR1, on_signal)
    from cli import main

    main(["serve"])


# --- the driver's side ---------------------------------------------------------------------


def _proc(pid: int) -> dict[str, float]:
    """The process's memory (MB), threads and open descriptors, from /proc."""
    status: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            status[key] = int(value.split()[0]) / 1024
        elif key == "Threads":
            status[key] = int(value)
    status["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return status


class Server:
    """The serving process, measured: its /proc figures after its own garbage collection."""

    def __init__(self, process: asyncio.subprocess.Process, probe: Path) -> None:
        self.process = process
        self.probe = probe
        self._seen = 0

    async def sample(self) -> dict[str, Any]:
        if self.process.returncode is not None:
            raise BenchFailed("the server stopped")
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        while time.monotonic() < deadline:
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                figures: dict[str, Any] = json.loads(self.probe.read_text())
                if figures["n"] > self._seen:
                    self._seen = figures["n"]
                    return figures | _proc(self.process.pid)
            await asyncio.sleep(0.02)
        raise BenchFailed("the server's probe did not answer")


@contextlib.asynccontextmanager
async def serving(database_url: str, home: Path) -> Any:
    port = free_port()
    env = environment(database_url, home, port, voice_at_start=True)
    env.update(
        SIGN_INS_PER_ADDRESS_MAX="100000",
        RUNS_PER_PERSON_PER_MINUTE_MAX="100000",
        CALL_IDLE_S="900",  # the calls held open while the others are said stay open
        SIGNUP_GRANT_MICROS=str(10**15),  # no wallet guard ends a call
        VOICE_TTS=os.environ.get("VOICE_TTS", "neural"),
    )
    log_path = home / "serve.log"
    probe = home / "probe.json"
    command = [sys.executable, "-m", "bench.call_memory", "--serve-with-probe", str(probe)]
    async with (
        started(command, log_path=log_path, env=env) as process,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
    ):
        await until_ready(client, process, log_path, within_s=180, every_s=0.1)
        yield port, client, Server(process, probe), log_path


async def sign_in(client: httpx.AsyncClient, name: str) -> tuple[str, str]:
    """(person id, token)."""
    answer = await client.post("/v1/auth/local", json={"name": name})
    if answer.status_code != 200:
        raise BenchFailed(f"sign-in of {name} failed: {answer.status_code} {answer.text[:300]}")
    body = answer.json()
    return str(body["user"]["id"]), str(body["token"])


class Failures:
    """Turns that got no reply or the wrong one: any makes the run's figures worthless."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def check(self, where: str, turn: Any) -> None:
        if turn.problem or not turn.answered:
            heard = " / ".join(text for text, _ in turn.replies)[:120]
            self.lines.append(f"{where}: said {turn.clip.text!r}, {turn.problem or 'wrong reply'} (heard {heard!r})")


async def rows_of(database_url: str, person_id: str) -> dict[str, int]:
    """The person's rows in every table with a `person_id` column."""
    conn = await asyncpg.connect(database_url)
    try:
        tables = await conn.fetch(
            """SELECT table_name FROM information_schema.columns
            WHERE column_name = 'person_id' AND table_schema = 'public' ORDER BY table_name"""
        )
        counts: dict[str, int] = {}
        for row in tables:
            name = str(row["table_name"])
            counts[name] = int(await conn.fetchval(f'SELECT count(*) FROM "{name}" WHERE person_id = $1', person_id))
        return counts
    finally:
        await conn.close()


def slope_per_100(values: list[float]) -> float:
    """Least-squares slope of `values` against their index, per 100 steps."""
    if len(values) < 2:
        return float("nan")
    xs = range(len(values))
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(values)
    cov = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, values, strict=True))
    var = sum((x - mean_x) ** 2 for x in xs)
    return cov / var * 100


def levels_up_to(calls: int) -> list[int]:
    levels, n = [], 1
    while n < calls:
        levels.append(n)
        n *= 2
    return [*levels, calls]


async def per_call_memory(
    port: int, client: httpx.AsyncClient, server: Server, clips: list[Clip], calls: int, failures: Failures
) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """Idle, then calls opened one by one (each says one request), sampled at each level."""
    tokens = [(await sign_in(client, f"Memory caller {n}"))[1] for n in range(calls)]
    async with voice_call(port, tokens[0], "warm-up", []) as call:
        failures.check("warm-up", await call.turn(clips[0]))
    await asyncio.sleep(SETTLE_S)
    idle = await server.sample()
    samples: list[tuple[int, dict[str, Any]]] = []
    wanted = set(levels_up_to(calls))
    async with contextlib.AsyncExitStack() as stack:
        for n, token in enumerate(tokens, start=1):
            call = await stack.enter_async_context(voice_call(port, token, f"held-{n}", []))
            failures.check(f"held call {n}", await call.turn(clips[n % len(clips)]))
            if n in wanted:
                samples.append((n, await server.sample()))
    return idle, samples


async def leak(
    port: int, client: httpx.AsyncClient, server: Server, clips: list[Clip], count: int, failures: Failures
) -> list[dict[str, Any]]:
    """`count` calls in sequence by one person; the server sampled after each hang-up."""
    _, token = await sign_in(client, "Leak caller")
    samples = [await server.sample()]
    for n in range(count):
        async with voice_call(port, token, f"seq-{n}", []) as call:
            failures.check(f"call {n + 1} in sequence", await call.turn(clips[n % len(clips)]))
        await asyncio.sleep(SETTLE_S)
        samples.append(await server.sample())
    return samples


async def growth(
    port: int, client: httpx.AsyncClient, database_url: str, clips: list[Clip], failures: Failures, turns: int
) -> dict[str, dict[str, float]]:
    """Rows per spoken turn and per text turn, one person throughout. A text turn first
    makes what a person's first turn makes once (the sandbox home, the learning cursor);
    then one call of one turn and one of `turns`: their difference per turn is the spoken
    turn's, apart from what a call itself writes once; then `turns` text turns."""
    person_id, token = await sign_in(client, "Growth person")
    headers = {"Authorization": f"Bearer {token}"}

    async def text_turn(n: int) -> None:
        said = await client.post("/v1/messages", json={"text": clips[n % len(clips)].text}, headers=headers)
        if said.status_code != 200:
            raise BenchFailed(f"a text turn answered {said.status_code}: {said.text[:300]}")

    await text_turn(1)  # leaves the bedroom light off, as the first call expects to find it
    spoken: dict[int, dict[str, int]] = {}
    for count in (1, turns):
        await asyncio.sleep(SETTLE_S)
        before = await rows_of(database_url, person_id)
        async with voice_call(port, token, f"growth-{count}", []) as call:
            for n in range(count):
                failures.check(f"growth call, turn {n + 1}", await call.turn(clips[n % len(clips)]))
        await asyncio.sleep(SETTLE_S * 2)  # the call's closing writes
        after = await rows_of(database_url, person_id)
        spoken[count] = {table: after[table] - before[table] for table in after}
    if turns % 2:  # an odd call left the light on: the text turns start from off
        await text_turn(1)
        await asyncio.sleep(SETTLE_S)
    figures: dict[str, dict[str, float]] = {}
    figures["spoken turn"] = {t: (spoken[turns][t] - spoken[1][t]) / (turns - 1) for t in spoken[1]}
    figures["a call itself"] = {t: spoken[1][t] - figures["spoken turn"][t] for t in spoken[1]}
    before = await rows_of(database_url, person_id)
    for n in range(turns):
        await text_turn(n)
    await asyncio.sleep(SETTLE_S * 2)
    after = await rows_of(database_url, person_id)
    figures["text turn"] = {t: (after[t] - before[t]) / turns for t in after}
    return figures


def _mb(sample: dict[str, Any]) -> str:
    return f"RSS {sample['VmRSS']:.1f} MB (anon {sample['RssAnon']:.1f})"


def report(
    idle: dict[str, Any],
    held: list[tuple[int, dict[str, Any]]],
    sequence: list[dict[str, Any]],
    warm_up: int,
    rows: dict[str, dict[str, float]],
) -> list[str]:
    lines = ["per-call memory (server process, after its gc.collect()):"]
    lines.append(f"  idle after a warm-up call: {_mb(idle)}, threads {idle['Threads']:.0f}, fds {idle['fds']:.0f}")
    for n, sample in held:
        per_call = (sample["VmRSS"] - idle["VmRSS"]) / n
        lines.append(
            f"  {n:3d} calls open: {_mb(sample)}, +{sample['VmRSS'] - idle['VmRSS']:.1f} MB = {per_call:.2f} MB/call;"
            f" threads {sample['Threads']:.0f}, fds {sample['fds']:.0f}, tasks {sample['tasks']}"
        )
    if len(held) >= 2:
        xs = [float(n) for n, _ in held]
        ys = [s["VmRSS"] for _, s in held]
        mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
        fit = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)
        lines.append(f"  fitted over the levels: {fit:.2f} MB per call open")
    rss = [s["VmRSS"] for s in sequence]
    anon = [s["RssAnon"] for s in sequence]
    after_warm = rss[warm_up:]
    first, last = sequence[0], sequence[-1]
    calls = len(sequence) - 1
    lines.append(f"leak: {calls} calls in sequence (one person, connect, one request, reply, hang up):")
    lines.append(
        f"  RSS before {rss[0]:.1f} MB, after call {warm_up} {rss[warm_up]:.1f} MB, at the end {rss[-1]:.1f} MB"
    )
    lines.append("  RSS after each call, MB: " + " ".join(f"{v:.0f}" for v in rss[1:]))
    lines.append("  tracked objects after each call: " + " ".join(str(s["objects"]) for s in sequence[1:]))
    lines.append(
        f"  slope after the first {warm_up} calls: RSS {slope_per_100(after_warm):+.2f} MB per 100 calls,"
        f" anon {slope_per_100(anon[warm_up:]):+.2f} MB per 100 calls;"
        f" tracked objects {slope_per_100([float(s['objects']) for s in sequence[warm_up:]]):+.0f} per 100 calls"
    )
    half = len(rss) // 2
    late = slope_per_100(rss[half:])
    lines.append(f"  slope over the last half (calls {half}-{calls}): RSS {late:+.2f} MB per 100 calls")
    for key in ("tasks", "objects", "fds", "Threads"):
        lines.append(f"  {key:8} before {first[key]:>8,.0f}   after warm-up {sequence[warm_up][key]:>8,.0f}"
                     f"   at the end {last[key]:>8,.0f}")  # fmt: skip
    if last["tasks"] != first["tasks"]:
        lines.append(f"  tasks at the end by coroutine: {last['task_kinds']}")
    grown = collections.Counter(last["types"])
    grown.subtract(sequence[warm_up]["types"])
    top = [f"{name} {n:+d}" for name, n in grown.most_common(8) if n > 0]
    if top:
        lines.append(f"  tracked objects grown since the warm-up, by type: {', '.join(top)}")
    lines.append("rows the person gains (tables keyed by person; zero columns left out):")
    tables = sorted(t for t in rows["text turn"] if any(rows[k][t] for k in rows))
    lines.append(f"  {'':14}" + "".join(f"{t:>14}" for t in tables) + f"{'all':>8}")
    for kind, counts in rows.items():
        lines.append(f"  {kind:14}" + "".join(f"{counts[t]:14.1f}" for t in tables) + f"{sum(counts.values()):8.1f}")
    return lines


async def run(args: argparse.Namespace) -> int:
    load = os.getloadavg()[0]
    started = time.perf_counter()
    clips = [await make_clip(text, expected) for text, expected in REQUESTS]
    failures = Failures()
    phases: dict[str, float] = {}
    with postgres() as (admin_url, source), tempfile.TemporaryDirectory(prefix="avagenc-call-memory-") as folder:
        home = Path(folder)
        database_url = await migrated(admin_url, f"avagenc_call_memory_{os.getpid()}")
        async with serving(database_url, home) as (port, client, server, log_path):
            try:
                phases["server start"] = time.perf_counter() - started
                ready = await server.sample()
                at = time.perf_counter()
                idle, held = await per_call_memory(port, client, server, clips, args.calls, failures)
                phases["calls held open"] = time.perf_counter() - at
                await asyncio.sleep(SETTLE_S)
                at = time.perf_counter()
                sequence = await leak(port, client, server, clips, args.sequence, failures)
                phases["calls in sequence"] = time.perf_counter() - at
                load = max(load, os.getloadavg()[0])
                at = time.perf_counter()
                rows = await growth(port, client, database_url, clips, failures, args.turns)
                phases["thread growth"] = time.perf_counter() - at
            except BaseException:
                print(f"the server's log, last lines:\n{log_tail(log_path)}", file=sys.stderr)
                raise
        load = max(load, os.getloadavg()[0])
    voice = os.environ.get("VOICE_TTS", "neural")
    print(
        f"call memory ({source} PostgreSQL, offline model and engines, VOICE_TTS={voice},"
        f" {time.perf_counter() - started:.0f} s, load average up to {load:.1f} on {os.cpu_count()} cores):"
    )
    print("  took " + ", ".join(f"{name} {s:.0f} s" for name, s in phases.items()))
    print(f"  at /readyz (doors built, before any call): {_mb(ready)}")
    for line in report(idle, held, sequence, min(args.warm_up, args.sequence - 1), rows):
        print(line)
    if failures.lines:
        print(f"{len(failures.lines)} turns got no reply or the wrong one:", file=sys.stderr)
        for line in failures.lines:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=8, help="calls held open at once, at most")
    parser.add_argument("--sequence", type=int, default=40, help="calls one after another (the leak check)")
    parser.add_argument("--warm-up", type=int, default=5, help="calls in sequence left out of the slope")
    parser.add_argument("--turns", type=int, default=3, help="spoken turns in the thread-growth call (>= 2)")
    parser.add_argument("--quick", action="store_true", help="2 calls at once, 4 in sequence (~2 min)")
    parser.add_argument("--serve-with-probe", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_with_probe is not None:
        _serve_with_probe(args.serve_with_probe)
        return
    if args.quick:
        args.calls, args.sequence, args.warm_up, args.turns = 2, 4, 1, 2
    if args.calls < 1 or args.sequence < 2 or args.turns < 2:
        parser.error("--calls must be at least 1, --sequence and --turns at least 2")
    try:
        with kept("call_memory"):
            status = asyncio.run(run(args))
    except BenchFailed as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
