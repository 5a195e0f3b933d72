"""A year of data: does a request cost more once the database is full?

Two servers run side by side in this process, each on its own database of one PostgreSQL:
one nearly empty, one holding a year of use: `--people` people (10,000) with a short
thread each, one person with `--messages` messages (100,000) and the runs, model-call
records, tool records and charges that wrote them, and `--events` live events (1 million)
spread over the whole crowd within the resume window. The measured person has the same
recent history on both sides (their newest page, events and wallet entries look alike);
on the full side it goes back a year. Each operation is timed on both servers in turn
(`--rounds` times), so a shared machine's load falls on both alike:

- a text turn (`POST /v1/messages`, the offline model),
- a thread page (the newest, then one deep in the year: `before=` half way),
- a live-event resume (`GET /v1/events` with `Last-Event-ID` 20 events back, read to the
  newest),
- the wallet page (balance, the newest entries, today's usage).

Target (issue 24): each ≤ 1.2x its cost on the empty database, median against median.
The data goes in with `generate_series` (a few SQL statements, about a minute), triggers
on the bulk tables off while it loads (the ledger's balance trigger stays on).

    .venv/bin/python -m bench.year_of_data [--people 10000 --messages 100000 --events 1000000]
    .venv/bin/python -m bench.year_of_data --quick   # a small run, seconds
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import httpx
import uvicorn
from pydantic import SecretStr

from app.server import running
from bench.databases import migrated
from bench.report import kept
from bench.servers import BenchFailed, postgres
from settings import Settings

# The measured person's history on the empty side (a few pages).
_RECENT_MESSAGES = 200
_RESUME_BACK = 20
TARGET = 1.2


# One person's thread of $2 messages (a person's line and Ava's answer, each answer its
# own run with one model call, one tool record and one charge), spread over the year
# before now, with one live event per message in the last $3 seconds.
_PERSON_SQL = (
    """INSERT INTO runs (id, person_id, agent, trigger, trigger_message_id, origin_message_id, channel, status,
                         model, model_calls, tool_calls, usage, cost_micros, started_at, finished_at)
    SELECT 'run_y' || $4 || '_' || g, $1, 'ava', 'human', 'msg_y' || $4 || '_' || (2 * g - 1),
           'msg_y' || $4 || '_' || (2 * g - 1), 'text', 'succeeded', 'offline', 1, 1,
           '{"prompt_tokens": 900, "output_tokens": 40}', 9360,
           now() - make_interval(secs => 31536000.0 * ($2 - 2 * g) / $2) ,
           now() - make_interval(secs => 31536000.0 * ($2 - 2 * g) / $2)
    FROM generate_series(1, $2 / 2) AS g""",
    """INSERT INTO messages (id, person_id, seq, author, text, channel, run_id, created_at)
    SELECT 'msg_y' || $4 || '_' || g, $1, g, CASE WHEN g % 2 = 1 THEN 'human' ELSE 'ava' END,
           CASE WHEN g % 2 = 1 THEN 'turn on the bedroom light and tell me what is on today, number ' || g
                ELSE 'Done: the bedroom light is on. You have two things today, the first at nine.' END,
           'text', CASE WHEN g % 2 = 0 THEN 'run_y' || $4 || '_' || (g / 2) END,
           now() - make_interval(secs => 31536000.0 * ($2 - g) / $2)
    FROM generate_series(1, $2) AS g""",
    """INSERT INTO run_calls (run_id, idx, person_id, model, usage, at, cost_micros)
    SELECT 'run_y' || $4 || '_' || g, 1, $1, 'offline', '{"prompt_tokens": 900, "output_tokens": 40}',
           now() - make_interval(secs => 31536000.0 * ($2 - 2 * g) / $2), 9360
    FROM generate_series(1, $2 / 2) AS g""",
    """INSERT INTO run_events (run_id, idx, name, args, result, created_at)
    SELECT 'run_y' || $4 || '_' || g, 1, 'control_device', '{"device": "bedroom light", "on": true}',
           '{"ok": true}', now() - make_interval(secs => 31536000.0 * ($2 - 2 * g) / $2)
    FROM generate_series(1, $2 / 2) AS g""",
    """INSERT INTO events (person_id, type, data, created_at)
    SELECT $1, 'message', jsonb_build_object('id', 'msg_y' || $4 || '_' || g, 'seq', g, 'author', 'ava',
           'text', 'Done: the bedroom light is on. You have two things today, the first at nine.',
           'channel', 'text', 'emotions', '[]'::jsonb, 'created_at', now()::text),
           now() - make_interval(secs => $3::float8 * ($2 - g) / $2)
    FROM generate_series(1, $2) AS g""",
    "UPDATE threads SET last_seq = $2 WHERE person_id = $1",
)
# The charges of those runs: one ledger transaction and two entries each.
_CHARGES_SQL = (
    """INSERT INTO transactions (type, ref, metadata, created_at)
    SELECT 'agent_call', 'run:run_y' || $3 || '_' || g || ':call:1',
           jsonb_build_object('agent', 'ava', 'run_id', 'run_y' || $3 || '_' || g, 'trigger', 'human',
                              'model', 'offline', 'tokens', '{"input": 900, "output": 40}'::jsonb),
           now() - make_interval(secs => 31536000.0 * ($2 - 2 * g) / $2)
    FROM generate_series(1, $2 / 2) AS g""",
    """INSERT INTO entries (transaction_id, account_id, amount_micros, created_at)
    SELECT t.id, a.account, a.amount, t.created_at
    FROM transactions AS t
    CROSS JOIN LATERAL (VALUES ('user:' || $1 || ':IDR', -9360::bigint), ('revenue:IDR', 9360::bigint))
        AS a (account, amount)
    WHERE t.ref LIKE 'run:run_y' || $3 || '\\_%'""",
)
# The crowd: $1 people with $2 messages each (human only: they are read, never answered
# here), and $3 live events spread over them and the last $4 seconds.
_CROWD_SQL = (
    """INSERT INTO people (id, name, local_key, time_zone, created_at)
    SELECT 'usr_crowd' || g, 'Person ' || g, 'person ' || g, 'Asia/Jakarta', now() - interval '1 year'
    FROM generate_series(1, $1) AS g""",
    "INSERT INTO threads (person_id, last_seq) SELECT 'usr_crowd' || g, $2 FROM generate_series(1, $1) AS g",
    """INSERT INTO messages (id, person_id, seq, author, text, channel, created_at)
    SELECT 'msg_crowd' || p || '_' || s, 'usr_crowd' || p, s, 'human', 'something said during the year', 'text',
           now() - make_interval(secs => 31536000.0 * s / ($2 + 1))
    FROM generate_series(1, $1) AS p, generate_series(1, $2) AS s""",
    """INSERT INTO events (person_id, type, data, created_at)
    SELECT 'usr_crowd' || (1 + g % $1), 'message',
           jsonb_build_object('id', 'msg_crowd_' || g, 'seq', g, 'author', 'human',
                              'text', 'something said during the year', 'channel', 'text',
                              'emotions', '[]'::jsonb, 'created_at', now()::text),
           now() - make_interval(secs => $4::float8 * ($3 - g) / $3)
    FROM generate_series(1, $3) AS g""",
    """INSERT INTO accounts (id, kind)
    SELECT 'user:usr_crowd' || g || ':IDR', 'user' FROM generate_series(1, $1) AS g""",
)
_CROWD_CHARGES_SQL = (
    """INSERT INTO transactions (type, ref, metadata, created_at)
    SELECT 'signup_grant', 'grant:usr_crowd' || g, '{}'::jsonb, now() - interval '1 year'
    FROM generate_series(1, $1) AS g""",
    """INSERT INTO entries (transaction_id, account_id, amount_micros, created_at)
    SELECT t.id, a.account, a.amount, t.created_at
    FROM transactions AS t
    CROSS JOIN LATERAL (VALUES ('user:' || substr(t.ref, 7) || ':IDR', 5000000000::bigint),
                               ('grant:IDR', -5000000000::bigint)) AS a (account, amount)
    WHERE t.ref LIKE 'grant:usr\\_crowd%'""",
)
_RESUME_WINDOW_S = 6 * 86_400.0
# What each table that grows with use costs per row, indexes included (for docs/scaling.md).
_GROWING = ("messages", "runs", "run_calls", "run_events", "events", "transactions", "entries")
_SIZES_SQL = f"""
SELECT relname AS name, n_live_tup AS rows, pg_total_relation_size(relid) AS bytes
FROM pg_stat_user_tables WHERE relname IN ({", ".join(f"'{t}'" for t in _GROWING)}) ORDER BY relname
"""


def _typed(sql: str, *types: str) -> str:
    """`sql` with each of its parameters (typed `types`) used at least once, so every
    statement of a list can take the same arguments."""
    unused = [f"${i + 1}::{t} IS NOT NULL" for i, t in enumerate(types) if f"${i + 1}" not in sql]
    return f"WITH _unused AS (SELECT {' AND '.join(unused)}) {sql}" if unused else sql


async def seed_person(url: str, person_id: str, messages: int, tag: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            # Runs point at messages written later in this transaction (deferred keys).
            await conn.execute("SET CONSTRAINTS ALL DEFERRED")
            await conn.execute("SET LOCAL session_replication_role = replica")  # no NOTIFY per row
            for sql in _PERSON_SQL:
                await conn.execute(
                    _typed(sql, "text", "int", "float8", "text"), person_id, messages, _RESUME_WINDOW_S, tag
                )
        async with conn.transaction():
            # The ledger's own triggers stay on: they keep the balances equal to the entries.
            for sql in _CHARGES_SQL:
                await conn.execute(_typed(sql, "text", "int", "text"), person_id, messages, tag)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


async def seed_crowd(url: str, people: int, messages_each: int, events: int) -> None:
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL session_replication_role = replica")
            for sql in _CROWD_SQL:
                await conn.execute(
                    _typed(sql, "int", "int", "int", "float8"), people, messages_each, events, _RESUME_WINDOW_S
                )
        async with conn.transaction():
            for sql in _CROWD_CHARGES_SQL:
                await conn.execute(_typed(sql, "int"), people)
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


def _settings(url: str, home: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        avagenc_home=home,
        session_secret=SecretStr("year-of-data-bench-" + "x" * 40),
        gemini_api_key=None,
        voice_preload=False,
        sse_keepalive_s=1.0,
        sign_ins_per_address_max=100_000,
        runs_per_person_per_minute_max=100_000,
        runs_in_flight_per_person_max=100,
    )


@contextlib.asynccontextmanager
async def serving(url: str, home: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The whole server on `url`, under a real uvicorn on a free port (live events stream)."""
    async with running(_settings(url, home)) as (_, app):
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                yield client
        finally:
            server.should_exit = True
            await task


class Side:
    """One server and the measured person on it."""

    def __init__(self, name: str, client: httpx.AsyncClient) -> None:
        self.name = name
        self.client = client
        self.headers: dict[str, str] = {}
        self.person_id = ""
        self.times: dict[str, list[float]] = {}

    async def sign_in(self) -> None:
        response = await self.client.post("/v1/auth/local", json={"name": "Measured"})
        if response.status_code != 200:
            raise BenchFailed(f"sign-in failed on {self.name}: {response.text[:300]}")
        self.headers = {"Authorization": f"Bearer {response.json()['token']}", "time-zone": "Asia/Jakarta"}
        self.person_id = response.json()["user"]["id"]

    async def timed(self, what: str, act: Callable[[], Awaitable[None]]) -> None:
        at = time.perf_counter()
        await act()
        self.times.setdefault(what, []).append(time.perf_counter() - at)

    async def get(self, path: str, **params: int) -> httpx.Response:
        response = await self.client.get(path, params=params, headers=self.headers)
        if response.status_code != 200:
            raise BenchFailed(f"{path} answered {response.status_code} on {self.name}: {response.text[:300]}")
        return response

    async def turn(self) -> None:
        response = await self.client.post("/v1/messages", json={"text": "hello Ava"}, headers=self.headers)
        if response.status_code != 200:
            raise BenchFailed(f"a turn answered {response.status_code} on {self.name}: {response.text[:300]}")

    async def page(self) -> None:
        await self.get("/v1/messages", limit=50)

    async def deep_page(self, before: int) -> None:
        await self.get("/v1/messages", limit=50, before=before)

    async def wallet(self) -> None:
        await self.get("/v1/wallet")
        await self.get("/v1/wallet/entries", limit=50)
        await self.get("/v1/wallet/usage")

    async def resume(self, after: int, newest: int) -> None:
        headers = {**self.headers, "Last-Event-ID": str(after)}
        async with self.client.stream("GET", "/v1/events", headers=headers) as response:
            if response.status_code != 200:
                raise BenchFailed(f"the event stream answered {response.status_code} on {self.name}")
            async for line in response.aiter_lines():
                if line.startswith("id: ") and int(line[4:]) >= newest:
                    return


async def _event_ids(url: str, person_id: str) -> tuple[int, int]:
    conn = await asyncpg.connect(url)
    try:
        ids = [r["id"] for r in await conn.fetch(
            "SELECT id FROM events WHERE person_id = $1 ORDER BY id DESC LIMIT $2", person_id, _RESUME_BACK + 1
        )]  # fmt: skip
    finally:
        await conn.close()
    return ids[-1], ids[0]


async def measure(sides: list[Side], urls: list[str], rounds: int, deep_before: list[int]) -> None:
    for _ in range(3):  # warm both: caches, prepared statements, the recent pages
        for side in sides:
            await side.turn()
            await side.page()
            await side.wallet()
    for _ in range(rounds):
        for side, url, before in zip(sides, urls, deep_before, strict=True):
            await side.timed("text turn", side.turn)
            await side.timed("thread page (newest)", side.page)
            await side.timed("thread page (deep)", functools.partial(side.deep_page, before))
            after, newest = await _event_ids(url, side.person_id)
            await side.timed("live-event resume", functools.partial(side.resume, after, newest))
            await side.timed("wallet page", side.wallet)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=100_000, help="the measured person's thread on the full side")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--crowd-messages", type=int, default=10, help="messages in each other person's thread")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="1,000 people, 10,000 messages, 50,000 events")
    args = parser.parse_args()
    if args.quick:
        args.people, args.messages, args.events, args.rounds = 1_000, 10_000, 50_000, 20
    with postgres() as (admin_url, source), tempfile.TemporaryDirectory(prefix="avagenc-year-") as folder:
        empty_url = await migrated(admin_url, f"avagenc_year_empty_{os.getpid()}")
        full_url = await migrated(admin_url, f"avagenc_year_full_{os.getpid()}")
        async with (
            serving(empty_url, Path(folder) / "empty") as empty,
            serving(full_url, Path(folder) / "full") as full,
        ):
            sides = [Side("empty", empty), Side("full", full)]
            for side in sides:
                await side.sign_in()
            started = time.perf_counter()
            await seed_person(empty_url, sides[0].person_id, _RECENT_MESSAGES, "e")
            await seed_person(full_url, sides[1].person_id, args.messages, "f")
            await seed_crowd(full_url, args.people - 1, args.crowd_messages, max(0, args.events - args.messages))
            loaded_s = time.perf_counter() - started
            conn = await asyncpg.connect(full_url)
            try:
                size = await conn.fetchval("SELECT pg_size_pretty(pg_database_size(current_database()))")
                counts = {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in ("people", "messages", "events")}
                sizes = await conn.fetch(_SIZES_SQL)
            finally:
                await conn.close()
            load = os.getloadavg()[0]
            await measure(sides, [empty_url, full_url], args.rounds, [_RECENT_MESSAGES // 2, args.messages // 2])
            load = max(load, os.getloadavg()[0])
    print(f"a year of data ({source} PostgreSQL; loaded in {loaded_s:.0f} s: {counts['people']:,} people, "
          f"{counts['messages']:,} messages, {counts['events']:,} live events, {size}; {args.rounds} rounds; "
          f"load average up to {load:.1f} on {os.cpu_count()} cores)")  # fmt: skip
    print(f"  {'operation':24} {'empty median':>13} {'full median':>12} {'ratio':>6}")
    bent = []
    for what in sides[0].times:
        empty_ms = statistics.median(sides[0].times[what]) * 1000
        full_ms = statistics.median(sides[1].times[what]) * 1000
        ratio = full_ms / empty_ms
        print(f"  {what:24} {empty_ms:10.1f} ms {full_ms:9.1f} ms {ratio:5.2f}x")
        if ratio > TARGET:
            bent.append(what)
    print(f"  target: each <= {TARGET}x" + (f"; above it: {', '.join(bent)}" if bent else "; all within"))
    print("  size per row, indexes included:")
    for row in sizes:
        per_row = row["bytes"] / row["rows"] if row["rows"] else 0
        print(f"    {row['name']:13} {row['rows']:>10,} rows {row['bytes'] / 2**20:8.1f} MB {per_row:6.0f} B/row")
    sys.stdout.flush()


if __name__ == "__main__":
    with kept("year_of_data"):
        asyncio.run(main())
