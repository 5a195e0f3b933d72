"""The command line against a real database: tokens, top-ups and the ledger check, and
`wallet verify` on a stopped state folder (the embedded PostgreSQL started and stopped
by the command itself), run again and again."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from chat import Runs, Threads
from database import EmbeddedPostgres
from ledger import REVENUE_ACCOUNT, PostgresLedger, Posting, TransactionSpec, user_account
from settings import Settings

GRANT = 5_000_000_000


def avagenc(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    assert settings.database_url and settings.session_secret
    env = {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "SESSION_SECRET": settings.session_secret.get_secret_value(),
        "AVAGENC_HOME": str(settings.avagenc_home),
        "VOICE_PRELOAD": "false",
    }
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


async def balance(pool: asyncpg.Pool, name: str) -> int:
    person = await pool.fetchval("SELECT id FROM people WHERE local_key = lower($1)", name)
    value = await pool.fetchval(
        "SELECT coalesce(sum(balance_micros), 0) FROM account_balances WHERE account_id = $1", f"user:{person}:IDR"
    )
    return int(value)


async def test_users_token_creates_the_person_with_the_grant(settings: Settings, pool: asyncpg.Pool) -> None:
    result = avagenc(settings, "users", "token", "Budi")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("v2.usr_")
    assert await balance(pool, "budi") == GRANT


async def test_wallet_topup_by_name_is_idempotent_by_ref_and_verify_passes(
    settings: Settings, pool: asyncpg.Pool
) -> None:
    avagenc(settings, "users", "token", "Budi")
    first = avagenc(settings, "wallet", "topup", "Budi", "50000", "--ref", "ticket-7")
    again = avagenc(settings, "wallet", "topup", "Budi", "50000", "--ref", "ticket-7")
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert "already applied" in again.stdout
    assert await balance(pool, "budi") == GRANT + 50_000 * 1_000_000
    verify = avagenc(settings, "wallet", "verify")
    assert verify.returncode == 0 and "ledger OK" in verify.stdout


async def test_wallet_topup_refuses_bad_input_and_writes_nothing(settings: Settings, pool: asyncpg.Pool) -> None:
    avagenc(settings, "users", "token", "Budi")
    for args in (("Budi", "0"), ("Budi", "-5"), ("Budi", "1.5"), ("Budi", "ten"), ("Nobody", "100")):
        result = avagenc(settings, "wallet", "topup", *args)
        assert result.returncode == 2, args
        assert result.stderr.strip().splitlines()[-1].startswith("error:")
    conflict = avagenc(settings, "wallet", "topup", "Budi", "100", "--ref", "r1")
    assert conflict.returncode == 0
    other_amount = avagenc(settings, "wallet", "topup", "Budi", "200", "--ref", "r1")
    assert other_amount.returncode == 2 and "ref_conflict" in other_amount.stderr
    assert await balance(pool, "budi") == GRANT + 100 * 1_000_000


async def test_wallet_verify_fails_on_a_broken_ledger(settings: Settings, pool: asyncpg.Pool) -> None:
    avagenc(settings, "users", "token", "Budi")
    async with pool.acquire() as conn:
        # Corrupt the derived balance behind the ledger's back (superuser only).
        await conn.execute("SET session_replication_role = replica")
        await conn.execute(
            "UPDATE account_balances SET balance_micros = balance_micros + 1 WHERE account_id LIKE 'user:%'"
        )
        await conn.execute("SET session_replication_role = DEFAULT")
    verify = avagenc(settings, "wallet", "verify")
    assert verify.returncode == 1 and "BROKEN" in verify.stdout


async def test_wallet_verify_fails_on_a_wallet_further_below_zero_than_one_call_can_take(
    settings: Settings, pool: asyncpg.Pool
) -> None:
    """docs/money.md#the-guard: a turn ends at most one model call past zero."""
    avagenc(settings, "users", "token", "Budi")
    person = await pool.fetchval("SELECT id FROM people WHERE local_key = 'budi'")
    dearest = await pool.fetchval(
        "SELECT max(input_per_mtok_idr * $1::bigint + output_per_mtok_idr * $2::bigint) FROM prices",
        4 * 1_048_576,
        4 * 65_536,
    )
    taken = GRANT + dearest + 1
    await PostgresLedger(pool).transact(
        spec=TransactionSpec(
            type="adjustment",
            ref="test:overdraw",
            postings=(Posting(user_account(person), -taken), Posting(REVENUE_ACCOUNT, taken)),
            metadata={"reason": "test"},
        )
    )
    verify = avagenc(settings, "wallet", "verify")
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert f"PROBLEM overdrawn user:{person}:IDR" in verify.stdout


def on_stopped_folder(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`avagenc ARGS` with DATABASE_URL unset: the command starts and stops the embedded
    PostgreSQL of `state` itself. `-X importtime` lists every module the process imported."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "VOICE_PRELOAD")}
    env |= {"AVAGENC_HOME": str(state), "SESSION_SECRET": "cli-test-" + "x" * 40}
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def imported(result: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


def voice_loaded(result: subprocess.CompletedProcess[str]) -> set[str]:
    """Modules of the voice domain, Pipecat or Whisper the command imported (none, for a
    command that needs the database alone)."""
    return {m for m in imported(result) if m.split(".")[0] in ("voice", "pipecat", "faster_whisper")}


def postgres_running(state: Path) -> bool:
    listing = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return f"-D {(state / 'pg').resolve()}" in listing


async def break_ledger(state: Path) -> None:
    embedded = EmbeddedPostgres(state / "pg")
    try:
        conn = await asyncpg.connect(await asyncio.to_thread(embedded.start))
        try:
            await conn.execute("SET session_replication_role = replica")
            await conn.execute(
                "UPDATE account_balances SET balance_micros = balance_micros + 1 WHERE account_id LIKE 'user:%'"
            )
        finally:
            await conn.close()
    finally:
        await asyncio.to_thread(embedded.stop)


@pytest.mark.timeout(600)
async def test_wallet_verify_on_a_stopped_state_folder_exits_0_or_1_every_time_and_loads_no_voice(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    created = on_stopped_folder(state, "users", "token", "Budi")
    assert created.returncode == 0, created.stderr[-2000:]
    assert created.stdout.strip().startswith("v2.usr_")
    assert not voice_loaded(created)
    for attempt in range(20):
        result = on_stopped_folder(state, "wallet", "verify")
        assert (result.returncode, result.stdout.splitlines()[-1:]) == (0, ["ledger OK"]), (attempt, result.stderr)
        assert "ledger" in imported(result), "the import list is read"
        assert not voice_loaded(result), attempt
        # Nothing but the import list reaches the terminal: no PostgreSQL or pgserver lines.
        assert [line for line in result.stderr.splitlines() if not line.startswith("import time:")] == []
        assert not postgres_running(state)
    # A broken ledger is exit 1, every time.
    await break_ledger(state)
    for attempt in range(5):
        result = on_stopped_folder(state, "wallet", "verify")
        assert result.returncode == 1 and "BROKEN" in result.stdout, (attempt, result.stderr[-2000:])
    assert not postgres_running(state)
    assert (state / "pg.log").stat().st_size > 0, "pgserver's own lines went to the log file"


async def test_wallet_verify_only_reads_it_neither_fails_runs_nor_charges_calls(
    settings: Settings, pool: asyncpg.Pool
) -> None:
    avagenc(settings, "users", "token", "Budi")
    person_id = await pool.fetchval("SELECT id FROM people WHERE local_key = 'budi'")
    message = await Threads(pool).append(person_id, author="human", text="hi", channel="text")
    run = await Runs(pool).start(
        person_id,
        agent="ava",
        trigger="human",
        parent_run_id=None,
        trigger_message_id=message.id,
        origin_message_id=message.id,
        channel="text",
    )
    await Runs(pool).record_call(run.id, index=1, model="offline-1", usage={"prompt_tokens": 10, "output_tokens": 2})
    verify = avagenc(settings, "wallet", "verify")
    assert verify.returncode == 0, verify.stderr
    assert await pool.fetchval("SELECT status FROM runs WHERE id = $1", run.id) == "running"
    assert await pool.fetchval("SELECT cost_micros FROM run_calls WHERE run_id = $1", run.id) is None
    assert await balance(pool, "budi") == GRANT
