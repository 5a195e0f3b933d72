"""Voice usage on the ledger: its own price rows, exact integer arithmetic, one charge
per slice however often it is written, and counted in the day's usage."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import asyncpg

from ledger import PostgresLedger, VoicePriceBook, VoiceUsage, charge_voice_usage, user_account


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
