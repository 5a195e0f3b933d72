"""The command line against a real database: tokens, top-ups and the ledger check."""

from __future__ import annotations

import os
import subprocess
import sys

import asyncpg

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
        [sys.executable, "-m", "main", *args], env=env, capture_output=True, text=True, timeout=120, check=False
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
    assert result.stdout.strip().startswith("v1.usr_")
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
