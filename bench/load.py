"""Load on one instance: live-event clients held open while messages arrive at a steady rate.

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

`--count-statements`: the server also counts every statement its database connections
send (asyncpg's query loggers, installed in the server process before it hands over to
`avagenc serve`), and the statements per turn are printed: all of them, asyncpg's reset on
handing a connection back, and the learning worker's. Counting costs the server some CPU,
so its CPU figures are not comparable with a run without it.

    .venv/bin/python -m bench.load [--clients 200 --rate 50 --seconds 60] [--count-statements]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
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

import httpx
import psutil

from bench.cold_start import _prepare
from bench.report import kept
from bench.servers import BenchFailed, TextTurns, environment, free_port, postgres, started, until_ready
from bench.turn_overhead import Watched, postmaster_pid

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
    written = [0]

    def report() -> None:
        written[0] += 1
        partial = probe.with_suffix(".tmp")
        partial.write_text(json.dumps({"n": written[0], **counts}))
        partial.replace(probe)

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().call_soon_threadsafe(report)

    signal.signal(signal.SIGUSR1, on_signal)
    from cli import main

    main(["serve"])


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


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=50)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="messages per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--count-statements", action="store_true", help="print statements per turn")
    args = parser.parse_args()
    if args.clients > args.people * 5:
        raise BenchFailed("at most 5 streams per person (SSE_STREAMS_PER_PERSON_MAX)")
    with postgres() as (admin_url, source), tempfile.TemporaryDirectory(prefix="avagenc-load-") as folder:
        home = Path(folder)
        database_url = await _prepare(admin_url)
        port = free_port()
        # The call doors built before /readyz, so the idle figure holds everything a server loads.
        env = environment(database_url, home, port, voice_at_start=True)
        env.update(RUNS_PER_PERSON_PER_MINUTE_MAX="100000", RUNS_IN_FLIGHT_PER_PERSON_MAX="100",
                   SIGN_INS_PER_ADDRESS_MAX="100000", VOICE_PRELOAD="false")  # fmt: skip
        log_path = home / "serve.log"
        probe = home / "statements.json"
        command = [sys.executable, "-m", "cli", "serve"]
        if args.count_statements:
            command = [sys.executable, "-m", "bench.load", SERVE_COUNTING, str(probe)]
        limits = httpx.Limits(max_connections=args.clients + 200, max_keepalive_connections=200)
        async with (
            started(command, log_path=log_path, env=env) as process,
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
            said = TextTurns()
            warm_mb = [streams_mb]
            total = int(args.rate * args.seconds)

            def turn(i: int) -> tuple[httpx.AsyncClient, dict[str, str]]:
                if i == total // 5:
                    warm_mb[0] = _rss_mb(process.pid)
                return client, people[i % args.people]

            load = os.getloadavg()[0]
            # CPU time, unlike latency, barely moves when other work shares the machine.
            watched = Watched(server=process.pid, postmaster=await postmaster_pid(database_url))
            counted_before = await _statements(process, probe, 0) if args.count_statements else {}
            cpu_before = watched.cpu_s()
            took = await said.open_loop(args.rate, args.seconds, turn)
            await asyncio.sleep(2)  # the last events reach the clients
            cpu_after = watched.cpu_s()
            counted = await _statements(process, probe, counted_before["n"]) if args.count_statements else {}
            server_cpu, database_cpu = (after - before for after, before in zip(cpu_after, cpu_before, strict=True))
            end_mb = _rss_mb(process.pid)
            load = max(load, os.getloadavg()[0])
            for task in streams:
                task.cancel()
            await asyncio.gather(*streams, return_exceptions=True)
    latencies, errors = said.latencies_s, said.errors
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    print(
        f"load ({source} PostgreSQL, offline model, {args.clients} live-event clients over {args.people} people, "
        f"{args.rate:g} msg/s for {args.seconds:g} s; load average up to {load:.1f} on {os.cpu_count()} cores):"
    )
    print(
        f"  turns {len(ordered)} in {took:.1f} s ({len(ordered) / took:.1f}/s), errors {len(errors) + len(failed)}"
        f" {sorted(set(errors + failed))[:5]}"
    )
    print(f"  turn latency p50 {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    print(f"  live events received by the clients: {received[0]:,}")
    turns = max(1, len(ordered))
    print(
        f"  CPU per turn (the streams' reads included): server {server_cpu * 1000 / turns:.1f} ms, "
        f"PostgreSQL {database_cpu * 1000 / turns:.1f} ms ({server_cpu:.1f} s and {database_cpu:.1f} s in all)"
    )
    if counted:
        print(_per_turn(counted_before, counted, turns))
    print(f"  server RSS: idle {idle_mb:.0f} MB, with the streams open {streams_mb:.0f} MB "
          f"({(streams_mb - idle_mb) * 1024 / args.clients:.0f} KB per client), after warm-up {warm_mb[0]:.0f} MB, "
          f"at the end {end_mb:.0f} MB ({(end_mb / warm_mb[0] - 1) * 100:+.1f} % since warm-up)")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == [SERVE_COUNTING]:
        _serve_counting(Path(sys.argv[2]))  # the server's side: runs `avagenc serve` until stopped
    else:
        with kept("load"):
            asyncio.run(main())
