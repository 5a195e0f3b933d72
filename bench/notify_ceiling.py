"""LISTEN/NOTIFY's ceiling: live-event commits per second with the NOTIFY trigger and without.

Every live event is an `events` row whose trigger NOTIFYs on commit (chat/events.py).
PostgreSQL serialises the commits of every transaction that notified (one queue for the
whole server, taken under a global lock at commit), so past some rate the announcing, not
the writing, is what limits live events across all instances. This measures it: `--writers`
connections each commit one-row inserts into `events` for `--seconds`, first with the
trigger as the product has it, then with it disabled (the same rows, nobody told), in
alternating rounds so a shared machine's load falls on both; one LISTEN connection drains
the notifications meanwhile, as each server's listener does. synchronous_commit is off, as
the turns' own writes are after the person's words (a fsync per commit would hide the lock).

    .venv/bin/python -m bench.notify_ceiling [--writers 8 --seconds 5 --rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import asyncpg

from bench.cold_start import _prepare
from bench.report import kept
from bench.servers import postgres

_PERSON = "usr_notify_bench"


async def _writer(url: str, until: float, counts: list[int]) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("SET synchronous_commit = off")
        while time.perf_counter() < until:
            await conn.execute(
                "INSERT INTO events (person_id, type, data) VALUES ($1, 'message', '{\"id\": \"msg_x\"}')", _PERSON
            )
            counts[0] += 1
    finally:
        await conn.close()


async def _round(url: str, writers: int, seconds: float) -> float:
    counts = [0]
    until = time.perf_counter() + seconds
    started = time.perf_counter()
    await asyncio.gather(*(_writer(url, until, counts) for _ in range(writers)))
    return counts[0] / (time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with postgres() as (admin_url, source):
        url = await _prepare(admin_url)
        admin = await asyncpg.connect(url)
        listener = await asyncpg.connect(url)
        heard = [0]
        await listener.add_listener("avagenc_events", lambda *_: heard.__setitem__(0, heard[0] + 1))
        await admin.execute(
            "INSERT INTO people (id, name, time_zone) VALUES ($1, 'Notify', 'UTC') ON CONFLICT DO NOTHING", _PERSON
        )
        rates: dict[bool, list[float]] = {True: [], False: []}
        load = os.getloadavg()[0]
        for _ in range(args.rounds):
            for notify in (True, False):
                toggle = "ENABLE" if notify else "DISABLE"
                await admin.execute(f"ALTER TABLE events {toggle} TRIGGER events_notify")
                rates[notify].append(await _round(url, args.writers, args.seconds))
        load = max(load, os.getloadavg()[0])
        await admin.execute("ALTER TABLE events ENABLE TRIGGER events_notify")
        await listener.close()
        await admin.close()
    with_notify, without = statistics.median(rates[True]), statistics.median(rates[False])
    print(f"live-event commits ({source} PostgreSQL, {args.writers} writers, {args.rounds} x {args.seconds:g} s each; "
          f"load average up to {load:.1f} on {os.cpu_count()} cores):")  # fmt: skip
    print(f"  with NOTIFY {with_notify:8,.0f}/s   without {without:8,.0f}/s   ratio {with_notify / without:.2f}")
    print(f"  notifications heard by one listener: {heard[0]:,}")


if __name__ == "__main__":
    with kept("notify_ceiling"):
        asyncio.run(main())
