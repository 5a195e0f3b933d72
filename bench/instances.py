"""Several server processes on one PostgreSQL: what each turn costs the database, and
whether live events cross from the instance that wrote them to the one a client listens on.

`--instances` `avagenc serve` processes (4 by default; the offline model, call doors in the
background, no speech preload) share one migrated database. Each of `--people` people
keeps one live-event stream open on one instance and posts messages to the next one, so
every event a client receives was written by another process and reached it through
LISTEN/NOTIFY. Messages go out at `--rate` a second for `--seconds`, open loop, round robin.
Reported: errors, turns a second overall and per instance, turn p50/p99, live events
received against those written (every one must arrive), model calls left uncharged at the
end (must be 0), and the CPU the servers and PostgreSQL spent per turn (from /proc through
psutil: what docs/scaling.md extrapolates from).

    .venv/bin/python -m bench.instances [--instances 4 --people 40 --rate 8 --seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

import asyncpg
import httpx
import psutil

from bench.cold_start import _prepare
from bench.load import _stream
from bench.report import kept
from bench.servers import TextTurns, environment, free_port, postgres, started, until_ready

_LIMITS = httpx.Limits(max_connections=500)


def _cpu_s(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system
    return total


def _postgres_processes(data_dir: str) -> list[psutil.Process]:
    """The postmaster serving `data_dir` and its backends (other helpers run their own)."""
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if cmdline and cmdline[0].endswith("postgres") and data_dir in cmdline:
            return [process, *process.children(recursive=True)]
    return []


async def _written(database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM events"))
    finally:
        await conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--people", type=int, default=40)
    parser.add_argument("--rate", type=float, default=8.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    with postgres() as (admin_url, source), tempfile.TemporaryDirectory(prefix="avagenc-instances-") as folder:
        database_url = await _prepare(admin_url)
        conn = await asyncpg.connect(database_url)
        try:
            data_dir = str(await conn.fetchval("SHOW data_directory"))
        finally:
            await conn.close()
        async with contextlib.AsyncExitStack() as stack:
            servers: list[tuple[asyncio.subprocess.Process, httpx.AsyncClient]] = []
            for n in range(args.instances):
                home, port = Path(folder) / f"i{n}", free_port()
                home.mkdir()
                # Doors built before /readyz: no loading left to count in the turns' CPU.
                env = environment(database_url, home, port, voice_at_start=True)
                env.update(RUNS_PER_PERSON_PER_MINUTE_MAX="100000", RUNS_IN_FLIGHT_PER_PERSON_MAX="100",
                           SIGN_INS_PER_ADDRESS_MAX="100000", VOICE_PRELOAD="false",
                           DATABASE_POOL_MAX="10", TURNS_CONCURRENT_MAX="8")  # fmt: skip
                command = [sys.executable, "-m", "cli", "serve"]
                process = await stack.enter_async_context(started(command, log_path=home / "serve.log", env=env))
                client = await stack.enter_async_context(
                    httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120, limits=_LIMITS)
                )
                servers.append((process, client))
            for n, (process, client) in enumerate(servers):
                await until_ready(client, process, Path(folder) / f"i{n}" / "serve.log", within_s=200, every_s=0.05)
            clients = [client for _, client in servers]
            people = []
            for n in range(args.people):
                body = (await clients[0].post("/v1/auth/local", json={"name": f"Many {n}"})).json()
                people.append({"Authorization": f"Bearer {body['token']}"})
            received: list[int] = [0]
            failed: list[str] = []
            streams = [
                asyncio.create_task(_stream(clients[(i + 1) % args.instances], people[i], received, failed))
                for i in range(args.people)
            ]
            await asyncio.sleep(3)
            said = TextTurns()
            written_before = await _written(database_url)
            pg = _postgres_processes(data_dir)
            serving = [psutil.Process(p.pid) for p, _ in servers]
            pg_before, servers_before = _cpu_s(pg), _cpu_s(serving)
            load = os.getloadavg()[0]
            took = await said.open_loop(
                args.rate, args.seconds, lambda i: (clients[i % args.people % args.instances], people[i % args.people])
            )
            pg_s, servers_s = _cpu_s(pg) - pg_before, _cpu_s(serving) - servers_before
            load = max(load, os.getloadavg()[0])
            await asyncio.sleep(3)  # the last events cross over
            conn = await asyncpg.connect(database_url)
            try:
                uncharged = await conn.fetchval("SELECT count(*) FROM run_calls WHERE cost_micros IS NULL")
            finally:
                await conn.close()
            written = await _written(database_url) - written_before
            for task in streams:
                task.cancel()
            await asyncio.gather(*streams, return_exceptions=True)
    latencies, errors = said.latencies_s, said.errors
    done = len(latencies)
    ordered = sorted(latencies)
    p99 = ordered[min(done - 1, int(0.99 * done))]
    print(
        f"{args.instances} instances on one PostgreSQL ({source}, offline model, {args.people} people, "
        f"{args.rate:g} msg/s for {args.seconds:g} s; load average up to {load:.1f} on {os.cpu_count()} cores):"
    )
    print(
        f"  turns {done} in {took:.1f} s ({done / took:.1f}/s, {done / took / args.instances:.1f}/s per instance),"
        f" errors {len(errors) + len(failed)} {sorted(set(errors + failed))[:5]}"
    )
    print(f"  turn latency p50 {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    print(f"  live events: {received[0]:,} received across instances of {written:,} written during the run")
    print(f"  model calls left uncharged: {uncharged}")
    print(f"  CPU per turn: servers {servers_s / done * 1000:.1f} ms, PostgreSQL {pg_s / done * 1000:.1f} ms")


if __name__ == "__main__":
    with kept("instances"):
        asyncio.run(main())
