"""Load on one instance: live-event clients held open while messages arrive at a steady rate,
and voice calls said beside them.

One `avagenc serve` process (the offline model; its own OS process, so its resident memory
is its own) on a running PostgreSQL. `--people` people sign in; `--clients` live-event
streams are spread over them and held open for the whole run; then messages are posted at
`--rate` per second for `--seconds`, open loop (each on time, whether the ones before have
answered or not), round robin over the people. Reported: errors (any answer but 200, any
stream that ended), turn latency p50/p99, the rate achieved, live events the clients
received, the CPU time per turn of the server process and of the PostgreSQL instance (with
the streams' reads it causes), and
the server's resident memory after the streams opened, after warm-up
(the first fifth of the run) and at the end. Issue 24's setting is `--clients 200 --rate
50 --seconds 60`; the defaults are shorter for a shared machine.

`--calls N` adds N simultaneous voice calls, each a person of its own on the partner
speaker door, through bench/voice_latency.py's microphone (espeak-ng speech, a 20 ms frame
every 20 ms, silence between utterances). Each call says one warm-up request before the
text load starts, then says requests one after another, each after the last reply ended,
until the run's `--seconds` are over. Reported beside the text figures: the turns said,
answered and unanswered (no reply within 20 s, or the wrong words), and end of speech to
first reply audio p50/p99. `--rate 0` runs the calls alone.

What limits the instance is read in the same run: the server's CPU split between its event
loop thread (one core at most, whatever the machine has) and its other threads (Whisper,
the voice, the default executor), the PostgreSQL instance's CPU, the driver's own CPU (it
shares the cores), and each database pool's connections in use against its size, read from
`/metrics` every second (a pool that sits at its size is where requests wait).

`--server-tree DIR` serves another tree of the repository (a `git archive` of main) with
the same driver, for a change measured against main in the same minutes; `--server-profile
FILE` runs the server under cProfile (its main thread, the event loop; it slows the server).

`--count-statements`: the server also counts every statement its database connections
send (asyncpg's query loggers, installed in the server process before it hands over to
`avagenc serve`), and the statements per turn are printed: all of them, asyncpg's reset on
handing a connection back, and the learning worker's. Counting costs the server some CPU,
so its CPU figures are not comparable with a run without it.

    .venv/bin/python -m bench.load [--clients 200 --rate 50 --seconds 60] [--calls 10] [--count-statements]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from websockets.exceptions import WebSocketException

from bench.cold_start import _prepare
from bench.report import kept
from bench.servers import (
    ROOT,
    BenchFailed,
    TextTurns,
    environment,
    free_port,
    postgres,
    serve_with_probe,
    started,
    until_ready,
)
from bench.turn_overhead import Watched, postmaster_pid
from bench.voice_latency import SAYINGS, WARM_UP, Clip, Turn, make_clip, voice_call

CALLS_MAX = 16  # CALLS_PER_PROCESS_MAX's default: one process takes no more
CALL_STAGGER_S = 1.0  # the calls' warm-ups and first requests start this far apart
CALLS_WARM_WITHIN_S = 180.0  # the warm-up turns, the speech models' load included
CALLS_END_WITHIN_S = 90.0  # a call's last turn after the run: its reply timeout and audio
SAMPLE_EVERY_S = 1.0  # /metrics is read this often during the run
_POOL_LINE = re.compile(r'^avagenc_db_connections\{pool="([^"]*)",state="([^"]*)"\} (\S+)$', re.MULTILINE)


# --- statement counting (--count-statements): the server's side, then the driver's ---------

PROBE_TIMEOUT_S = 10.0
# `python -m bench.load --serve-counting PROBE`: the server process of `--count-statements`.
SERVE_COUNTING = "--serve-counting"


def statement_kind(query: str) -> str:
    """What one statement a connection sent is, for counting."""
    words = " ".join(query.split()).upper()
    if "TYPEINFO_TREE" in words or "SET_CONFIG('JIT'" in words:
        return "introspection"  # asyncpg learning a type, once per connection
    if "PG_ADVISORY_UNLOCK_ALL()" in words:
        return "check-in"  # asyncpg's reset of a connection handed back to its pool
    if "KNOWLEDGE_CURSORS" in words or "'KNOWLEDGE:'" in words:
        return "learning"  # the worker's backlog check, lock, cursor and unlock (chat.learning)
    return "other"


def _serve_counting(probe: Path) -> None:
    """In the server process: count every statement of every database connection, write
    the counts to `probe` on SIGUSR1, then run `avagenc serve` itself."""
    import asyncpg

    counts: collections.Counter[str] = collections.Counter()
    connect = asyncpg.connect

    def logged(record: asyncpg.connection.LoggedQuery) -> None:
        counts[statement_kind(record.query)] += 1

    async def counted(*args: Any, **kwargs: Any) -> asyncpg.Connection:
        conn: asyncpg.Connection = await connect(*args, **kwargs)
        conn.add_query_logger(logged)
        return conn

    # Read at each call by the pools' and the listener's connect (database.pool, database.listener).
    asyncpg.connect = counted  # type: ignore[assignment]
    serve_with_probe(probe, lambda: dict(counts))


def _read_counts(probe: Path) -> dict[str, int]:
    counts: dict[str, int] = json.loads(probe.read_text())  # a few bytes: no need for a thread
    return counts


async def _statements(process: asyncio.subprocess.Process, probe: Path, seen: int) -> dict[str, int]:
    """The server's counts so far (its probe's answer numbered past `seen`)."""
    process.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
            counts = _read_counts(probe)
            if counts["n"] > seen:
                return counts
        await asyncio.sleep(0.02)
    raise BenchFailed("the server's statement counts did not come")


def _per_turn(before: dict[str, int], after: dict[str, int], turns: int) -> str:
    spent = {kind: after.get(kind, 0) - before.get(kind, 0) for kind in ("check-in", "learning", "other")}
    total = sum(spent.values())
    return (
        f"  statements per turn (type look-ups left out): {total / turns:.1f} in all; asyncpg's reset on "
        f"check-in {spent['check-in'] / turns:.1f}, the learning worker's {spent['learning'] / turns:.1f}, "
        f"the rest {spent['other'] / turns:.1f} ({total:,} statements for {turns} turns)"
    )


def _rss_mb(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 2**20


def quantile(values: Iterable[float], q: float) -> float:
    """The value at rank `q` of the sorted values (nearest rank below; NaN when none):
    the p99 of 300 turns is the 298th slowest's neighbour, not an interpolation."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def pool_levels(exposition: str) -> dict[str, tuple[float, float]]:
    """{pool: (connections in use, the pool's size)} from a `/metrics` page."""
    seen: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for pool, state, value in _POOL_LINE.findall(exposition):
        seen[pool][state] = float(value)
    return {pool: (states.get("in_use", 0.0), states.get("max", math.nan)) for pool, states in seen.items()}


def thread_ticks(stats: Iterable[tuple[int, str]], main: int) -> dict[str, int]:
    """CPU ticks (user + system) by thread group from (thread id, /proc/.../stat text)
    pairs: the thread whose id is the process's is `event loop`; the others are grouped by
    their name."""
    ticks: dict[str, int] = collections.Counter()
    for tid, text in stats:
        name, _, rest = text.partition(" (")[2].rpartition(")")
        fields = rest.split()
        ticks["event loop" if tid == main else name] += int(fields[11]) + int(fields[12])
    return dict(ticks)


def _threads_of(pid: int) -> dict[str, int]:
    stats = []
    for entry in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            stats.append((int(entry.name), (entry / "stat").read_text()))
    return thread_ticks(stats, pid)


async def _stream(client: httpx.AsyncClient, headers: dict[str, str], received: list[int], failed: list[str]) -> None:
    try:
        async with client.stream("GET", "/v1/events", headers=headers, timeout=None) as response:
            if response.status_code != 200:
                failed.append(f"stream {response.status_code}")
                return
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    received[0] += 1
        failed.append("a stream ended")
    except asyncio.CancelledError:
        raise
    except httpx.HTTPError as exc:
        failed.append(f"stream {type(exc).__name__}")


@dataclass
class Calls:
    """The voice calls beside the text load, and what each of their turns got back."""

    count: int
    warm: list[Turn] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # calls refused or cut off
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # every call warmed up (or failed)
    go: asyncio.Event = field(default_factory=asyncio.Event)  # the text load has started
    stop: asyncio.Event = field(default_factory=asyncio.Event)  # the run's time is over

    def _settled(self) -> None:
        if len(self.warm) + len(self.failed) >= self.count:
            self.ready.set()

    async def caller(self, port: int, token: str, index: int, clips: dict[str, Clip]) -> None:
        """One person on a call: a warm-up request, then requests one after another until stopped."""
        try:
            await asyncio.sleep(index * CALL_STAGGER_S)  # not all at once: their speech would queue for Whisper
            async with voice_call(port, token, f"load-{index}", [], open_timeout_s=60) as call:
                self.warm.append(await call.turn(clips[WARM_UP[0]]))
                self._settled()
                await self.go.wait()
                await asyncio.sleep(index * CALL_STAGGER_S)
                said = 0
                while not self.stop.is_set():
                    text = SAYINGS[(1 + 3 * index + said) % len(SAYINGS)][0]
                    self.turns.append(await call.turn(clips[text]))
                    said += 1
        except (BenchFailed, OSError, WebSocketException) as exc:
            self.failed.append(f"call {index}: {exc!r}"[:200])
            self._settled()

    def lines(self) -> list[str]:
        unanswered = [t for t in self.turns if t.problem or not t.answered or t.latency_s is None]
        heard = [t.latency_s for t in self.turns if t not in unanswered and t.latency_s is not None]
        warm = [t.latency_s for t in self.warm if t.latency_s is not None]
        problems = sorted({t.problem or "wrong reply" for t in unanswered})
        return [
            f"  calls: {self.count} at once on the speaker door, {self.count - len(self.failed)} held to the end"
            f"{f', {len(self.failed)} refused or cut off {self.failed[:3]}' if self.failed else ''};"
            f" turns said during the run {len(self.turns)}, answered {len(heard)}, unanswered {len(unanswered)}"
            f"{f' {problems[:4]}' if problems else ''}",
            f"  call turns, end of speech to first reply audio: p50 {quantile(heard, 0.5) * 1000:.0f} ms,"
            f" p99 {quantile(heard, 0.99) * 1000:.0f} ms (warm-up turns before the load, one call at a time"
            f" {CALL_STAGGER_S:g} s apart: p50 {quantile(warm, 0.5) * 1000:.0f} ms)",
        ]


class Pools:
    """Each pool's connections in use, read from `/metrics` every SAMPLE_EVERY_S."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = collections.defaultdict(list)
        self.size: dict[str, float] = {}

    async def watch(self, client: httpx.AsyncClient) -> None:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                page = await client.get("/metrics", timeout=10)
                for pool, (in_use, size) in pool_levels(page.text).items():
                    self.samples[pool].append(in_use)
                    self.size[pool] = size
            await asyncio.sleep(SAMPLE_EVERY_S)

    def line(self) -> str:
        parts = []
        for pool, used in sorted(self.samples.items()):
            size = self.size[pool]
            full = sum(1 for n in used if n >= size)
            parts.append(f"{pool} max {max(used):.0f}/{size:.0f}, full in {full}/{len(used)} samples")
        return "  database pools, connections in use (read each second): " + ("; ".join(parts) or "none read")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=50)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="messages per second (0: the calls alone)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--calls", type=int, default=0, help="voice calls said at once beside the text load")
    parser.add_argument("--server-log", type=Path, help="keep a copy of the server's log here")
    parser.add_argument(
        "--server-tree", type=Path, help="serve another tree of this repository (a `git archive` of main): same driver"
    )
    parser.add_argument(
        "--server-profile", type=Path, help="cProfile the server's main thread into this file (it slows the server)"
    )
    parser.add_argument("--count-statements", action="store_true", help="print statements per turn")
    args = parser.parse_args()
    if args.clients > args.people * 5:
        raise BenchFailed("at most 5 streams per person (SSE_STREAMS_PER_PERSON_MAX)")
    if not 0 <= args.calls <= CALLS_MAX:
        raise BenchFailed(f"--calls must be 0-{CALLS_MAX} (CALLS_PER_PROCESS_MAX)")
    clips = {text: await make_clip(text, expected) for text, expected in (*SAYINGS, WARM_UP)} if args.calls else {}
    with postgres() as (admin_url, source), tempfile.TemporaryDirectory(prefix="avagenc-load-") as folder:
        home = Path(folder)
        database_url = await _prepare(admin_url)
        port = free_port()
        # The call doors built before /readyz, so the idle figure holds everything a server loads.
        env = environment(database_url, home, port, voice_at_start=True)
        env.update(RUNS_PER_PERSON_PER_MINUTE_MAX="100000", RUNS_IN_FLIGHT_PER_PERSON_MAX="100",
                   SIGN_INS_PER_ADDRESS_MAX="100000", VOICE_PRELOAD="false")  # fmt: skip
        if args.calls:
            # The speech models load at the start, not in the first caller's turn; no wallet
            # guard or idle timer ends a call while the others warm up.
            env.update(VOICE_PRELOAD="true", SIGNUP_GRANT_MICROS=str(10**15), CALL_IDLE_S="900")
        tree = args.server_tree.resolve() if args.server_tree else ROOT
        if args.server_tree:
            env["PYTHONPATH"] = str(tree)
        log_path = home / "serve.log"
        profiled = ["-m", "cProfile", "-o", str(args.server_profile.resolve())] if args.server_profile else []
        command = [sys.executable, *profiled, "-m", "cli", "serve"]
        probe = home / "statements.json"
        if args.count_statements:
            command = [sys.executable, *profiled, "-m", "bench.load", SERVE_COUNTING, str(probe)]
        limits = httpx.Limits(max_connections=args.clients + 200, max_keepalive_connections=200)
        async with (
            started(command, log_path=log_path, env=env, cwd=tree) as process,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60, limits=limits) as client,
        ):
            await until_ready(client, process, log_path, within_s=150, every_s=0.05)
            idle_mb = _rss_mb(process.pid)
            people = []
            for n in range(args.people):
                body = (await client.post("/v1/auth/local", json={"name": f"Load {n}"})).json()
                people.append({"Authorization": f"Bearer {body['token']}"})
            received: list[int] = [0]
            failed: list[str] = []
            streams = [
                asyncio.create_task(_stream(client, people[i % args.people], received, failed))
                for i in range(args.clients)
            ]
            await asyncio.sleep(3)
            streams_mb = _rss_mb(process.pid)
            calls = Calls(args.calls)
            callers = []
            if args.calls:
                tokens = []
                for n in range(args.calls):
                    body = (await client.post("/v1/auth/local", json={"name": f"Caller {n}"})).json()
                    tokens.append(body["token"])
                callers = [asyncio.create_task(calls.caller(port, t, i, clips)) for i, t in enumerate(tokens)]
                try:
                    await asyncio.wait_for(calls.ready.wait(), CALLS_WARM_WITHIN_S)
                except TimeoutError as exc:
                    raise BenchFailed(f"the calls did not warm up within {CALLS_WARM_WITHIN_S:g} s") from exc
            calls_mb = _rss_mb(process.pid)
            said = TextTurns()
            warm_mb = [calls_mb]
            total = int(args.rate * args.seconds)

            def turn(i: int) -> tuple[httpx.AsyncClient, dict[str, str]]:
                if i == total // 5:
                    warm_mb[0] = _rss_mb(process.pid)
                return client, people[i % args.people]

            load = os.getloadavg()[0]
            pools = Pools()
            watching = asyncio.create_task(pools.watch(client))
            # CPU time, unlike latency, barely moves when other work shares the machine.
            watched = Watched(server=process.pid, postmaster=await postmaster_pid(database_url))
            counted_before = await _statements(process, probe, 0) if args.count_statements else {}
            cpu_before, threads_before = watched.cpu_s(), _threads_of(process.pid)
            driver_before, wall_before = sum(psutil.Process().cpu_times()[:2]), time.perf_counter()
            calls.go.set()
            asyncio.get_running_loop().call_later(args.seconds, calls.stop.set)
            if total:
                took = await said.open_loop(args.rate, args.seconds, turn)
            else:
                await calls.stop.wait()
                took = args.seconds
            await asyncio.sleep(2)  # the last events reach the clients
            cpu_after, threads_after = watched.cpu_s(), _threads_of(process.pid)
            counted = await _statements(process, probe, counted_before["n"]) if args.count_statements else {}
            driver_cpu = sum(psutil.Process().cpu_times()[:2]) - driver_before
            wall = time.perf_counter() - wall_before
            server_cpu, database_cpu = (after - before for after, before in zip(cpu_after, cpu_before, strict=True))
            end_mb = _rss_mb(process.pid)
            load = max(load, os.getloadavg()[0])
            watching.cancel()
            calls.stop.set()
            if callers:
                done, _ = await asyncio.wait(callers, timeout=CALLS_END_WITHIN_S)
                if len(done) < len(callers):
                    calls.failed.append(f"{len(callers) - len(done)} calls did not end their last turn")
            for task in [*streams, *callers, watching]:
                task.cancel()
            await asyncio.gather(*streams, *callers, watching, return_exceptions=True)
        if args.server_log is not None:
            shutil.copyfile(log_path, args.server_log)
    latencies, errors = said.latencies_s, said.errors
    setting = f", {args.calls} voice calls" if args.calls else ""
    if args.server_tree:
        setting += f", served from {args.server_tree}"
    print(
        f"load ({source} PostgreSQL, offline model, {args.clients} live-event clients over {args.people} people"
        f"{setting}, {args.rate:g} msg/s for {args.seconds:g} s; load average up to {load:.1f}"
        f" on {os.cpu_count()} cores):"
    )
    wrong = errors + failed
    print(
        f"  text turns {len(latencies)} in {took:.1f} s ({len(latencies) / took:.1f}/s),"
        f" errors {len(wrong)} {sorted(set(wrong))[:5]}"
    )
    p50, p99 = quantile(latencies, 0.5), quantile(latencies, 0.99)
    print(f"  text turn latency p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    if args.calls:
        for line in calls.lines():
            print(line)
    print(f"  live events received by the clients: {received[0]:,}")
    turns = max(1, len(latencies))
    print(
        f"  CPU per turn (the streams' reads included): server {server_cpu * 1000 / turns:.1f} ms, "
        f"PostgreSQL {database_cpu * 1000 / turns:.1f} ms ({server_cpu:.1f} s and {database_cpu:.1f} s in all)"
    )
    if counted:
        print(_per_turn(counted_before, counted, turns))
    # The process's own figure counts threads that ended during the run too; a thread's does not.
    loop_s = (threads_after.get("event loop", 0) - threads_before.get("event loop", 0)) / os.sysconf("SC_CLK_TCK")
    print(
        f"  cores busy over the run's {wall:.0f} s: server {server_cpu / wall:.2f} (its event loop thread"
        f" {loop_s / wall:.2f}, other threads {(server_cpu - loop_s) / wall:.2f}: Whisper, the voice),"
        f" PostgreSQL {database_cpu / wall:.2f}, this driver {driver_cpu / wall:.2f}"
    )
    print(pools.line())
    print(f"  server RSS: idle {idle_mb:.0f} MB, with the streams open {streams_mb:.0f} MB "
          + ("(the speech models loading meanwhile), " if args.calls else
             f"({(streams_mb - idle_mb) * 1024 / max(1, args.clients):.0f} KB per client), ")
          + (f"with the calls warmed up {calls_mb:.0f} MB, " if args.calls else "")
          + f"after warm-up {warm_mb[0]:.0f} MB, "
          f"at the end {end_mb:.0f} MB ({(end_mb / warm_mb[0] - 1) * 100:+.1f} % since warm-up)")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == [SERVE_COUNTING]:
        _serve_counting(Path(sys.argv[2]))  # the server's side: runs `avagenc serve` until stopped
    else:
        with kept("load"):
            asyncio.run(main())
