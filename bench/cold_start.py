"""Cold start: from `avagenc serve`'s process start to `/readyz` answering 200, with the
database already running and migrated (a scaled-to-zero instance's first request waits
this long), then the first text turn and a warm one, the first call and a warm one; and
the import profile.

Each run spawns `python -m cli serve` on a free port against one migrated database,
polls `/readyz` every 10 ms, signs a person in, posts two messages (the first after a
cold start, then a warm one), then places two calls on the speaker door, each saying one
request as soon as it is answered (`--calls`; bench/voice_latency.py's microphone): the
first waits for the call doors, which load once the server listens. A call's time is from
opening its socket to the first sound of Ava's reply. The server is stopped with SIGINT.
The offline model and offline speech are the defaults, as a deployment without
credentials runs them.

Starts alternate between two ways of running the same code: `compiled`, with every
module's bytecode already on disk, as the image ships it (UV_COMPILE_BYTECODE, Dockerfile),
and `source`, compiling every module it imports at every start, as the image did before
(PYTHONDONTWRITEBYTECODE and no compiled files). The compiled cache is this run's own
(PYTHONPYCACHEPREFIX in its temporary folder), written by a first start not measured.

`--against REF` alternates this tree with another commit of it instead (both compiled):
REF's tree is exported with `git archive` into the run's temporary folder and served from
there, so a change and its baseline meet the same moments of a shared machine's load.
`--warm-turns N` posts N warm turns after the first (the median is the warm figure).
`--logs DIR` keeps every start's server log there (the temporary folder goes at the end).

`--importtime` runs one more (compiled) start under `python -X importtime` and prints the
packages that cost the most to import (own time summed by top-level package), which is
where the start's time goes before any socket is opened.

    .venv/bin/python -m bench.cold_start [--runs 5] [--calls] [--importtime] [--against main]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.databases import migrated
from bench.report import kept
from bench.servers import ROOT, BenchFailed, environment, free_port, postgres, started, until_ready


async def _prepare(admin_url: str) -> str:
    return await migrated(admin_url, f"avagenc_cold_{os.getpid()}")


def _bytecode(env: dict[str, str], home: Path, *, compiled: bool) -> dict[str, str]:
    """`env` for a server that finds every module compiled in this run's cache (`compiled`,
    as the image ships them) or compiles each one it imports (as the image did before)."""
    env = {k: v for k, v in env.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    if compiled:
        env["PYTHONPYCACHEPREFIX"] = str(home / "bytecode")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = str(home / "no-bytecode")  # empty: nothing compiled is found
    return env


async def _call_answered(port: int, token: str, clip: Any, tag: str) -> tuple[float, float]:
    """One call saying `clip`: seconds from opening the socket to the first sound of the
    reply, and from the end of the speech to it."""
    from bench import voice_latency
    from bench.voice_latency import voice_call

    # A first call may also wait for the speech models to load: a minute, not the 20 s a
    # person waits on a warm server, before it counts as unanswered.
    voice_latency.REPLY_TIMEOUT_S = max(voice_latency.REPLY_TIMEOUT_S, 60.0)
    at = time.monotonic()
    try:
        async with voice_call(port, token, tag, [], open_timeout_s=voice_latency.REPLY_TIMEOUT_S) as call:
            turn = await call.turn(clip)
    except (OSError, TimeoutError) as exc:  # its socket did not open in time: unanswered
        raise BenchFailed(f"call {tag} could not connect: {exc!r}") from exc
    if turn.problem or not turn.answered or turn.first_loud_at is None:
        raise BenchFailed(f"call {tag} got no right reply: {turn.problem or turn.replies} (heard {turn.heard!r})")
    return turn.first_loud_at - at, turn.first_loud_at - turn.ended_at


async def _one_start(
    database_url: str,
    home: Path,
    *,
    compiled: bool = True,
    importtime: Path | None = None,
    clips: tuple[Any, Any] | None = None,
    tree: Path = ROOT,
    warm_turns: int = 1,
) -> dict[str, float]:
    """One cold start: seconds to ready, to the first turn's answer and a warm turn's, and
    (given `clips` to say, one a call) the first call's and a warm call's."""
    port = free_port()
    log_path = home / f"serve-{port}.log"
    flags = ["-X", "importtime"] if importtime else []
    env = _bytecode(environment(database_url, home, port, voice_at_start=False), home, compiled=compiled)
    env["SIGNUP_GRANT_MICROS"] = str(10**12)  # no wallet guard ends a call
    figures: dict[str, float] = {}
    started_at = time.perf_counter()
    async with (
        started(
            [sys.executable, *flags, "-m", "cli", "serve"],
            log_path=log_path,
            env=env,
            stderr_path=importtime,
            cwd=tree,
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
        signed = await client.post("/v1/auth/local", json={"name": f"Cold {port} {time.time_ns()}"})
        token = signed.json()["token"]
        headers = {"Authorization": f"Bearer {token}"}
        turns: list[float] = []
        for _ in range(1 + warm_turns):
            at = time.perf_counter()
            said = await client.post("/v1/messages", json={"text": "hello Ava"}, headers=headers)
            if said.status_code != 200:
                raise BenchFailed(f"a turn failed: {said.status_code} {said.text[:300]}")
            turns.append(time.perf_counter() - at)
        figures["first_turn_s"], figures["warm_turn_s"] = turns[0], statistics.median(turns[1:])
        if clips is not None:
            for key, clip in zip(("first_call", "warm_call"), clips, strict=True):
                try:
                    figures[f"{key}_s"], figures[f"{key}_reply_s"] = await _call_answered(port, token, clip, key)
                except BenchFailed as exc:  # counted and reported; the run goes on
                    print(f"  {exc}", file=sys.stderr)
                    figures[f"{key}_s"] = figures[f"{key}_reply_s"] = math.nan
                await asyncio.sleep(0.5)  # the call has closed before the next
    return figures


def _exported(ref: str, home: Path) -> Path:
    """`ref`'s tree of this repository, exported into `home` (a baseline to serve beside this tree)."""
    folder = home / "against"
    folder.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _copy_logs(home: Path, to: Path) -> None:
    for log in home.glob("serve-*.log"):
        shutil.copy2(log, to / log.name)


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


_KEYS = ("ready_s", "cpu_at_ready_s", "main_thread_cpu_s", "first_turn_s", "warm_turn_s")
_CALL_KEYS = ("first_call_s", "warm_call_s", "first_call_reply_s", "warm_call_reply_s")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", action="store_true", help="also the first call after the start and a warm one")
    parser.add_argument("--importtime", action="store_true", help="also print the import profile")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--against", metavar="REF", help="alternate with this git commit's tree (both compiled)")
    parser.add_argument("--warm-turns", type=int, default=1, help="warm turns after the first (median taken)")
    parser.add_argument("--logs", type=Path, help="copy every start's server log into this folder")
    args = parser.parse_args()
    if args.warm_turns < 1:
        parser.error("--warm-turns must be at least 1")
    clips = None
    if args.calls:
        from bench.call_memory import REQUESTS
        from bench.voice_latency import make_clip

        # The bedroom light on, then off: each start's new person finds it off.
        clips = (await make_clip(*REQUESTS[0]), await make_clip(*REQUESTS[1]))
    with (
        postgres() as (admin_url, source),
        tempfile.TemporaryDirectory(prefix="avagenc-cold-") as folder,
        contextlib.ExitStack() as stack,
    ):
        home = Path(folder)
        if args.logs is not None:  # the temporary folder goes at the end, a failed start's log with it
            args.logs.mkdir(parents=True, exist_ok=True)
            stack.callback(_copy_logs, home, args.logs)
        database_url = await _prepare(admin_url)
        # (label, compiled, tree): the two ways alternate, so a shared machine's load falls on both alike.
        ways: list[tuple[str, bool, Path]] = [
            ("compiled (the image now)", True, ROOT),
            ("source, compiled every start (before)", False, ROOT),
        ]
        if args.against:
            ways = [
                ("this tree (compiled)", True, ROOT),
                (f"{args.against} (compiled)", True, _exported(args.against, home)),
            ]
        for _, compiled, tree in ways:  # writes each tree's compiled cache (and the secret); not measured
            if compiled:
                await _one_start(database_url, home, clips=clips, tree=tree)
        runs: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in ways}
        load = os.getloadavg()[0]
        for _ in range(args.runs):
            for label, compiled, tree in ways:
                runs[label].append(
                    await _one_start(
                        database_url, home, compiled=compiled, clips=clips, tree=tree, warm_turns=args.warm_turns
                    )
                )
        load = max(load, os.getloadavg()[0])
        print(f"cold start ({source} PostgreSQL, {args.runs} starts each, load average up to {load:.1f} on"
              f" {os.cpu_count()} cores; voice loads once the server listens):")  # fmt: skip
        failed = 0
        for label, _, _ in ways:
            print(f" {label}:")
            for key in _KEYS + (_CALL_KEYS if clips is not None else ()):
                values = sorted(r[key] for r in runs[label] if not math.isnan(r[key]))
                if len(values) < len(runs[label]):
                    failed += len(runs[label]) - len(values)
                    print(f"  {key}: {len(runs[label]) - len(values)} of {len(runs[label])} unanswered")
                if not values:
                    continue
                print(f"  {key:19} median {statistics.median(values) * 1000:7.0f} ms   min {values[0] * 1000:7.0f} ms"
                      f"   max {values[-1] * 1000:7.0f} ms")  # fmt: skip
            pairs = [("turn", "first_turn_s", "warm_turn_s")]
            if clips is not None:
                pairs += [
                    ("call", "first_call_s", "warm_call_s"),
                    ("call's reply", "first_call_reply_s", "warm_call_reply_s"),
                ]
            for what, first_key, warm_key in pairs:
                firsts = [r[first_key] for r in runs[label] if not math.isnan(r[first_key])]
                warms = [r[warm_key] for r in runs[label] if not math.isnan(r[warm_key])]
                if not firsts or not warms:
                    continue
                ratio = statistics.median(firsts) / statistics.median(warms)
                each = [r[first_key] / r[warm_key] for r in runs[label] if not math.isnan(r[first_key] + r[warm_key])]
                print(
                    f"  first {what} after a cold start / warm {what}: {ratio:.2f}x"
                    f" (each start: {', '.join(f'{x:.2f}' for x in sorted(each))})"
                )
        if args.importtime:
            trace = home / "importtime.txt"
            await _one_start(database_url, home, importtime=trace)
            print("import profile (top-level packages, own time summed, ms):")
            for name, ms in import_profile(trace, args.top):
                print(f"  {name:28} {ms:7.0f}")
    if failed:
        sys.exit(1)  # a call went unanswered: its figures are left out above


if __name__ == "__main__":
    with kept("cold_start"):
        asyncio.run(main())
