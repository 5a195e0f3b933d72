"""Voice usage on the ledger: its own price rows, exact integer arithmetic, one charge
per slice however often it is written, counted in the day's usage, and a slice the
database missed charged by the sweep, also when the process that missed it was killed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import asyncpg
import pytest

from chat import Outbox, Wallet
from chat.memory import MemoryEvents
from chat.runs import Runs
from ledger import PostgresLedger, PriceBook, VoicePriceBook, VoiceUsage, charge_voice_usage, user_account


async def test_a_call_slice_is_charged_once_at_its_price_rows(pool: asyncpg.Pool) -> None:
    ledger, prices = PostgresLedger(pool), VoicePriceBook(pool)
    usage = VoiceUsage(stt_engine="whisper-tiny.en", stt_ms=2_500, tts_engine="espeak-ng", tts_characters=40)
    at = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
    first = await charge_voice_usage(
        ledger, prices, person_id="usr_v", call_id="call_1", slice_index=1, channel="voice", usage=usage, at=at
    )
    again = await charge_voice_usage(
        ledger, prices, person_id="usr_v", call_id="call_1", slice_index=1, channel="voice", usage=usage, at=at
    )
    assert first is not None and again is not None and again.replayed
    # 2.5 s x 4,266,667 IDR per million seconds + 40 chars x 256,000 IDR per million chars
    expected = 2_500 * 4_266_667 // 1000 + 40 * 256_000
    assert await ledger.balance_micros(user_account("usr_v")) == -expected
    assert first.metadata["stt"]["ms"] == 2_500 and first.metadata["tts"]["characters"] == 40
    day = await ledger.usage_for_day(user_account("usr_v"), day=at.date(), zone=ZoneInfo("UTC"))
    assert day.cost_micros == expected and day.calls == 1
    assert (await ledger.verify()).ok


async def test_an_engine_can_get_its_own_newer_price(pool: asyncpg.Pool) -> None:
    await pool.execute(
        "INSERT INTO voice_prices (kind, engine, per_million_units_idr, valid_from) VALUES ('tts', 'espeak-ng', 0, $1)",
        datetime(2026, 1, 1, tzinfo=UTC),
    )
    prices = VoicePriceBook(pool)
    assert (await prices.price_for("tts", "espeak-ng", datetime(2026, 6, 1, tzinfo=UTC))).per_million_units_idr == 0
    assert (await prices.price_for("tts", "espeak-ng", datetime(2025, 6, 1, tzinfo=UTC))).engine == "*"
    assert (await prices.price_for("tts", "other", datetime(2026, 6, 1, tzinfo=UTC))).engine == "*"


# What a charge meets with the database away: which one depends on when the client notices
# its connection was cut (a refused connect, a closed one, or a cut mid-query).
_AWAY = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError, OSError)


@contextlib.asynccontextmanager
async def _database_away(admin_url: str, database_url: str) -> AsyncIterator[None]:
    """The database refuses every connection and its open ones are cut, for the block."""
    name = urlsplit(database_url).path.lstrip("/")
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name)
        try:
            yield
        finally:
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    finally:
        await admin.close()


async def test_a_slice_the_database_missed_is_charged_once_by_the_sweep(
    pool: asyncpg.Pool, database_url: str, pg_admin_url: str
) -> None:
    """The database goes away as a call's slice ends: the charge fails, the wallet keeps the
    slice, and the sweep (chat.recovery, `settle_outbox`) charges it once, at its own time's
    price; a second sweep and the slice written again charge nothing more."""
    wallet = Wallet(
        ledger=PostgresLedger(pool),
        prices=PriceBook(pool),
        runs=Runs(pool),
        events=MemoryEvents(),
        signup_grant_micros=0,
        voice_prices=VoicePriceBook(pool),
    )
    usage = VoiceUsage(stt_engine="whisper-tiny.en", stt_ms=1_000, tts_engine="espeak-ng", tts_characters=20)

    async def charge(slice_index: int) -> int:
        return await wallet.charge_voice(
            person_id="usr_w", call_id="call_9", slice_index=slice_index, channel="voice", usage=usage
        )

    first = await charge(1)
    async with _database_away(pg_admin_url, database_url):
        with pytest.raises(_AWAY):
            await charge(2)
        assert wallet.voice_unsettled == 1
        with pytest.raises(_AWAY):
            await wallet.settle_outbox()  # a sweep's pass while it is still away
        assert wallet.voice_unsettled == 1
    # The next passes (every SWEEP_INTERVAL_S), the database back: once the pool has new
    # connections, the slice is charged, and only once.
    settled = 0
    for _ in range(5):
        with contextlib.suppress(*_AWAY):
            settled += await wallet.settle_outbox()
        if not wallet.voice_unsettled:
            break
        await asyncio.sleep(0.1)
    assert settled == 1
    assert wallet.voice_unsettled == 0 and await wallet.settle_outbox() == 0
    assert await charge(2) == first  # written again (the call's own retry): replayed, not charged
    refs = await pool.fetch("SELECT ref FROM transactions WHERE ref LIKE 'voice:call_9:%' ORDER BY ref")
    assert [r["ref"] for r in refs] == ["voice:call_9:1", "voice:call_9:2"]
    assert await wallet.balance_micros("usr_w") == -2 * first
    assert (await PostgresLedger(pool).verify()).ok


ROOT = Path(__file__).resolve().parents[2]

# The first process: the database is away as a call's slice ends; it says so and is killed.
_MISSES_A_SLICE = """
import asyncio, sys
from pathlib import Path
import asyncpg
from chat import Outbox, Wallet
from chat.memory import MemoryEvents
from chat.runs import Runs
from ledger import PostgresLedger, PriceBook, VoicePriceBook, VoiceUsage

async def main(url, folder):
    pool = await asyncpg.create_pool(url, min_size=0, max_size=1)
    wallet = Wallet(
        ledger=PostgresLedger(pool), prices=PriceBook(pool), runs=Runs(pool), events=MemoryEvents(),
        signup_grant_micros=0, voice_prices=VoicePriceBook(pool), outbox=Outbox(Path(folder)),
    )
    usage = VoiceUsage(stt_engine="whisper-tiny.en", stt_ms=1_000, tts_engine="espeak-ng", tts_characters=20)
    try:
        await wallet.charge_voice(person_id="usr_k", call_id="call_k", slice_index=2, channel="voice", usage=usage)
    except Exception as exc:
        print("missed", type(exc).__name__, wallet.voice_unsettled, flush=True)
    await asyncio.sleep(600)  # killed long before

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_a_slice_missed_by_a_killed_process_is_charged_once_after_the_restart(
    pool: asyncpg.Pool, database_url: str, pg_admin_url: str, tmp_path: Path
) -> None:
    """A process whose slice ended while the database was away is killed (SIGKILL) before
    the database returns. The next process's sweep finds the slice in the dead process's
    outbox file (chat.outbox) and charges it once, at its own time's price; the file is gone
    after, and a second sweep charges nothing."""
    folder = tmp_path / "outbox"
    wallet = Wallet(
        ledger=PostgresLedger(pool),
        prices=PriceBook(pool),
        runs=Runs(pool),
        events=MemoryEvents(),
        signup_grant_micros=0,
        voice_prices=VoicePriceBook(pool),
    )
    usage = VoiceUsage(stt_engine="whisper-tiny.en", stt_ms=1_000, tts_engine="espeak-ng", tts_characters=20)
    one_slice = await wallet.charge_voice(
        person_id="usr_k", call_id="call_k", slice_index=1, channel="voice", usage=usage
    )
    async with _database_away(pg_admin_url, database_url):
        first = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _MISSES_A_SLICE,
            database_url,
            str(folder),
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert first.stdout is not None
        said = await asyncio.wait_for(first.stdout.readline(), timeout=60)
        assert said.split()[0] == b"missed" and said.split()[-1] == b"1", said
        first.send_signal(signal.SIGKILL)
        await first.wait()
    [left] = list(folder.glob("calls-*.jsonl"))
    assert b'"kind":"voice"' in left.read_bytes()

    # The restarted process: its own outbox in the same folder; its sweep charges the slice.
    restarted = Wallet(
        ledger=PostgresLedger(pool),
        prices=PriceBook(pool),
        runs=Runs(pool),
        events=MemoryEvents(),
        signup_grant_micros=0,
        voice_prices=VoicePriceBook(pool),
        outbox=Outbox(folder),
    )
    settled = 0
    for _ in range(5):  # the pool's connections were cut: the first pass may meet one
        with contextlib.suppress(*_AWAY):
            settled += await restarted.settle_outbox()
        if not left.exists():
            break
        await asyncio.sleep(0.1)
    assert settled == 1
    assert not left.exists(), "the dead process's file is gone once its slice is charged"
    assert await restarted.settle_outbox() == 0
    refs = await pool.fetch("SELECT ref FROM transactions WHERE ref LIKE 'voice:call_k:%' ORDER BY ref")
    assert [r["ref"] for r in refs] == ["voice:call_k:1", "voice:call_k:2"]
    assert await restarted.balance_micros("usr_k") == -2 * one_slice
    assert (await PostgresLedger(pool).verify()).ok
    restarted.outbox.close()
