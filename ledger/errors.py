"""The ledger's errors: one small hierarchy, each with a stable `code`.

The code is what the edge puts in a problem+json `type` and what a client may branch on,
so it never changes once shipped; the message is for people and may. HTTP statuses are
chosen at the edge (main.py), never here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ledger.postings import Transaction


class LedgerError(Exception):
    code: ClassVar[str] = "ledger_error"


class AmountInvalid(LedgerError):
    """An amount that is not a whole, non-zero number of micro-rupiah within limits."""

    code = "amount_invalid"


class Unbalanced(LedgerError):
    """Postings that do not sum to zero, or too few or too many of them."""

    code = "unbalanced"


class RefInvalid(LedgerError):
    """An idempotency ref that is empty, too long or not printable ASCII."""

    code = "ref_invalid"


class RefConflict(LedgerError):
    """The ref was used before for a different transaction; nothing was written."""

    code = "ref_conflict"

    def __init__(self, message: str, *, existing: Transaction) -> None:
        super().__init__(message)
        self.existing = existing


class AccountUnknown(LedgerError):
    """An account id that is not one the ledger can hold."""

    code = "account_unknown"


class InsufficientBalance(LedgerError):
    """The wallet is empty or overdrawn, so no new run may start."""

    code = "insufficient_balance"

    def __init__(self, message: str, *, balance_micros: int) -> None:
        super().__init__(message)
        self.balance_micros = balance_micros


class PriceMissing(LedgerError):
    """No price row, neither the model's own nor the '*' default, was valid at that time."""

    code = "price_missing"
