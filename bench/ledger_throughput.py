"""Ledger write throughput and balance-read latency, each against a baseline from the same run.

Writes: charges per second with 1, 16 and 64 concurrent writers. Each writer charges its
own person and credits revenue, the hot row every charge touches. The ledger writes
through `PostgresLedger.transact`: validation, idempotent ref, account upsert, snapshot
update under row locks, and the balance check at COMMIT. The baseline inserts the same
rows (a header and two entries, one statement, one round trip) into copies of the tables
that have the same columns and indexes but no triggers, foreign keys or locks. Baseline
and ledger alternate in short rounds and the medians are reported, because this kind
of machine's fsync latency drifts over minutes.

Reads: `balance_micros` on an account with 1,000 and with 1,000,000 entries. Both
histories are bulk-loaded by single INSERT ... SELECT statements that go through the
ledger's own triggers (so every invariant is checked as they load), as balanced
transactions of 100 one-µRp debits and one revenue credit each, and `verify` checks the
whole ledger afterwards. Loading one charge per transaction is about five times slower
here, all of it spent checking invariants per transaction, and reads the same.

Targets: ledger >= 50 % of baseline at 16 writers; the 1M read <= 2x the 1k read.

Run: .venv/bin/python -m bench.ledger_throughput [--quick]   (DATABASE_URL: use that server instead
of an embedded one; a fresh database is created there and dropped afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from bench.report import write
from bench.servers import postgres
from database import apply_migrations, create_pool
from ledger import REVENUE_ACCOUNT, PostgresLedger, Posting, TransactionSpec, grant_signup, user_account

WRITERS = (1, 16, 64)


@dataclass(frozen=True)
class Length:
    """How long each measurement runs: FULL for the figures, QUICK for `make bench`."""

    rounds: int  # alternating baseline/ledger rounds per writer count
    round_s: float
    reads: int  # sequential balance reads per account


FULL = Length(rounds=3, round_s=2.5, reads=2_000)
QUICK = Length(rounds=1, round_s=1.0, reads=500)
SUM_READS = 5
DEBITS_PER_LOAD_TRANSACTION = 100

_BASELINE_TABLES_SQL = """
CREATE TABLE baseline_transactions (LIKE transactions INCLUDING ALL);
CREATE TABLE baseline_entries (LIKE entries INCLUDING ALL);
"""
_BASELINE_CHARGE_SQL = """
WITH header AS (
    INSERT INTO baseline_transactions (type, ref, metadata, created_at)
    VALUES ($1, $2, $3, now())
    RETURNING id, created_at
)
INSERT INTO baseline_entries (transaction_id, account_id, amount_micros, created_at)
SELECT header.id, p.account_id, p.amount_micros, header.created_at
FROM header CROSS JOIN unnest($4::text[], $5::bigint[]) AS p (account_id, amount_micros)
"""
# $3 transactions of $4 one-µRp debits to $2 and one matching revenue credit.
_LOAD_SQL = """
WITH header AS (
    INSERT INTO transactions (type, ref, metadata, created_at)
    SELECT 'adjustment', $1 || g, '{"bench": "load"}'::jsonb, now() FROM generate_series(1, $3::bigint) AS g
    RETURNING id, created_at
)
INSERT INTO entries (transaction_id, account_id, amount_micros, created_at)
SELECT header.id, $2, -1, header.created_at FROM header CROSS JOIN generate_series(1, $4::int)
UNION ALL
SELECT header.id, 'revenue:IDR', $4, header.created_at FROM header
"""
_SUM_SQL = "SELECT coalesce(sum(amount_micros), 0)::bigint FROM entries WHERE account_id = $1"
_ENTRY_COUNT_SQL = "SELECT count(*) FROM entries WHERE account_id = $1"

COST_MICROS = 15_360_000  # a typical call: 1,200 prompt + 80 output tokens at Flash prices
RECEIPT = {
    "agent": "ava",
    "run_id": "run_0123456789abcdef0123",
    "trigger": "human",
    "model": "gemini-3.5-flash",
    "call_index": 1,
    "tokens": {
        "prompt_tokens": 1200,
        "cached_tokens": 0,
        "tool_use_prompt_tokens": 0,
        "output_tokens": 80,
        "thinking_tokens": 0,
    },
    "price": {"id": 2, "input_per_mtok_idr": 10000, "cached_input_per_mtok_idr": 2500, "output_per_mtok_idr": 42000},
    "cost_micros": COST_MICROS,
}

_refs = itertools.count()
Charge = Callable[[str], Awaitable[object]]


def ledger_charger(book: PostgresLedger) -> Charge:
    async def charge(wallet: str) -> object:
        spec = TransactionSpec(
            type="agent_call",
            ref=f"run:bench{next(_refs)}:call:1",
            postings=(Posting(wallet, -COST_MICROS), Posting(REVENUE_ACCOUNT, COST_MICROS)),
            metadata=RECEIPT,
        )
        return await book.transact(spec=spec)

    return charge


def baseline_charger(pool: asyncpg.Pool) -> Charge:
    async def charge(wallet: str) -> object:
        return await pool.execute(
            _BASELINE_CHARGE_SQL,
            "agent_call",
            f"run:base{next(_refs)}:call:1",
            RECEIPT,
            [wallet, REVENUE_ACCOUNT],
            [-COST_MICROS, COST_MICROS],
        )

    return charge


async def charges_per_s(charge: Charge, wallets: list[str], duration_s: float) -> float:
    done = 0
    stop = time.perf_counter() + duration_s

    async def writer(wallet: str) -> None:
        nonlocal done
        while time.perf_counter() < stop:
            await charge(wallet)
            done += 1

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for wallet in wallets:
            group.create_task(writer(wallet))
    return done / (time.perf_counter() - started)


@dataclass(frozen=True)
class Throughput:
    writers: int
    baseline_per_s: float
    ledger_per_s: float

    @property
    def ratio(self) -> float:
        return self.ledger_per_s / self.baseline_per_s


async def measure_writes(pool: asyncpg.Pool, length: Length) -> list[Throughput]:
    book = PostgresLedger(pool)
    by_ledger, by_baseline = ledger_charger(book), baseline_charger(pool)
    results = []
    for writers in WRITERS:
        people = [f"bench_w{writers}_{i}" for i in range(writers)]
        for person_id in people:  # accounts exist, as they do for anyone past signup
            await grant_signup(book, person_id=person_id, amount_micros=10**15)
        wallets = [user_account(p) for p in people]
        await charges_per_s(by_ledger, wallets, 0.5)  # warm plans and connections
        await charges_per_s(by_baseline, wallets, 0.5)
        baseline, ledger = [], []
        for _ in range(length.rounds):
            baseline.append(await charges_per_s(by_baseline, wallets, length.round_s))
            ledger.append(await charges_per_s(by_ledger, wallets, length.round_s))
        result = Throughput(writers, statistics.median(baseline), statistics.median(ledger))
        results.append(result)
        print(f"  {writers:>2} writers: baseline {result.baseline_per_s:,.0f}/s, ledger {result.ledger_per_s:,.0f}/s")
    return results


async def load(pool: asyncpg.Pool, person_id: str, entries: int) -> str:
    wallet = user_account(person_id)
    await pool.execute("INSERT INTO accounts (id, kind) VALUES ($1, 'user')", wallet)
    batch = 100_000
    for start in range(0, entries, batch):
        size = min(batch, entries - start)
        await pool.execute(
            _LOAD_SQL, f"bench:load:{person_id}:{start}:", wallet, size // DEBITS_PER_LOAD_TRANSACTION,
            DEBITS_PER_LOAD_TRANSACTION,
        )  # fmt: skip
    count = await pool.fetchval(_ENTRY_COUNT_SQL, wallet)
    assert count == entries, (count, entries)
    return wallet


async def latencies_us(read: Callable[[], Awaitable[object]], n: int) -> list[float]:
    for _ in range(min(n, 50)):
        await read()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await read()
        samples.append((time.perf_counter() - started) * 1e6)
    return samples


@dataclass(frozen=True)
class Reads:
    entries: int
    median_us: float
    p99_us: float
    sum_median_us: float  # the same balance summed from the entries, without the snapshot


async def measure_reads(pool: asyncpg.Pool, length: Length) -> list[Reads]:
    book = PostgresLedger(pool)
    results = []
    for entries in (1_000, 1_000_000):
        started = time.perf_counter()
        wallet = await load(pool, f"bench_reader_{entries}", entries)
        print(f"  loaded {entries:,} entries in {time.perf_counter() - started:.1f} s")
        assert await book.balance_micros(wallet) == -entries
        samples = await latencies_us(functools.partial(book.balance_micros, wallet), length.reads)
        summed = await latencies_us(functools.partial(pool.fetchval, _SUM_SQL, wallet), SUM_READS)
        results.append(
            Reads(
                entries=entries,
                median_us=statistics.median(samples),
                p99_us=statistics.quantiles(samples, n=100)[98],
                sum_median_us=statistics.median(summed),
            )
        )
    return results


def report(
    writes: list[Throughput], reads: list[Reads], setting: dict[str, str], verify_line: str, length: Length
) -> str:
    at_16 = next(t for t in writes if t.writers == 16)
    small, large = reads
    read_ratio = large.median_us / small.median_us
    lines = [
        "# Ledger benchmark",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `python -m bench.ledger_throughput`.",
        ", ".join(f"{k}: {v}" for k, v in setting.items()) + ".",
        "",
        "## Charges per second",
        "",
        "Each writer charges its own person and credits `revenue:IDR`. Baseline: the same rows by plain SQL,",
        f"no triggers, foreign keys or locks. Median of {length.rounds} alternating rounds of {length.round_s} s.",
        "",
        "| Writers | Baseline (plain SQL) | Ledger (`transact`) | Ledger / baseline | Target |",
        "|---:|---:|---:|---:|---|",
    ]
    for t in writes:
        target = f"≥ 50 % — {'met' if t.ratio >= 0.5 else 'MISSED'}" if t.writers == 16 else ""
        lines.append(
            f"| {t.writers} | {t.baseline_per_s:,.0f}/s | {t.ledger_per_s:,.0f}/s | {t.ratio:.0%} | {target} |"
        )
    lines += [
        "",
        "## Balance read latency",
        "",
        f"`balance_micros` through the pool, {length.reads:,} sequential reads. The last column sums the entries",
        "instead (what a read would cost without the snapshot), median of 5.",
        "",
        "| Entries on the account | Median | p99 | Summing the entries |",
        "|---:|---:|---:|---:|",
    ]
    for r in reads:
        lines.append(
            f"| {r.entries:,} | {r.median_us:,.0f} µs | {r.p99_us:,.0f} µs | {r.sum_median_us / 1000:,.2f} ms |"
        )
    lines += [
        "",
        f"1M read / 1k read (medians): {read_ratio:.2f}x — target ≤ 2x, {'met' if read_ratio <= 2 else 'MISSED'}.",
        f"Ledger / baseline at 16 writers: {at_16.ratio:.0%} — target ≥ 50 %, "
        f"{'met' if at_16.ratio >= 0.5 else 'MISSED'}.",
        "",
        verify_line,
        "",
    ]
    return "\n".join(lines)


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


async def bench(admin_url: str, source: str, length: Length) -> str:
    name = f"avagenc_bench_{os.getpid()}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{name}"')
        url = with_database(admin_url, name)
        conn = await asyncpg.connect(url)
        try:
            await apply_migrations(conn)
            await conn.execute(_BASELINE_TABLES_SQL)
            setting = {
                "PostgreSQL": str(await conn.fetchval("SHOW server_version")),
                "server": source,
                "fsync": str(await conn.fetchval("SHOW fsync")),
                "synchronous_commit": str(await conn.fetchval("SHOW synchronous_commit")),
                "CPUs": str(os.cpu_count()),
            }
        finally:
            await conn.close()
        pool = await create_pool(url, size_max=max(WRITERS) + 4)
        try:
            print("writes")
            writes = await measure_writes(pool, length)
            print("reads")
            reads = await measure_reads(pool, length)
            started = time.perf_counter()
            verified = await PostgresLedger(pool).verify()
            verify_line = (
                f"`verify()` afterwards: {'ok' if verified.ok else 'FAILED ' + repr(verified.problems[:3])} — "
                f"{verified.transactions:,} transactions, {verified.entries:,} entries, "
                f"{verified.accounts:,} accounts, checked in {time.perf_counter() - started:.1f} s."
            )
        finally:
            await pool.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    return report(writes, reads, setting, verify_line, length)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one 1 s round per writer count, 500 reads (`make bench`)")
    args = parser.parse_args()
    started = time.perf_counter()
    with postgres() as (url, source):
        text = asyncio.run(bench(url, source, QUICK if args.quick else FULL))
    text += f"Whole run: {time.perf_counter() - started:.0f} s.\n"
    print()
    print(text)
    print(f"written to {write('ledger_throughput', text)}")


if __name__ == "__main__":
    main()
