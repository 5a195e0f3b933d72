"""What the ledger's records are: postings, a transaction as written and as asked for.

A leaf: it imports nothing from the ledger, so the rules (`postings`), the errors that
carry a transaction (`errors.RefConflict`) and the store (`ledger`) all build on it
without importing one another in a circle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

TransactionType = Literal["agent_call", "voice_usage", "signup_grant", "topup", "adjustment"]
TRANSACTION_TYPES: frozenset[str] = frozenset({"agent_call", "voice_usage", "signup_grant", "topup", "adjustment"})
# The types that spend a person's money on usage; a day's usage sums these.
CHARGE_TYPES: tuple[str, ...] = ("agent_call", "voice_usage")


@dataclass(frozen=True, slots=True)
class Posting:
    """Money into (positive) or out of (negative) one account."""

    account_id: str
    amount_micros: int


@dataclass(frozen=True, slots=True)
class TransactionSpec:
    type: TransactionType
    # The idempotency key: the same event written twice must carry the same ref.
    ref: str
    postings: tuple[Posting, ...]
    # The receipt, stored as JSONB (at most 16 KiB); shown to the person with each entry.
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # When the event happened (aware); the database clock when None. A charge retried
    # after a crash passes its model call's time, so it lands in that call's day.
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Transaction:
    id: int
    type: str
    ref: str
    postings: tuple[Posting, ...]  # in lock order: by account id, then amount
    metadata: dict[str, Any]
    created_at: datetime
    # True when the ref had already been written: this is that first transaction.
    replayed: bool = False
