"""The ledger's errors: one small hierarchy, each with a stable `type`.

The type is what the edges put in a problem+json `type` or a WebSocket error event's
`code`, and what a client may branch on, so it never changes once shipped; the message
is for people and may. It is the same vocabulary as every other domain's errors (chat,
voice): how a type answers at each door (an HTTP status, a close code, a spoken notice)
is chosen at the edges, never here.
"""

from __future__ import annotations

from typing import ClassVar

from ledger.model import Transaction


class LedgerError(Exception):
    type: ClassVar[str] = "ledger_error"


class AmountInvalid(LedgerError):
    """An amount that is not a whole, non-zero number of micro-rupiah within limits."""

    type = "amount_invalid"


class Unbalanced(LedgerError):
    """Postings that do not sum to zero, or too few or too many of them."""

    type = "unbalanced"


class RefInvalid(LedgerError):
    """An idempotency ref that is empty, too long or not printable ASCII."""

    type = "ref_invalid"


class RefConflict(LedgerError):
    """The ref was used before for a different transaction; nothing was written."""

    type = "ref_conflict"

    def __init__(self, message: str, *, existing: Transaction) -> None:
        super().__init__(message)
        self.existing = existing


class AccountUnknown(LedgerError):
    """An account id that is not one the ledger can hold."""

    type = "account_unknown"


class InsufficientBalance(LedgerError):
    """The wallet is empty or overdrawn, so no new run may start."""

    type = "insufficient_balance"

    def __init__(self, message: str, *, balance_micros: int) -> None:
        super().__init__(message)
        self.balance_micros = balance_micros


class PriceMissing(LedgerError):
    """No price row, neither the model's own nor the '*' default, was valid at that time."""

    type = "price_missing"
