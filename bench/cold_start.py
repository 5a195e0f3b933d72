"""Cold start: from `avagenc serve`'s process start to `/readyz` answering 200, with the
database already running and migrated (a scaled-to-zero instance's first request waits
this long), then the first text turn and a warm one; and the import profile.

Each run spawns `python -m cli serve` on a free port against one migrated database,
polls `/readyz` every 10 ms, signs a person in, posts two messages (the first after a
cold start, then a warm one), and stops the server with SIGINT. The offline model and
offline speech are the defaults, as a deployment without credentials runs them; the
Whisper and voice models load in a background thread and delay no text.

`--importtime` runs one more start under `python -X importtime` and prints the packages
that cost the most to import (cumulative microseconds, top level only), which is where
the start's time goes before any socket is opened.

    .venv/bin/python -m bench.cold_start [--runs 5] [--importtime]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx
import psutil

from bench.databases import migrated
from bench.report import kept
from bench.servers import BenchFailed, environment, free_port, postgres, started, until_ready


async def _prepare(admin_url: str) -> str:
    return await migrated(admin_url, f"avagenc_cold_{os.getpid()}")


async def _one_start(
    database_url: str, home: Path, *, voice_at_start: bool = False, importtime: Path | None = None
) -> dict[str, float]:
    """One cold start: seconds to ready, to the first turn's answer, and a warm turn's."""
    port = free_port()
    log_path = home / f"serve-{port}.log"
    flags = ["-X", "importtime"] if importtime else []
    env = environment(database_url, home, port, voice_at_start=voice_at_start)
    figures: dict[str, float] = {}
    started_at = time.perf_counter()
    async with (
        started(
            [sys.executable, *flags, "-m", "cli", "serve"], log_path=log_path, env=env, stderr_path=importtime
        ) as process,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
    ):
        await until_ready(client, process, log_path, within_s=120, every_s=0.01, request_timeout_s=2)
        figures["ready_s"] = time.perf_counter() - started_at
        # CPU the start itself used: a loaded machine stretches the wall time, much less this.
        with contextlib.suppress(psutil.Error):
            server = psutil.Process(process.pid)
            times = server.cpu_times()
            figures["cpu_at_ready_s"] = times.user + times.system
            main = [t for t in server.threads() if t.id == process.pid]
            figures["main_thread_cpu_s"] = main[0].user_time + main[0].system_time if main else float("nan")
        signed = await client.post("/v1/auth/local", json={"name": f"Cold {port}"})
        headers = {"Authorization": f"Bearer {signed.json()['token']}"}
        for key in ("first_turn_s", "warm_turn_s"):
            at = time.perf_counter()
            said = await client.post("/v1/messages", json={"text": "hello Ava"}, headers=headers)
            if said.status_code != 200:
                raise BenchFailed(f"a turn failed: {said.status_code} {said.text[:300]}")
            figures[key] = time.perf_counter() - at
    return figures


def import_profile(path: Path, top: int) -> list[tuple[str, float]]:
    """Top-level packages by the import time spent in their own modules (ms, summed), from
    `-X importtime`'s output: where the start's time goes, whoever imported them."""
    by_package: dict[str, float] = defaultdict(float)
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, _, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        by_package[name.split(".")[0]] += int(own) / 1000
    return sorted(by_package.items(), key=lambda kv: -kv[1])[:top]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--importtime", action="store_true", help="also print the import profile")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    with postgres() as (admin_url, source), tempfile.TemporaryDirectory(prefix="avagenc-cold-") as folder:
        home = Path(folder)
        database_url = await _prepare(admin_url)
        await _one_start(database_url, home)  # the first start compiles bytecode and makes the secret
        # The two ways alternate, so a shared machine's load falls on both alike.
        runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
        load = os.getloadavg()[0]
        for _ in range(args.runs):
            for at_start in (True, False):
                runs[at_start].append(await _one_start(database_url, home, voice_at_start=at_start))
        load = max(load, os.getloadavg()[0])
        print(f"cold start ({source} PostgreSQL, {args.runs} starts each, load average up to {load:.1f} on"
              f" {os.cpu_count()} cores):")  # fmt: skip
        for at_start, label in ((True, "VOICE_AT_START=true (before)"), (False, "voice in the background")):
            print(f" {label}:")
            for key in ("ready_s", "cpu_at_ready_s", "main_thread_cpu_s", "first_turn_s", "warm_turn_s"):
                values = sorted(r[key] for r in runs[at_start])
                print(f"  {key:17} median {statistics.median(values) * 1000:7.0f} ms   min {values[0] * 1000:7.0f} ms"
                      f"   max {values[-1] * 1000:7.0f} ms")  # fmt: skip
            first = statistics.median(r["first_turn_s"] for r in runs[at_start])
            ratio = first / statistics.median(r["warm_turn_s"] for r in runs[at_start])
            print(f"  first turn after a cold start / warm turn: {ratio:.2f}x")
        if args.importtime:
            trace = home / "importtime.txt"
            await _one_start(database_url, home, importtime=trace)
            print("import profile (top-level packages, cumulative ms):")
            for name, ms in import_profile(trace, args.top):
                print(f"  {name:28} {ms:7.0f}")


if __name__ == "__main__":
    with kept("cold_start"):
        asyncio.run(main())
