"""How much the server adds to one text turn, next to a baseline doing the same database work.

The turn: the person says "turn on the bedroom light"; Ava calls her `zee` handoff tool,
Zee calls `send_commands` on `sbx-light-bedroom`, says "Done.", and Ava stays silent. The
scripted model answers instantly, so what is left is the product's own cost: HTTP,
routing, prompts, the tool loop, the thread, runs, events and wallet charges. The baseline
(`POST /bench/baseline`, see `bench.overhead_server`) does the same statements in the same
transactions with the same pool check-outs and per-person lock (the turn's statements on the
lock's connection, as the product runs them), written plainly; a trace of all kinds in every
run proves they still match, so the gap is the product's code alone. A second baseline runs
every statement on one connection per request, which prices the few check-outs left (the
person, the knowledge lookup); the target is measured against the first.

The learning worker (chat.learning) is background work off the reply's path: it reads
each new message into the knowledge graph after the turn. The bench server stops it, so
it neither interleaves with the traced statements nor loads the measured requests of one
kind more than the other; its pass over one turn's messages is traced on its own and
shown in its own column ("learning, after the turn"), never compared with the baseline.

The server runs in its own process (uvicorn on 127.0.0.1, a port this process bound), so
the load generator here never shares its interpreter. Each virtual person signs in with
their own name and sends requests one after another; at each level the blocks of each
kind alternate in a rotating order so machine noise lands on all of them. Besides latency
and throughput, the CPU time of the server process and of the PostgreSQL instance is
charged per request, which holds steady when other work shares the machine. Every thread
already holds `--history` earlier messages, so each history read is the same full page at
every level. PostgreSQL is embedded in a temporary folder unless DATABASE_URL is set, in which
case a fresh database is created there and dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import platform
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx

from bench.report import write
from bench.servers import BenchFailed, exit_with, fast_loop, logs_kept_on_failure, serving_module

RESULTS = Path(__file__).parent / "results"
TURN_TEXT = "turn on the bedroom light"
TURN_PATH = "/v1/messages"
# The target compares with "baseline"; "baseline, 1 conn" prices the per-statement check-outs.
KINDS = {"turn": TURN_PATH, "baseline": "/bench/baseline", "baseline, 1 conn": "/bench/baseline-one-connection"}
# What may differ between a turn and its baselines; everything else must match. A turn's
# bookkeeping (chat.bookkeeping) takes a pooled connection for each burst of writes, and
# where the bursts break depends on timing (the baseline uses the same `Books`), so the
# check-outs and their resets are shown, not compared; a one-connection request takes none.
CHECKOUT_COUNTS = ("pool check-outs", "round trips")
TARGET_RATIO = 2.0
# The learning worker's pass over one turn's messages: background work, traced apart.
LEARNING = "learning, after the turn"
# A request slower than this is a hang (e.g. a starved pool), not a data point.
REQUEST_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Person:
    id: str
    name: str
    headers: dict[str, str]


@dataclass(slots=True)
class Sample:
    """Latencies of one kind at one level, and the wall and CPU time of the blocks that made them."""

    latencies_s: list[float]
    wall_s: float = 0.0
    server_cpu_s: float = 0.0
    database_cpu_s: float = 0.0

    def add(self, other: Sample) -> None:
        self.latencies_s += other.latencies_s
        self.wall_s += other.wall_s
        self.server_cpu_s += other.server_cpu_s
        self.database_cpu_s += other.database_cpu_s

    def quantiles_ms(self) -> tuple[float, float, float]:
        cuts = statistics.quantiles(self.latencies_s, n=100, method="inclusive")
        return statistics.median(self.latencies_s) * 1000, cuts[94] * 1000, cuts[98] * 1000

    @property
    def throughput(self) -> float:
        return len(self.latencies_s) / self.wall_s


@dataclass(frozen=True, slots=True)
class Watched:
    """Processes whose CPU time a block's requests are charged with: the server, and the
    whole PostgreSQL instance (backends, WAL writer, checkpointer...). CPU time, unlike
    latency, barely moves when other work shares the machine. Read from /proc, so this
    works on Linux with an embedded server only; elsewhere the columns show "-"."""

    server: int
    postmaster: int | None

    def cpu_s(self) -> tuple[float, float]:
        server = _ticks(self.server)
        database = _instance_ticks(self.postmaster) if self.postmaster else math.nan
        return server / _TICKS_PER_S, database / _TICKS_PER_S


_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat fields from the state on (index 1 = ppid, 11-14 = utime, stime, cutime, cstime)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _ticks(pid: int) -> float:
    fields = _stat(pid)
    return math.nan if fields is None else int(fields[11]) + int(fields[12])


def _instance_ticks(postmaster: int) -> float:
    """The postmaster, its children that have exited (backends come and go: asyncpg
    replaces a connection after 50,000 queries) and every child still alive."""
    fields = _stat(postmaster)
    if fields is None:
        return math.nan
    ticks = sum(int(f) for f in fields[11:15])
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (child := _stat(int(entry.name))) is not None and child[1] == str(postmaster):
            ticks += int(child[11]) + int(child[12])
    return ticks


async def postmaster_pid(database_url: str) -> int | None:
    conn = await asyncpg.connect(database_url)
    try:
        # Read while the connection is open: its backend exits with it.
        fields = _stat(int(await conn.fetchval("SELECT pg_backend_pid()")))
    finally:
        await conn.close()
    return int(fields[1]) if fields else None


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@contextlib.asynccontextmanager
async def fresh_database(admin_url: str, pool_max: int, suffix: str = "") -> AsyncIterator[tuple[str, str]]:
    """A new, empty database for this run: (its URL, the server version)."""
    name = f"avagenc_bench_{os.getpid()}{suffix}"
    conn = await asyncpg.connect(admin_url)
    try:
        version = str(await conn.fetchval("SHOW server_version"))
        connections_max = int(await conn.fetchval("SHOW max_connections"))
        # The statement pool, the thread-lock pool (half its size) and some to spare.
        needed = pool_max + max(1, pool_max // 2) + 10
        if connections_max < needed:
            raise BenchFailed(f"PostgreSQL allows {connections_max} connections; the run needs {needed}.")
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield with_database(admin_url, name), version
    finally:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


def server(
    database_url: str, *, pool_max: int, log_path: Path, profile: Path | None, extra: tuple[str, ...] = ()
) -> contextlib.AbstractAsyncContextManager[tuple[int, int]]:
    """Start `bench.overhead_server` on a socket bound here; yields its port and pid."""
    profiler = ["-m", "cProfile", "-o", str(profile)] if profile else []
    arguments = ["--database-url", database_url, "--state-dir", str(log_path.parent / "state"),
                 "--pool-max", str(pool_max), *extra]  # fmt: skip
    return serving_module("bench.overhead_server", arguments, log_path=log_path, backlog=256, python_flags=profiler)


async def sign_in(client: httpx.AsyncClient, name: str) -> Person:
    response = await client.post("/v1/auth/local", json={"name": name})
    if response.status_code != 200:
        raise BenchFailed(f"sign-in of {name} failed: {response.status_code} {response.text[:300]}")
    body = response.json()
    return Person(body["user"]["id"], name, {"Authorization": f"Bearer {body['token']}"})


async def seed_history(database_url: str, people: list[Person], messages: int) -> None:
    """Give every thread (and its baseline twin) `messages` earlier messages, so every
    history read in the run returns the same full page whatever the level."""
    conn = await asyncpg.connect(database_url)
    try:
        for person in people:
            for table, threads in (("messages", "threads"), ("bench_messages", "bench_threads")):
                await conn.execute(
                    f"""INSERT INTO {table} (id, person_id, seq, author, text, channel)
                    SELECT 'msg_seed_' || md5($1 || g), $1, g, 'human',
                           'an earlier message in this thread, number ' || g, 'text'
                    FROM generate_series(1, $2::int) AS g""",
                    person.id,
                    messages,
                )
                await conn.execute(
                    f"""INSERT INTO {threads} (person_id, last_seq) VALUES ($1, $2)
                    ON CONFLICT (person_id) DO UPDATE SET last_seq = EXCLUDED.last_seq""",
                    person.id,
                    messages,
                )
    finally:
        await conn.close()


async def send(client: httpx.AsyncClient, kind: str, person: Person) -> httpx.Response:
    response = await client.post(KINDS[kind], json={"text": TURN_TEXT}, headers=person.headers)
    if response.status_code != 200:
        raise BenchFailed(f"{kind} for {person.name} failed: {response.status_code} {response.text[:300]}")
    return response


def check_shape(kind: str, body: dict[str, Any]) -> None:
    """The scripted turn really ran: three messages, two succeeded runs."""
    said = [(m["author"], m["text"]) for m in body["messages"]]
    statuses = [r["status"] for r in body["runs"]]
    if said != [("human", TURN_TEXT), ("ava", "@zee"), ("zee", "Done.")] or statuses != ["succeeded"] * 2:
        raise BenchFailed(f"the {kind} did not do the scripted turn: {said} {statuses}")


async def trace(client: httpx.AsyncClient, person: Person) -> dict[str, dict[str, Any]]:
    """What one warm turn and one warm baseline request do to PostgreSQL, statement by statement."""
    traces: dict[str, dict[str, Any]] = {}
    learning: dict[str, Any] = {}
    for kind in KINDS:
        check_shape(kind, (await send(client, kind, person)).json())  # warm: devices seeded, statements prepared
        (await client.post("/bench/learn")).raise_for_status()  # the backlog so far, untraced
        (await client.post("/bench/trace/start")).raise_for_status()
        await send(client, kind, person)
        stopped = await client.post("/bench/trace/stop")
        stopped.raise_for_status()
        traces[kind] = stopped.json()
        if kind == "turn":
            learned = await client.post("/bench/trace/learning")
            learned.raise_for_status()
            learning = learned.json()
    return {**traces, LEARNING: learning}


def explain(error: BaseException, kind: str, people: int) -> BaseException:
    if isinstance(error, httpx.TimeoutException):
        return BenchFailed(
            f"{kind} requests at {people} people took over {REQUEST_TIMEOUT_S:.0f} s; the server is stuck "
            "(with fewer pooled connections than twice the people, turns holding the thread lock can "
            "starve the pool)"
        )
    return error


async def block(
    client: httpx.AsyncClient, kind: str, people: list[Person], per_person: int, watched: Watched
) -> Sample:
    """Every person sends `per_person` requests of one kind, one after another, all at once."""
    latencies: list[float] = []

    async def person_loop(person: Person) -> None:
        for _ in range(per_person):
            started = time.perf_counter()
            await send(client, kind, person)
            latencies.append(time.perf_counter() - started)

    server_cpu_s, database_cpu_s = watched.cpu_s()
    started = time.perf_counter()
    try:
        async with asyncio.TaskGroup() as group:
            for person in people:
                group.create_task(person_loop(person))
    except ExceptionGroup as failures:
        raise explain(failures.exceptions[0], kind, len(people)) from failures
    wall_s = time.perf_counter() - started
    server_after_s, database_after_s = watched.cpu_s()
    return Sample(latencies, wall_s, server_after_s - server_cpu_s, database_after_s - database_cpu_s)


def block_order(round_: int) -> list[str]:
    """Rotate, and reverse every other round, so no kind always runs first or last."""
    kinds = list(KINDS)
    shift = round_ % len(kinds)
    rotated = kinds[shift:] + kinds[:shift]
    return rotated if round_ % 2 == 0 else rotated[::-1]


async def level(
    client: httpx.AsyncClient, people: list[Person], watched: Watched, *, requests: int, rounds: int, warmup: int
) -> dict[str, Sample]:
    for kind in KINDS:
        await block(client, kind, people, math.ceil(warmup / len(people)), watched)
    per_person = max(1, math.ceil(requests / rounds / len(people)))
    samples = {kind: Sample([]) for kind in KINDS}
    for round_ in range(rounds):
        for kind in block_order(round_):
            samples[kind].add(await block(client, kind, people, per_person, watched))
    return samples


async def failed_runs(database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM runs WHERE status <> 'succeeded'"))
    finally:
        await conn.close()


# --- the report --------------------------------------------------------------------------


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def per_request_ms(total_s: float, count: int) -> str:
    return "-" if math.isnan(total_s) else f"{total_s / count * 1000:.1f}"


def latency_table(results: dict[int, dict[str, Sample]]) -> list[str]:
    lines = [
        "| people | kind | requests | p50 ms | p95 ms | p99 ms | throughput req/s | server CPU ms/req "
        "| PostgreSQL CPU ms/req |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for people, samples in results.items():
        for kind, sample in samples.items():
            p50, p95, p99 = sample.quantiles_ms()
            count = len(sample.latencies_s)
            lines.append(
                f"| {people} | {kind} | {count} | {p50:.1f} | {p95:.1f} | {p99:.1f} | {sample.throughput:.0f} "
                f"| {per_request_ms(sample.server_cpu_s, count)} | {per_request_ms(sample.database_cpu_s, count)} |"
            )
    lines += [
        "",
        "| people | p50 turn / p50 baseline | target | | p50 turn / p50 baseline, 1 conn |",
        "|---:|---:|---:|---|---:|",
    ]
    for people, samples in results.items():
        turn_p50 = samples["turn"].quantiles_ms()[0]
        ratio = turn_p50 / samples["baseline"].quantiles_ms()[0]
        floor_ratio = turn_p50 / samples["baseline, 1 conn"].quantiles_ms()[0]
        verdict = "met" if ratio <= TARGET_RATIO else "**missed**"
        lines.append(f"| {people} | {ratio:.2f}x | <= {TARGET_RATIO:.0f}x | {verdict} | {floor_ratio:.2f}x |")
    return lines


def trace_table(traces: dict[str, dict[str, Any]]) -> tuple[list[str], bool]:
    summaries = {kind: traced["summary"] for kind, traced in traces.items()}
    turn = summaries["turn"]
    learned = traces[LEARNING]["learned"] if LEARNING in traces else 0
    lines = ["| per request | " + " | ".join(summaries) + " |", "|---" + "|---:" * len(summaries) + "|"]
    lines += [f"| {name} | " + " | ".join(str(s.get(name, "-")) for s in summaries.values()) + " |" for name in turn]
    lookups = " | ".join(str(traced["type look-ups"]) for traced in traces.values())
    lines.append(f"| asyncpg type look-ups (first use on a connection; not compared) | {lookups} |")
    lines.append(f"| messages learned (not compared) | - | - | - | {learned} |")
    matched = all(
        summaries[kind].get(name) == count
        for kind in ("baseline", "baseline, 1 conn")
        for name, count in turn.items()
        if name not in CHECKOUT_COUNTS
    )
    return lines, matched


def report(
    results: dict[int, dict[str, Sample]], traces: dict[str, dict[str, Any]], context: dict[str, Any]
) -> tuple[str, bool]:
    trace_lines, matched = trace_table(traces)
    lines = [
        f"## Text turn overhead ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        'Turn: `POST /v1/messages` "turn on the bedroom light" -> Ava calls `zee` -> Zee calls '
        '`send_commands` on `sbx-light-bedroom` -> "Done." -> Ava silent; the scripted model answers '
        "instantly. Baseline: `POST /bench/baseline`, the same PostgreSQL work written plainly; "
        "baseline, 1 conn: the same statements on one connection per request.",
        "",
        f"Machine: {os.cpu_count()} cores ({cpu_model()}), {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, PostgreSQL {context['pg_version']} ({context['pg_source']}), "
        f"pool max {context['pool_max']}. Per level: {context['warmup']} warm-up requests of each kind, "
        f"then {context['rounds']} alternating blocks; every thread holds {context['history']} earlier "
        f"messages. Load average {context['load_before']:.1f} before, {context['load_after']:.1f} after; "
        f"whole run {context['elapsed_s']:.0f} s.",
        "",
        *latency_table(results),
        "",
        "What one request does to PostgreSQL, traced in this run (asyncpg query logger on every connection "
        "of the statement, thread-lock and limiter pools; write transactions = transaction ids handed out):",
        "",
        *trace_lines,
    ]
    if not matched:
        lines += ["", "**The baseline no longer matches the turn's database work; the ratio is not comparable.**"]
    if context["failed_runs"]:
        lines += ["", f"**{context['failed_runs']} runs did not succeed; these numbers are not valid.**"]
    if context["profile"]:
        lines += ["", f"Server ran under cProfile ({context['profile']}): timings are inflated, use for shares only."]
    return "\n".join(lines) + "\n", matched and not context["failed_runs"]


def trace_listing(traces: dict[str, dict[str, Any]]) -> str:
    parts = ["# Statements of one request, in order (pool check-ins included)", ""]
    for kind, traced in traces.items():
        parts += [f"## {kind}", "", "```", *traced["statements"], "```", ""]
    return "\n".join(parts)


# --- the run -----------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.turn_overhead",
        description="Server overhead of one text turn vs a same-database-work baseline.",
    )
    parser.add_argument("--levels", default="1,32", help="concurrent people per level (default 1,32)")
    parser.add_argument("--requests", type=int, default=240, help="measured requests of each kind per level")
    parser.add_argument("--rounds", type=int, default=4, help="alternating turn/baseline blocks per level")
    parser.add_argument("--warmup", type=int, default=32, help="unmeasured requests of each kind per level")
    parser.add_argument("--history", type=int, default=200, help="earlier messages in every thread")
    parser.add_argument("--pool-max", type=int, help="the server's pool size (default: twice the largest level)")
    parser.add_argument("--profile", type=Path, help="run the server under cProfile, writing stats here")
    parser.add_argument("--out", type=Path, default=RESULTS / "turn_overhead.md")
    return parser.parse_args()


async def run(args: argparse.Namespace, admin_url: str, pg_source: str) -> int:
    levels = [int(n) for n in args.levels.split(",")]
    # A turn holds a lock connection (its statements run there) and briefly borrows others
    # for the person, the guard and the knowledge lookup; twice the people leaves room.
    pool_max = args.pool_max or 2 * max(levels)
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    with logs_kept_on_failure("avagenc-bench-server-") as work:
        results, traces, failed, pg_version = await measure(args, admin_url, pg_source, levels, pool_max, work)
    context = {
        "pg_version": pg_version, "pg_source": pg_source, "pool_max": pool_max, "warmup": args.warmup,
        "rounds": args.rounds, "history": args.history, "elapsed_s": time.perf_counter() - started,
        "failed_runs": failed, "profile": args.profile, "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }  # fmt: skip
    text, valid = report(results, traces, context)
    print(text)
    write(args.out, text)
    args.out.with_name(args.out.stem + "_trace.md").write_text(trace_listing(traces))
    return 0 if valid else 1


async def measure(
    args: argparse.Namespace, admin_url: str, pg_source: str, levels: list[int], pool_max: int, work: Path
) -> tuple[dict[int, dict[str, Sample]], dict[str, dict[str, Any]], int, str]:
    """Serve, sign in, seed, trace, then measure every level: (results, traces, failed runs, PG version)."""
    limits = httpx.Limits(max_connections=max(levels) + 8, max_keepalive_connections=max(levels) + 8)
    async with (
        fresh_database(admin_url, pool_max) as (database_url, pg_version),
        server(database_url, pool_max=pool_max, log_path=work / "server.log", profile=args.profile) as (port, pid),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=REQUEST_TIMEOUT_S, limits=limits) as client,
    ):
        tracer = await sign_in(client, "bench-trace")
        crowds = {n: [await sign_in(client, f"bench-{n}-{i}") for i in range(n)] for n in levels}
        await seed_history(database_url, [tracer, *(p for crowd in crowds.values() for p in crowd)], args.history)
        traces = await trace(client, tracer)
        # Process ids mean something here only when PostgreSQL runs on this machine.
        postmaster = await postmaster_pid(database_url) if pg_source == "embedded" else None
        watched = Watched(server=pid, postmaster=postmaster)
        results = {
            n: await level(client, crowd, watched, requests=args.requests, rounds=args.rounds, warmup=args.warmup)
            for n, crowd in crowds.items()
        }
        failed = await failed_runs(database_url)
    return results, traces, failed, pg_version


def main() -> None:
    args = parse_args()
    exit_with(lambda admin_url, pg_source: run(args, admin_url, pg_source), loop_factory=fast_loop())


if __name__ == "__main__":
    main()
