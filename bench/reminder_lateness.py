"""How late wake notes fire: `delivered_at - due_at` for many notes due close together,
served by two dispatcher processes on one database, next to a fixed-interval poller.

The embedded dispatcher (`reminders.EmbeddedQueue`) sleeps exactly until the next due
time and is woken early by LISTEN/NOTIFY. The baseline is what PostgreSQL job queues
commonly do: claim due rows with the same `FOR UPDATE SKIP LOCKED` query, and when none
are due sleep a fixed interval (`--poll-s`, 1 s by default; several queues default to
a few seconds). Both sides run the same store, the same claim query and the same
delivery bookkeeping in two worker processes each; only the waiting differs, so the gap
is the dispatcher's alone. Waking Ava is replaced by a fixed pause (`--work-ms`), so
what is measured is the queue, not the model.

Every note's times come from the database clock (`due_at`, `delivered_at`), the same for
both processes. The run checks that each note was delivered exactly once (one claim,
one wake) and refuses to print figures otherwise. Full scale (where the target applies) is
`--notes 1000 --window-s 60`; the defaults are smaller for a shared machine.

    .venv/bin/python -m bench.reminder_lateness [--notes 300 --window-s 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from bench.databases import drop, migrated
from bench.report import kept
from bench.servers import postgres
from database import Listener, create_pool
from reminders import Delivery, DeliveryLimits, EmbeddedQueue, Note, Notes, Woken

WORKERS = 2
CONCURRENT_MAX = 8
_LEAD_S = 3.0  # the first note is due this long after the notes are written


class BenchFailed(Exception):
    pass


# --- the worker processes --------------------------------------------------------------


def _delivery(notes: Notes, pool: asyncpg.Pool, work_s: float) -> Delivery:
    async def wake(*, note: Note) -> Woken:
        await pool.execute("INSERT INTO bench_wakes (note_id) VALUES ($1)", note.id)
        await asyncio.sleep(work_s)
        return Woken(run_id=None, reply="", outcome="silent")

    return Delivery(notes=notes, wake=wake, limits=DeliveryLimits())


async def _poll(notes: Notes, delivery: Delivery, poll_s: float) -> None:
    """The baseline: claim what is due; when nothing is, sleep a fixed interval."""
    running: set[asyncio.Task[Any]] = set()
    while True:
        free = CONCURRENT_MAX - len(running)
        claimed = await notes.claim_due(limit=free, lease_s=delivery.limits.lease_s) if free > 0 else []
        for note in claimed:
            task = asyncio.create_task(delivery.run_claimed(note))
            running.add(task)
            task.add_done_callback(running.discard)
        if free <= 0:
            # Busy, not idle: wait for a slot rather than a whole interval, or the baseline
            # would be late for a reason of our making.
            await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        elif len(claimed) < free:
            await asyncio.sleep(poll_s)


async def worker(kind: str, dsn: str, poll_s: float, work_s: float) -> None:
    pool = await create_pool(dsn, size_max=CONCURRENT_MAX + 4)
    notes = Notes(pool)
    delivery = _delivery(notes, pool, work_s)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    listener = Listener(dsn)  # the process's one LISTEN connection, as the server has
    if kind == "embedded":
        queue = EmbeddedQueue(notes=notes, listener=listener, concurrent_max=CONCURRENT_MAX)
        await listener.start()
        serving = asyncio.create_task(queue.serve(delivery=delivery))
    else:
        serving = asyncio.create_task(_poll(notes, delivery, poll_s))
    print("ready", flush=True)
    await stop.wait()
    serving.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await serving
    await listener.stop()
    await pool.close()


# --- the driver ---------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def fresh_database(admin_url: str, name: str) -> AsyncIterator[str]:
    url = await migrated(admin_url, name)
    try:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(
                "CREATE TABLE bench_wakes (note_id TEXT NOT NULL, at TIMESTAMPTZ DEFAULT clock_timestamp())"
            )
        finally:
            await conn.close()
        yield url
    finally:
        await drop(admin_url, name)


@contextlib.asynccontextmanager
async def workers(kind: str, dsn: str, args: argparse.Namespace) -> AsyncIterator[None]:
    procs = []
    for _ in range(WORKERS):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.reminder_lateness",
            "--worker",
            kind,
            "--dsn",
            dsn,
            "--poll-s",
            str(args.poll_s),
            "--work-ms",
            str(args.work_ms),
            stdout=asyncio.subprocess.PIPE,
        )
        procs.append(proc)
    try:
        for proc in procs:
            assert proc.stdout is not None
            async with asyncio.timeout(30):
                line = await proc.stdout.readline()
            if line.strip() != b"ready":
                raise BenchFailed(f"a {kind} worker did not start")
        yield
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            async with asyncio.timeout(30):
                await proc.wait()


async def run_kind(kind: str, admin_url: str, args: argparse.Namespace) -> dict[str, float]:
    async with fresh_database(admin_url, f"avagenc_bench_wakes_{os.getpid()}_{kind}") as dsn:
        pool = await create_pool(dsn, size_max=4)
        try:
            async with workers(kind, dsn, args):
                notes = Notes(pool)
                await asyncio.sleep(0.5)  # the workers are asleep with nothing scheduled
                start = datetime.now(UTC) + timedelta(seconds=_LEAD_S)
                step = timedelta(seconds=args.window_s / args.notes)
                for i in range(args.notes):
                    await notes.add(
                        person_id=f"usr_{i % 50}",
                        text=f"bench note {i}",
                        due_at=start + step * i,
                        time_zone="UTC",
                        created_by_run_id=None,
                    )
                deadline = time.monotonic() + _LEAD_S + args.window_s + 60
                while await pool.fetchval("SELECT count(*) FROM wake_notes WHERE status = 'delivered'") < args.notes:
                    if time.monotonic() > deadline:
                        raise BenchFailed(f"{kind}: not every note was delivered in time")
                    await asyncio.sleep(0.2)
            return await figures(pool, kind, args.notes)
        finally:
            await pool.close()


async def figures(pool: asyncpg.Pool, kind: str, count: int) -> dict[str, float]:
    wakes = await pool.fetchval("SELECT count(*) FROM bench_wakes")
    distinct = await pool.fetchval("SELECT count(DISTINCT note_id) FROM bench_wakes")
    claims = await pool.fetchval("SELECT sum(attempts) FROM wake_notes")
    if not (wakes == distinct == claims == count):
        raise BenchFailed(f"{kind}: {count} notes, {wakes} wakes of {distinct} notes, {claims} claims: not once each")
    late = [
        float(r["ms"])
        for r in await pool.fetch("SELECT EXTRACT(EPOCH FROM delivered_at - due_at) * 1000 AS ms FROM wake_notes")
    ]
    if min(late) < 0:
        raise BenchFailed(f"{kind}: a note was delivered before it was due")
    cuts = statistics.quantiles(late, n=100, method="inclusive")
    return {"p50": cuts[49], "p99": cuts[98], "max": max(late), "mean": statistics.fmean(late)}


async def drive(args: argparse.Namespace) -> int:
    with postgres() as (admin_url, source):
        results = {}
        for kind in ("embedded", "poll"):
            results[kind] = await run_kind(kind, admin_url, args)
    print(
        f"{args.notes} notes due over {args.window_s:g} s, {WORKERS} worker processes, "
        f"{CONCURRENT_MAX} deliveries each at once, {args.work_ms:g} ms per wake; PostgreSQL: {source}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print("| queue | p50 ms | p99 ms | max ms | mean ms |")
    print("|---|---:|---:|---:|---:|")
    names = {"embedded": "embedded (sleep to due + NOTIFY)", "poll": f"baseline: poll every {args.poll_s:g} s"}
    for kind, row in results.items():
        print(f"| {names[kind]} | {row['p50']:.1f} | {row['p99']:.1f} | {row['max']:.1f} | {row['mean']:.1f} |")
    ratio = results["poll"]["p99"] / max(results["embedded"]["p99"], 0.001)
    print(
        f"p99: the embedded dispatcher is {ratio:.1f}x less late than the poller; target p99 <= 250 ms: "
        f"{'met' if results['embedded']['p99'] <= 250 else 'NOT met'}"
    )
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--window-s", type=float, default=20.0)
    parser.add_argument("--poll-s", type=float, default=1.0)
    parser.add_argument("--work-ms", type=float, default=5.0)
    parser.add_argument("--worker", choices=("embedded", "poll"))
    parser.add_argument("--dsn")
    args = parser.parse_args()
    if args.worker:
        asyncio.run(worker(args.worker, args.dsn, args.poll_s, args.work_ms / 1000))
        return
    if args.notes < 10 or args.window_s <= 0:
        parser.error("--notes must be at least 10 and --window-s positive")
    try:
        with kept("reminder_lateness"):
            status = asyncio.run(drive(args))
        sys.exit(status)
    except BenchFailed as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
