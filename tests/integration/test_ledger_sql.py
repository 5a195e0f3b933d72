"""The ledger's balance and display inside other statements (ledger/sql/0003_balance_in_statements.sql)
equal their Python twins, and the wallet announces a balance in one round trip with them."""

from __future__ import annotations

import asyncio

import asyncpg
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chat import PostgresEvents, Wallet
from chat.events import EventLog
from chat.people import People
from chat.runs import Runs
from ledger import PostgresLedger, PriceBook, format_rupiah, user_account

_BIGINT_MAX = 2**63 - 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(amount_micros=st.integers(-_BIGINT_MAX, _BIGINT_MAX))
@example(amount_micros=0)
@example(amount_micros=999_999)
@example(amount_micros=-1)
@example(amount_micros=-1_000_000)
@example(amount_micros=-1_000_001)
@example(amount_micros=4_999_999_999)
@example(amount_micros=1_000_000_000_000)
@example(amount_micros=-_BIGINT_MAX)
async def test_the_display_in_sql_is_format_rupiah(pool: asyncpg.Pool, amount_micros: int) -> None:
    assert await pool.fetchval("SELECT ledger_format_rupiah($1)", amount_micros) == format_rupiah(amount_micros)


async def _wallet(pool: asyncpg.Pool) -> tuple[Wallet, str]:
    events = PostgresEvents(pool)
    wallet = Wallet(
        ledger=PostgresLedger(pool),
        prices=PriceBook(pool),
        runs=Runs(pool),
        events=events,
        signup_grant_micros=5_000_000_000,
        balances=events,
    )
    person, _ = await People(pool, default_time_zone="UTC").sign_in_local("Budi")
    return wallet, person.id


async def test_the_balance_in_sql_is_the_ledgers(pool: asyncpg.Pool) -> None:
    wallet, budi = await _wallet(pool)
    assert await pool.fetchval("SELECT ledger_balance_micros($1)", user_account(budi)) == 0  # never posted to
    await wallet.grant_signup(budi)
    await wallet.top_up(budi, amount_micros=1_234_567, ref="test:topup:1", source="test")
    expected = await wallet.balance_micros(budi)
    assert expected == 5_001_234_567
    assert await pool.fetchval("SELECT ledger_balance_micros($1)", user_account(budi)) == expected


async def test_the_balance_is_announced_in_one_statement(database_url: str) -> None:
    """`wallet.changed` was a balance read and then an insert, two round trips at every turn's
    end (issue 24); now one statement, with the same event for the live clients."""
    from database import create_pool

    pool = await create_pool(database_url, size_max=1)
    try:
        wallet, budi = await _wallet(pool)
        await wallet.top_up(budi, amount_micros=77_000_001, ref="test:topup:2", source="test")
        sent: list[str] = []
        async with pool.acquire() as conn:  # the pool's one connection: every statement below runs on it
            conn.add_query_logger(lambda record: sent.append(record.query))
        await asyncio.sleep(0)  # loggers run from call_soon: the check-in above lands now
        sent.clear()
        await wallet.announce(budi)
        await asyncio.sleep(0)
        statements = [q for q in sent if "pg_advisory_unlock_all" not in q]  # the check-in is the pool's
        assert len(statements) == 1, statements
        log = EventLog(pool)
        events = await log.since(budi, 0)
        assert [e.type for e in events][-1] == "wallet.changed"
        assert events[-1].data == {"balance_micros": 77_000_001, "balance": "Rp 77"}
    finally:
        await pool.close()
