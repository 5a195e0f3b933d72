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
   open file descriptors and threads before and after. For a long run (1,000 calls),
   `--at-once K` makes K calls at a time, each by a person of its own, `--short` hangs up
   as soon as the reply's words have been captioned and its audio has begun (every call
   still has to be answered with the right words), and `--sample-every N` measures after
   every N calls (the calls in flight finish first, so nothing is open when it measures);
   the slope is then fitted against the calls made, over the whole run after the warm-up
   and over its last half.
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
    .venv/bin/python -m bench.call_memory --calls 1 --sequence 1000 --warm-up 100 \
        --at-once 4 --short --sample-every 50                         # ~30-40 min, the leak check

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
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from websockets.exceptions import ConnectionClosed

from bench.databases import migrated
from bench.report import kept
from bench.servers import (
    BenchFailed,
    environment,
    free_port,
    log_tail,
    postgres,
    serve_with_probe,
    started,
    until_ready,
)
from bench.voice_latency import REPLY_TIMEOUT_S, SILENT_RMS, Clip, Turn, VoiceCall, make_clip, read_turn, voice_call

# Requests the offline model answers, with words its reply must contain; on and off in turn,
# so the home ends each pair as it began and every call does the same work.
REQUESTS: tuple[tuple[str, str], ...] = (
    ("turn on the bedroom light", "bedroom light is on"),
    ("turn off the bedroom light", "bedroom light is off"),
)
PROBE_TIMEOUT_S = 30.0
SETTLE_S = 1.0  # after a hang-up, for the server to close the call before it is measured
STAGGER_S = 1.0  # the leak check's simultaneous callers start this far apart
REFUSED_MAX = 30  # a call refused while the person's last one closes: placed again this often
REFUSED_PAUSE_S = 1.0
REFUSED = [0]  # calls placed again after such a refusal, in the run


# --- the server's side: a probe, then `avagenc serve` ------------------------------------


def _serve_with_probe(probe: Path) -> None:
    """In the server process: the SIGUSR1 probe of the loop's tasks and the tracked objects,
    then `avagenc serve` itself."""

    def figures() -> dict[str, Any]:
        gc.collect()
        objects = gc.get_objects()
        tasks = asyncio.all_tasks()
        kinds = collections.Counter(task.get_coro().__qualname__ for task in tasks)  # type: ignore[union-attr]
        return {
            "tasks": len(tasks),
            "task_kinds": dict(kinds.most_common(12)),
            "objects": len(objects),
            "types": dict(collections.Counter(type(o).__qualname__ for o in objects).most_common(400)),
            "frozen": gc.get_freeze_count(),
        }

    serve_with_probe(probe, figures)


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
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    status["cpu_s"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
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


def slope_per_100(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of the values against the calls made, per 100 calls."""
    if len(points) < 2:
        return float("nan")
    xs, ys = [float(x) for x, _ in points], [y for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    cov = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    var = sum((x - mean_x) ** 2 for x in xs)
    return cov / var * 100 if var else float("nan")


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
) -> list[tuple[int, dict[str, Any]]]:
    """`count` calls in sequence by one person; the server sampled after each hang-up."""
    _, token = await sign_in(client, "Leak caller")
    samples = [(0, await server.sample())]
    for n in range(count):
        async with voice_call(port, token, f"seq-{n}", []) as call:
            failures.check(f"call {n + 1} in sequence", await call.turn(clips[n % len(clips)]))
        await asyncio.sleep(SETTLE_S)
        samples.append((n + 1, await server.sample()))
    return samples


async def short_turn(call: VoiceCall, clip: Clip, timeout_s: float) -> Turn:
    """Say `clip` and wait only until the reply's words are captioned and its audio has
    begun: enough to know the call was answered right, and the hang-up that follows cuts
    Ava off mid-sentence (a path every call's teardown has to survive too)."""
    mark = len(call.heard)
    started, ended = await call.say(clip)
    turn = Turn(call.tag, clip, started, ended)
    deadline = ended + timeout_s
    while True:
        await asyncio.sleep(0.02)
        since = call.heard[mark:]
        loud = any(h.audio is not None and h.at > ended and h.rms > SILENT_RMS for h in since)
        said = " ".join(
            str(h.event.get("text", ""))
            for h in since
            if h.event is not None and h.event.get("type") == "transcript" and h.event.get("role") == "assistant"
        )
        if loud and clip.expected in said.lower():
            break
        if call.ws.close_code is not None:
            turn.problem = f"closed {call.ws.close_code}"
            break
        if time.monotonic() > deadline:
            turn.problem = "no reply" if not loud else None  # a reply without the words: wrong
            break
    read_turn(turn, call.heard[mark:])
    return turn


async def placed(port: int, token: str, tag: str, clip: Clip, args: argparse.Namespace) -> Turn:
    """One call of the leak check. A person's next call may come before the server has
    closed their last one (a loaded machine closes slowly) and be refused as a call in
    progress, as it should: that one is placed again, after a pause, up to REFUSED_MAX times."""
    for attempt in range(REFUSED_MAX + 1):
        try:
            async with voice_call(port, token, tag, []) as call:
                return await (short_turn(call, clip, args.reply_timeout) if args.short else call.turn(clip))
        except BenchFailed as exc:
            if "call_in_progress" not in str(exc) or attempt == REFUSED_MAX:
                raise
            REFUSED[0] += 1
            await asyncio.sleep(REFUSED_PAUSE_S)
    raise AssertionError("unreachable")


async def leak_at_once(
    port: int, client: httpx.AsyncClient, server: Server, clips: list[Clip], args: argparse.Namespace,
    failures: Failures,
) -> list[tuple[int, dict[str, Any]]]:  # fmt: skip
    """`args.sequence` calls, `args.at_once` at a time (each worker a person of its own,
    its calls one after another); the server sampled before, after the warm-up and after
    every `args.sample_every` calls, once the calls in flight have hung up."""
    tokens = [(await sign_in(client, f"Leak caller {n}"))[1] for n in range(args.at_once)]
    count, every = args.sequence, args.sample_every
    points = sorted({args.warm_up, *range(every, count, every), count} - {0})
    samples = [(0, await server.sample())]
    made = 0
    own = [0] * args.at_once  # each person's calls: the light goes on, off, on ... in them
    started = time.monotonic()

    async def worker(index: int, until: int) -> None:
        nonlocal made
        await asyncio.sleep(index * STAGGER_S)  # not all at once: their speech would queue for Whisper together
        while made < until:
            n = made
            made += 1
            clip = clips[own[index] % len(clips)]
            own[index] += 1
            failed = len(failures.lines)
            try:
                turn = await placed(port, tokens[index], f"leak-{n}", clip, args)
            except (BenchFailed, OSError, ConnectionClosed) as exc:  # refused or cut off: counted, not fatal
                failures.lines.append(f"call {n + 1} (leak-{n}): {exc!r}"[:300])
                print(f"  {failures.lines[-1]}", file=sys.stderr, flush=True)
                continue
            failures.check(f"call {n + 1} (leak-{n})", turn)
            if len(failures.lines) > failed:
                print(f"  {failures.lines[-1]}", file=sys.stderr, flush=True)
            if len(failures.lines) > max(10, count // 10):
                raise BenchFailed(f"{len(failures.lines)} of {made} calls unanswered: {failures.lines[-1]}")

    for until in points:
        if args.max_minutes and time.monotonic() - started > args.max_minutes * 60:
            print(f"  stopped after {made} calls: --max-minutes {args.max_minutes} passed", file=sys.stderr)
            break
        await asyncio.gather(*(worker(i, until) for i in range(args.at_once)))
        await asyncio.sleep(SETTLE_S)
        done, before = samples[-1]
        samples.append((made, await server.sample()))
        elapsed = time.monotonic() - started
        cpu = (samples[-1][1]["cpu_s"] - before["cpu_s"]) / max(1, made - done)
        print(
            f"  {made} calls, {elapsed:.0f} s, server CPU {cpu:.2f} s per call,"
            f" unanswered so far {len(failures.lines)} (placed again {REFUSED[0]}), {_mb(samples[-1][1])},"
            f" objects {samples[-1][1]['objects']}, tasks {samples[-1][1]['tasks']}, fds {samples[-1][1]['fds']:.0f},"
            f" threads {samples[-1][1]['Threads']:.0f}, load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
            flush=True,
        )
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
    sequence: list[tuple[int, dict[str, Any]]],
    warm_up: int,
    rows: dict[str, dict[str, float]],
    how: str,
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

    def of(key: str, since: int = 0) -> list[tuple[int, float]]:
        return [(n, float(sample[key])) for n, sample in sequence if n >= since]

    at_warm = next(sample for n, sample in sequence if n >= warm_up)
    (_, first), (calls, last) = sequence[0], sequence[-1]
    lines.append(f"leak: {calls} calls ({how}):")
    lines.append(
        f"  RSS before {first['VmRSS']:.1f} MB, after call {warm_up} {at_warm['VmRSS']:.1f} MB,"
        f" at the end {last['VmRSS']:.1f} MB"
    )
    lines.append("  RSS after calls, MB: " + " ".join(f"{n}:{s['VmRSS']:.0f}" for n, s in sequence[1:]))
    lines.append("  tracked objects after calls: " + " ".join(f"{n}:{s['objects']}" for n, s in sequence[1:]))
    lines.append(
        f"  slope after the first {warm_up} calls: RSS {slope_per_100(of('VmRSS', warm_up)):+.2f} MB per 100 calls,"
        f" anon {slope_per_100(of('RssAnon', warm_up)):+.2f} MB per 100 calls;"
        f" tracked objects {slope_per_100(of('objects', warm_up)):+.0f} per 100 calls"
    )
    half = calls // 2
    lines.append(
        f"  slope over the last half (calls {half}-{calls}): RSS {slope_per_100(of('VmRSS', half)):+.2f} MB,"
        f" anon {slope_per_100(of('RssAnon', half)):+.2f} MB,"
        f" tracked objects {slope_per_100(of('objects', half)):+.0f},"
        f" tasks {slope_per_100(of('tasks', half)):+.2f}, fds {slope_per_100(of('fds', half)):+.2f},"
        f" threads {slope_per_100(of('Threads', half)):+.2f} per 100 calls"
    )
    for key in ("tasks", "objects", "fds", "Threads"):
        lines.append(f"  {key:8} before {first[key]:>8,.0f}   after warm-up {at_warm[key]:>8,.0f}"
                     f"   at the end {last[key]:>8,.0f}")  # fmt: skip
    if last["tasks"] != first["tasks"]:
        lines.append(f"  tasks at the end by coroutine: {last['task_kinds']}")
    grown = collections.Counter(last["types"])
    grown.subtract(at_warm["types"])
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
                if args.at_once > 1 or args.short or args.sample_every > 1:
                    sequence = await leak_at_once(port, client, server, clips, args, failures)
                else:
                    sequence = await leak(port, client, server, clips, args.sequence, failures)
                phases["calls in sequence"] = time.perf_counter() - at
                load = max(load, os.getloadavg()[0])
                at = time.perf_counter()
                rows = await growth(port, client, database_url, clips, failures, args.turns)
                phases["thread growth"] = time.perf_counter() - at
            except BaseException:
                print(f"the server's log, last lines:\n{log_tail(log_path)}", file=sys.stderr)
                raise
            finally:
                if args.server_log is not None:
                    shutil.copyfile(log_path, args.server_log)
        load = max(load, os.getloadavg()[0])
    voice = os.environ.get("VOICE_TTS", "neural")
    print(
        f"call memory ({source} PostgreSQL, offline model and engines, VOICE_TTS={voice},"
        f" {time.perf_counter() - started:.0f} s, load average up to {load:.1f} on {os.cpu_count()} cores):"
    )
    print("  took " + ", ".join(f"{name} {s:.0f} s" for name, s in phases.items()))
    print(f"  at /readyz (doors built, before any call): {_mb(ready)}")
    how = (
        f"{args.at_once} at a time, each by a person of its own" if args.at_once > 1 else "in sequence, one person"
    ) + (
        ": connect, one request, hang up once the reply's words and audio arrive"
        if args.short
        else ": connect, one request, the reply heard, hang up"
    )
    if args.sample_every > 1:
        how += f"; measured after every {args.sample_every}"
    print(
        f"  calls unanswered or answered wrong: {len(failures.lines)};"
        f" placed again after a refusal while the person's last call closed: {REFUSED[0]}"
    )
    for line in report(idle, held, sequence, min(args.warm_up, args.sequence - 1), rows, how):
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
    parser.add_argument("--at-once", type=int, default=1, help="leak check: calls made at a time (a person each)")
    parser.add_argument("--short", action="store_true", help="leak check: hang up as the reply begins")
    parser.add_argument(
        "--reply-timeout", type=float, default=REPLY_TIMEOUT_S, help="--short: seconds a reply may take to begin"
    )
    parser.add_argument(
        "--max-minutes", type=float, default=0.0, help="leak check: make no more calls after this (0: no bound)"
    )
    parser.add_argument("--sample-every", type=int, default=1, help="leak check: measure after every N calls")
    parser.add_argument("--quick", action="store_true", help="2 calls at once, 4 in sequence (~2 min)")
    parser.add_argument("--server-log", type=Path, help="keep a copy of the server's log here")
    parser.add_argument("--serve-with-probe", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_with_probe is not None:
        _serve_with_probe(args.serve_with_probe)
        return
    if args.quick:
        args.calls, args.sequence, args.warm_up, args.turns = 2, 4, 1, 2
    if args.calls < 1 or args.sequence < 2 or args.turns < 2:
        parser.error("--calls must be at least 1, --sequence and --turns at least 2")
    if not 1 <= args.at_once <= 8 or args.sample_every < 1:
        parser.error("--at-once must be 1-8 (the server holds 16 calls), --sample-every at least 1")
    try:
        with kept("call_memory"):
            status = asyncio.run(run(args))
    except BenchFailed as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
