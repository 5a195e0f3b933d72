"""Building the ledger and the wallet over it: what both the server and the command
line's money verbs need, and nothing more (no model, no events hub)."""

from __future__ import annotations

import asyncpg

from chat import Outbox, PostgresEvents, Runs, Wallet
from ledger import PostgresLedger, PriceBook, VoicePriceBook
from settings import Settings


def build_ledger(
    settings: Settings, pool: asyncpg.Pool, runs: Runs, *, outbox: Outbox | None = None
) -> tuple[PostgresLedger, Wallet]:
    """`outbox`: where a serving process keeps its calls until they are charged (chat.outbox)."""
    ledger = PostgresLedger(pool)
    events = PostgresEvents(pool)
    wallet = Wallet(
        ledger=ledger,
        prices=PriceBook(pool),
        voice_prices=VoicePriceBook(pool),
        runs=runs,
        events=events,
        # The balance announced by the statement that reads it (one round trip, not two).
        balances=events,
        signup_grant_micros=settings.signup_grant_micros,
        outbox=outbox,
    )
    return ledger, wallet
