"""PostgreSQL crashing the moment a model call returns, while the turn commits lazily: the
run the call belongs to is still there when PostgreSQL comes back, so the call kept in the
outbox is charged with its receipt (its `run_calls` row), never as a charge of a run that
does not exist (docs/money.md#charging).

Why this test exists: after the person's words, a turn's commits do not wait for the disk
(`Threads.commit_lazily`), and the outbox (chat.outbox) is a file outside the database's
log. A `kill -9` of the postmaster mid-turn lost a run's start that was still only in
PostgreSQL's memory, while the outbox kept the run's model call; the sweep then charged a
call whose run, and so whose receipt, was gone (a rare failure of
tests/faults/test_embedded_restart.py). Here the crash is made certain instead of lucky:
PostgreSQL's background writers are stopped before the turn, so nothing reaches the disk
but what a commit itself waits for, and every PostgreSQL process is killed at once from
inside the model call.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import asyncpg
import psutil
import pytest

from agents import ModelRequest, ModelResponse, ScriptedModel, Toolbox, Usage
from chat import Turns, Wallet
from chat.memory import MemoryEvents
from chat.outbox import Outbox, PendingCall
from chat.people import People
from chat.runs import Runs
from chat.threads import Threads
from database import EmbeddedPostgres, TurnPool, create_pool, holding, holding_own
from database.migrations import apply_migrations
from ledger import PostgresLedger, PriceBook

pytestmark = pytest.mark.timeout(120)

JAKARTA = ZoneInfo("Asia/Jakarta")
# The processes of PostgreSQL's own that write the log or data pages in the background.
_WRITERS = ("walwriter", "background writer", "checkpointer")


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[tuple[EmbeddedPostgres, str]]:
    """A PostgreSQL of this test's own (since the test crashes it), and its URL."""
    postgres = EmbeddedPostgres(tmp_path / "pg")
    url = postgres.start()
    try:
        yield postgres, url
    finally:
        postgres.stop()


def postmaster(postgres: EmbeddedPostgres) -> psutil.Process:
    return psutil.Process(int((postgres.data_dir / "postmaster.pid").read_text().splitlines()[0]))


def crash(postgres: EmbeddedPostgres) -> None:
    """`kill -9` of every PostgreSQL process at once: what was only in its shared memory is gone."""
    main = postmaster(postgres)
    everyone = [main, *main.children(recursive=True)]
    for process in everyone:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGKILL)
    psutil.wait_procs(everyone, timeout=30)


class _CrashingModel:
    """Answers once, as a model that has been paid for, and crashes PostgreSQL as it returns."""

    def __init__(self, postgres: EmbeddedPostgres) -> None:
        self._postgres = postgres
        self._inner = ScriptedModel([ModelResponse("Hello! #happy#", usage=Usage(prompt_tokens=900, output_tokens=12))])

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        response = await self._inner.generate(request=request)
        crash(self._postgres)
        return response


def _outbox_lines(tmp_path: Path) -> list[bytes]:
    return [path.read_bytes() for path in sorted((tmp_path / "outbox").glob("calls-*.jsonl"))]


async def _stop_background_writers(url: str) -> list[int]:
    """SIGSTOP PostgreSQL's background writers (they would otherwise flush the log within
    a few milliseconds, and the crash would lose nothing by luck)."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE backend_type = ANY($1::text[])", _WRITERS)
    finally:
        await conn.close()
    stopped = [row["pid"] for row in rows]
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    return stopped


async def test_a_call_whose_database_crashed_as_it_returned_is_charged_with_its_receipt(
    embedded: tuple[EmbeddedPostgres, str], tmp_path: Path
) -> None:
    postgres, url = embedded
    conn = await asyncpg.connect(url)
    try:
        await apply_migrations(conn)
    finally:
        await conn.close()
    outbox = Outbox(tmp_path / "outbox")
    pool = await create_pool(url, size_max=4)
    locks = await create_pool(url, size_max=2)
    turn_pool = TurnPool(pool).as_pool()
    runs = Runs(turn_pool)
    wallet = Wallet(
        ledger=PostgresLedger(turn_pool),
        prices=PriceBook(pool),
        runs=runs,
        events=MemoryEvents(),
        signup_grant_micros=5_000_000_000,
        outbox=outbox,
    )
    turns = Turns(
        threads=Threads(turn_pool, lock_pool=locks, hold=holding),
        runs=runs,
        wallet=wallet,
        model=_CrashingModel(postgres),
        model_name=lambda _agent: "scripted-1",
        toolbox=Toolbox(),
        history_tokens_max=12_000,
        thread_wait_s=5,
        apart=lambda: holding_own(pool),
    )
    try:
        me, _ = await People(pool, default_time_zone="UTC").sign_in_local("Budi")
        await wallet.grant_signup(me.id)
        assert len(await _stop_background_writers(url)) == len(_WRITERS)
        with pytest.raises((OSError, asyncpg.PostgresError, asyncpg.InterfaceError)):
            await turns.post(me, text="hello", channel="text", zone=JAKARTA)
        assert outbox.pending == 1, "the call the model answered is kept for its charge"
    finally:
        pool.terminate()
        locks.terminate()

    assert postgres.restart() == url  # crash recovery replays what reached the disk
    pool = await create_pool(url, size_max=4)
    try:
        runs = Runs(pool)
        wallet = Wallet(
            ledger=PostgresLedger(pool),
            prices=PriceBook(pool),
            runs=runs,
            events=MemoryEvents(),
            signup_grant_micros=0,
            outbox=outbox,
        )
        kept = [PendingCall.from_line(line) for line in b"".join(_outbox_lines(tmp_path)).splitlines(keepends=True)]
        assert len(kept) == 1
        assert await pool.fetchval("SELECT status FROM runs WHERE id = $1", kept[0].run_id) == "running", (
            "the run of a call that returned was on the disk before the call was made"
        )
        assert await wallet.settle_outbox() == 1
        charged = await pool.fetch(
            """SELECT t.ref, c.run_id FROM transactions t
               LEFT JOIN run_calls c ON t.ref = 'run:' || c.run_id || ':call:' || c.idx
               WHERE t.type = 'agent_call'"""
        )
        assert len(charged) == 1 and charged[0]["run_id"] is not None, "the charge has its recorded call"
        assert await pool.fetchval("SELECT count(*) FROM run_calls WHERE cost_micros IS NULL") == 0
    finally:
        await pool.close()
        outbox.close()
