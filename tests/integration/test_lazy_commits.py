"""A turn's writes after the person's words commit without waiting for the disk, on the
connection that holds the thread, and only there and only until the turn lets go; the
turn's end is durable all the same (`Threads.commit_lazily`, `Turns`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import pytest

from agents import ModelResponse, ScriptedModel, Toolbox
from chat import Turns, Wallet
from chat.memory import MemoryEvents
from chat.people import People
from chat.runs import Runs
from chat.threads import Threads
from database import TurnPool, create_pool, holding, holding_own
from ledger import PostgresLedger, PriceBook

JAKARTA = ZoneInfo("Asia/Jakarta")


@pytest.fixture
async def lock_pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    locks = await create_pool(database_url, size_max=1)  # one connection: the next turn gets the same one
    try:
        yield locks
    finally:
        await locks.close()


async def setting(conn: Any) -> str:
    """The connection's (or the pool's next one's) synchronous_commit."""
    return str(await conn.fetchval("SHOW synchronous_commit"))


async def test_only_the_turns_own_connection_commits_lazily_and_only_until_the_turn_ends(
    pool: asyncpg.Pool, lock_pool: asyncpg.Pool
) -> None:
    turn_pool = TurnPool(pool).as_pool()
    threads = Threads(turn_pool, lock_pool=lock_pool, hold=holding)
    me, _ = await People(pool, default_time_zone="UTC").sign_in_local("Budi")
    async with threads.turn(me.id, wait_s=5):
        words = await threads.append(me.id, author="human", text="turn on the light", channel="voice")
        assert await setting(turn_pool) == "on", "the person's words were written durably"
        await threads.commit_lazily()
        assert await setting(turn_pool) == "off"
        run = await Runs(turn_pool).start(
            me.id,
            agent="ava",
            trigger="human",
            parent_run_id=None,
            trigger_message_id=words.id,
            origin_message_id=words.id,
            channel="voice",
        )
        written = await threads.append(me.id, author="ava", text="@zee", channel="voice", run_id=run.id)
        async with pool.acquire() as other:
            assert await setting(other) == "on", "nobody else's writes change"
            assert await other.fetchval("SELECT text FROM messages WHERE id = $1", written.id) == "@zee"
    async with lock_pool.acquire() as same:
        assert await setting(same) == "on", "the lock's connection went back to its pool reset"


async def test_a_turn_ends_only_once_its_writes_are_on_the_disk(pool: asyncpg.Pool, lock_pool: asyncpg.Pool) -> None:
    """The turn's last write (its run's end, on the bookkeeping's own connection) waits for
    the log to reach the disk, and the log is one stream: when the turn returns, nothing it
    wrote lazily is still only in memory."""
    turn_pool = TurnPool(pool).as_pool()
    threads, runs = Threads(turn_pool, lock_pool=lock_pool, hold=holding), Runs(turn_pool)
    events = MemoryEvents()
    wallet = Wallet(
        ledger=PostgresLedger(turn_pool),
        prices=PriceBook(pool),
        runs=runs,
        events=events,
        signup_grant_micros=5_000_000_000,
    )
    model = ScriptedModel([ModelResponse("Hello! #happy#")])
    turns = Turns(
        threads=threads,
        runs=runs,
        wallet=wallet,
        model=model,
        model_name=lambda _agent: "scripted-1",
        toolbox=Toolbox(),
        history_tokens_max=12_000,
        thread_wait_s=5,
        apart=lambda: holding_own(pool),
    )
    me, _ = await People(pool, default_time_zone="UTC").sign_in_local("Budi")
    await wallet.grant_signup(me.id)
    result = await turns.post(me, text="hello", channel="voice", zone=JAKARTA)
    assert [(m.author, m.text) for m in result.messages] == [("human", "hello"), ("ava", "Hello!")]
    async with pool.acquire() as conn:
        lsns = await conn.fetchrow(
            "SELECT pg_current_wal_flush_lsn() AS flushed, pg_current_wal_insert_lsn() AS inserted"
        )
    assert lsns is not None and lsns["flushed"] >= lsns["inserted"], "everything written so far is on the disk"
