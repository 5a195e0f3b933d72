"""What serialising the wallet guard with the turn costs a text turn (docs/money.md#the-guard).

The guard reads the balance under the person's thread lock, on the connection that holds it;
before it was serialised it read the balance on a pooled connection of its own before the
lock was taken, which let queued turns all pass on the same balance. Two bench servers
(`bench.overhead_server`, the scripted turn of `bench.turn_overhead`) run side by side on one
PostgreSQL, each on a database of its own: one as the product is, one patched to read the
guard before the lock (`--guard-before-lock`: the same reads, one place earlier). At each
level the two take turns, block by block in a rotating order, so machine noise lands on
both; latency, throughput and the CPU time of each server process and of the PostgreSQL
instance are charged per request. The issue's target: at most 5 % at 1 and 24 people.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench.report import write
from bench.servers import exit_with, logs_kept_on_failure
from bench.turn_overhead import (
    REQUEST_TIMEOUT_S,
    RESULTS,
    Person,
    Sample,
    Watched,
    block,
    fresh_database,
    per_request_ms,
    postmaster_pid,
    seed_history,
    server,
    sign_in,
)

VARIANTS = {"serialised (the product)": (), "guard before the lock": ("--guard-before-lock",)}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--levels", default="1,24", help="concurrent people per level (default 1,24)")
    parser.add_argument("--requests", type=int, default=120, help="measured turns of each variant per level")
    parser.add_argument("--rounds", type=int, default=4, help="alternating blocks per level")
    parser.add_argument("--warmup", type=int, default=24, help="unmeasured turns of each variant per level")
    parser.add_argument("--history", type=int, default=200, help="earlier messages in every thread")
    parser.add_argument("--out", type=Path, default=RESULTS / "guard_cost.md")
    return parser.parse_args()


async def measure(args: argparse.Namespace, admin_url: str, work: Path) -> dict[int, dict[str, Sample]]:
    levels = [int(n) for n in args.levels.split(",")]
    pool_max = 2 * max(levels)
    limits = httpx.Limits(max_connections=max(levels) + 8, max_keepalive_connections=max(levels) + 8)
    async with contextlib.AsyncExitStack() as stack:
        sides: dict[str, tuple[httpx.AsyncClient, Watched, dict[int, list[Person]]]] = {}
        for n, (name, extra) in enumerate(VARIANTS.items()):
            url, _ = await stack.enter_async_context(fresh_database(admin_url, pool_max, f"_{n}"))
            port, pid = await stack.enter_async_context(
                server(url, pool_max=pool_max, log_path=work / f"server-{n}.log", profile=None, extra=extra)
            )
            client = await stack.enter_async_context(
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=REQUEST_TIMEOUT_S, limits=limits)
            )
            crowds = {k: [await sign_in(client, f"bench-{k}-{i}") for i in range(k)] for k in levels}
            await seed_history(url, [p for crowd in crowds.values() for p in crowd], args.history)
            sides[name] = (client, Watched(server=pid, postmaster=await postmaster_pid(url)), crowds)
        results: dict[int, dict[str, Sample]] = {}
        for k in levels:
            for client, watched, crowds in sides.values():
                await block(client, "turn", crowds[k], max(1, args.warmup // k), watched)
            per_person = max(1, -(-args.requests // (args.rounds * k)))
            samples = {name: Sample([]) for name in sides}
            for round_ in range(args.rounds):
                order = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
                for name in order:
                    client, watched, crowds = sides[name]
                    samples[name].add(await block(client, "turn", crowds[k], per_person, watched))
            results[k] = samples
    return results


def report(results: dict[int, dict[str, Sample]], context: dict[str, object]) -> str:
    lines = [
        f"# Guard serialisation cost ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"load average {context['load_before']:.1f} before, {context['load_after']:.1f} after; "
        f"{context['rounds']} alternating rounds per level, {context['history']} earlier messages per thread, "
        f"{context['elapsed_s']:.0f} s in all.",
        "",
        "| people | variant | turns | p50 ms | p95 ms | req/s | server CPU ms/req | PG CPU ms/req |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    ratios: list[str] = []
    for people, samples in results.items():
        for name, sample in samples.items():
            p50, p95, _ = sample.quantiles_ms()
            count = len(sample.latencies_s)
            lines.append(
                f"| {people} | {name} | {count} | {p50:.1f} | {p95:.1f} | {sample.throughput:.0f} | "
                f"{per_request_ms(sample.server_cpu_s, count)} | {per_request_ms(sample.database_cpu_s, count)} |"
            )
        ours, before = list(samples.values())
        ratio = ours.quantiles_ms()[0] / before.quantiles_ms()[0]
        cpu = (ours.server_cpu_s + ours.database_cpu_s) / len(ours.latencies_s)
        cpu_before = (before.server_cpu_s + before.database_cpu_s) / len(before.latencies_s)
        ratios.append(
            f"- {people} people: p50 {ratio:.3f}x ({(ratio - 1) * 100:+.1f} %), "
            f"server + PG CPU per turn {cpu / cpu_before:.3f}x ({(cpu / cpu_before - 1) * 100:+.1f} %)"
        )
    return "\n".join([*lines, "", "Serialised against the guard before the lock (target: at most +5 %):", *ratios, ""])


async def run(args: argparse.Namespace, admin_url: str) -> int:
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    with logs_kept_on_failure("avagenc-bench-guard-") as work:
        results = await measure(args, admin_url, work)
    context: dict[str, object] = {
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "rounds": args.rounds,
        "history": args.history,
        "elapsed_s": time.perf_counter() - started,
    }
    text = report(results, context)
    print(text)
    write(args.out, text)
    return 0


def main() -> None:
    args = parse_args()
    exit_with(lambda admin_url, _source: run(args, admin_url))


if __name__ == "__main__":
    main()
