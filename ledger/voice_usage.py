"""Charging voice calls: seconds of speech-to-text and characters of text-to-speech,
each at its own versioned price row, on the same wallet and receipts as model calls.

A call is charged in slices (one per exchange, and what is left when it ends), each
with a ref `voice:<call_id>:<n>`, so a slice written twice is charged once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from ledger.charging import usage_postings
from ledger.errors import PriceMissing
from ledger.ledger import Ledger
from ledger.model import Transaction, TransactionSpec

_PRICE_SQL = """
SELECT id, engine, per_million_units_idr FROM voice_prices
WHERE kind = $1 AND engine IN ($2, '*') AND valid_from <= $3
ORDER BY (engine = $2) DESC, valid_from DESC LIMIT 1
"""
# Audio is measured in milliseconds so a short utterance is not rounded to nothing.
_MS_PER_SECOND = 1000


@dataclass(frozen=True, slots=True)
class VoicePrice:
    id: int
    engine: str
    per_million_units_idr: int


@dataclass(frozen=True, slots=True)
class VoiceUsage:
    stt_engine: str
    stt_ms: int
    tts_engine: str
    tts_characters: int

    def __post_init__(self) -> None:
        assert self.stt_ms >= 0, "usage is never negative"
        assert self.tts_characters >= 0, "usage is never negative"

    @property
    def is_zero(self) -> bool:
        return self.stt_ms == 0 and self.tts_characters == 0


class VoicePriceBook:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def price_for(self, kind: str, engine: str, at: datetime) -> VoicePrice:
        row = await self._pool.fetchrow(_PRICE_SQL, kind, engine, at)
        if row is None:
            raise PriceMissing(f"no {kind} price for {engine!r} (nor a default) at {at.isoformat()}")
        return VoicePrice(row["id"], row["engine"], row["per_million_units_idr"])


def voice_cost_micros(*, stt: VoicePrice, tts: VoicePrice, usage: VoiceUsage) -> int:
    """µRp: seconds x (IDR per million seconds) + characters x (IDR per million characters),
    with seconds kept in milliseconds; at least 1 µRp for any usage."""
    stt_micros = usage.stt_ms * stt.per_million_units_idr // _MS_PER_SECOND
    tts_micros = usage.tts_characters * tts.per_million_units_idr
    total = stt_micros + tts_micros
    return max(total, 1) if not usage.is_zero else 0


async def charge_voice_usage(
    ledger: Ledger,
    prices: VoicePriceBook,
    *,
    person_id: str,
    call_id: str,
    slice_index: int,
    channel: str,
    usage: VoiceUsage,
    at: datetime,
) -> Transaction | None:
    """Charge one slice of a call; None (nothing written) when it used nothing."""
    if usage.is_zero:
        return None
    stt = await prices.price_for("stt", usage.stt_engine, at)
    tts = await prices.price_for("tts", usage.tts_engine, at)
    cost = voice_cost_micros(stt=stt, tts=tts, usage=usage)
    receipt = {
        "call_id": call_id,
        "slice": slice_index,
        "channel": channel,
        "stt": {
            "engine": usage.stt_engine,
            "ms": usage.stt_ms,
            "price_id": stt.id,
            "per_million_seconds_idr": stt.per_million_units_idr,
        },
        "tts": {
            "engine": usage.tts_engine,
            "characters": usage.tts_characters,
            "price_id": tts.id,
            "per_million_characters_idr": tts.per_million_units_idr,
        },
        "cost_micros": cost,
    }
    spec = TransactionSpec(
        type="voice_usage",
        ref=f"voice:{call_id}:{slice_index}",
        postings=usage_postings(person_id, cost),
        metadata=receipt,
        at=at,
    )
    return await ledger.transact(spec=spec)
