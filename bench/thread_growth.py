"""Thread growth: does a turn cost more as a person's one thread grows?

Three people on one server, with 10, 1,000 and 10,000 earlier messages in their threads
(bench/year_of_data.py's seeding: a year of exchanges with their runs, records, events and
charges). Each round every one of them says the same thing in turn (the offline model), and
the turn's wall time and the prompt tokens its runs sent (from the turn's own runs) are kept.
Past the history budget (`HISTORY_TOKENS_MAX`) the prompt is the same size whatever the
thread's length, so both should be flat: target 10,000 ≤ 1.1x the 1,000 figure (issue 24).
Only the text door is measured here; a call's turns go through the same `Turns` with the
same history window (docs/architecture.md#calls).

    .venv/bin/python -m bench.thread_growth [--rounds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from app.server import running
from bench.databases import migrated
from bench.report import kept
from bench.servers import BenchFailed, postgres
from bench.year_of_data import _settings, seed_person

SIZES = (10, 1_000, 10_000)
TARGET = 1.1


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with postgres() as (admin_url, source), tempfile.TemporaryDirectory(prefix="avagenc-growth-") as folder:
        url = await migrated(admin_url, f"avagenc_growth_{os.getpid()}")
        async with running(_settings(url, Path(folder))) as (_, app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as client:
                headers: dict[int, dict[str, str]] = {}
                for size in SIZES:
                    signed = (await client.post("/v1/auth/local", json={"name": f"Grown {size}"})).json()
                    headers[size] = {"Authorization": f"Bearer {signed['token']}"}
                    await seed_person(url, signed["user"]["id"], size, f"g{size}")
                times: dict[int, list[float]] = {size: [] for size in SIZES}
                prompts: dict[int, list[int]] = {size: [] for size in SIZES}
                load = os.getloadavg()[0]
                for round_ in range(args.rounds + 2):
                    for size in SIZES:
                        at = time.perf_counter()
                        said = await client.post("/v1/messages", json={"text": "hello Ava"}, headers=headers[size])
                        took = time.perf_counter() - at
                        if said.status_code != 200:
                            raise BenchFailed(f"a turn answered {said.status_code}: {said.text[:300]}")
                        if round_ >= 2:  # the first two warm the caches
                            times[size].append(took)
                            prompts[size].append(sum(r["usage"].get("prompt_tokens", 0) for r in said.json()["runs"]))
                load = max(load, os.getloadavg()[0])
    print(f"thread growth ({source} PostgreSQL, offline model, {args.rounds} rounds, "
          f"load average up to {load:.1f} on {os.cpu_count()} cores):")  # fmt: skip
    print(f"  {'messages':>9} {'turn median':>12} {'p90':>9} {'prompt tokens':>14}")
    for size in SIZES:
        ordered = sorted(times[size])
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        print(f"  {size:9,} {statistics.median(ordered) * 1000:9.1f} ms {p90 * 1000:6.1f} ms "
              f"{statistics.median(prompts[size]):14,.0f}")  # fmt: skip
    latency = statistics.median(times[10_000]) / statistics.median(times[1_000])
    tokens = statistics.median(prompts[10_000]) / statistics.median(prompts[1_000])
    print(f"  10,000 / 1,000: latency {latency:.2f}x, prompt tokens {tokens:.2f}x (target <= {TARGET}x)")


if __name__ == "__main__":
    with kept("thread_growth"):
        asyncio.run(main())
