"""The rules a ledger write must meet before it is tried.

A `TransactionSpec` (in `ledger.model`) is one business event: its type, its idempotency
ref, the receipt and two or more postings that sum to zero. `checked_postings` enforces every rule the
database would (and a few it cannot see, such as a float sneaking in as an amount)
before any SQL runs, so a refused write has written nothing. It returns the postings in
the ledger's lock order.
"""

from __future__ import annotations

import re

from ledger.accounts import check_account
from ledger.errors import AmountInvalid, RefInvalid, Unbalanced
from ledger.model import TRANSACTION_TYPES, Posting, TransactionSpec
from ledger.money import AMOUNT_MICROS_MAX

POSTINGS_MAX = 16
REF_CHARS_MAX = 200
_REF = re.compile(rf"[!-~]{{1,{REF_CHARS_MAX}}}")  # printable ASCII, no spaces


def check_amount(amount_micros: object) -> int:
    """A whole, non-zero number of micro-rupiah within the posting limit."""
    # bool is an int subclass, and True must not pass as 1 µRp.
    if type(amount_micros) is not int:
        raise AmountInvalid(f"amounts are whole micro-rupiah (int), not {type(amount_micros).__name__}")
    if amount_micros == 0:
        raise AmountInvalid("an amount may not be zero")
    if abs(amount_micros) > AMOUNT_MICROS_MAX:
        raise AmountInvalid(f"an amount may move at most {AMOUNT_MICROS_MAX} micro-rupiah")
    return amount_micros


def check_ref(ref: object) -> str:
    if not isinstance(ref, str) or not _REF.fullmatch(ref):
        raise RefInvalid(f"a ref is 1 to {REF_CHARS_MAX} printable ASCII characters without spaces")
    return ref


def checked_postings(spec: TransactionSpec) -> tuple[Posting, ...]:
    """The spec's postings in lock order, or the LedgerError that refuses the spec."""
    assert spec.type in TRANSACTION_TYPES, f"unknown transaction type {spec.type!r}"
    assert spec.at is None or spec.at.tzinfo is not None, "a transaction's time must be aware"
    check_ref(spec.ref)
    for posting in spec.postings:
        check_amount(posting.amount_micros)
        check_account(posting.account_id)
    if not 2 <= len(spec.postings) <= POSTINGS_MAX:
        raise Unbalanced(f"a transaction has 2 to {POSTINGS_MAX} postings, not {len(spec.postings)}")
    total = sum(p.amount_micros for p in spec.postings)
    if total != 0:
        raise Unbalanced(f"postings must sum to zero, not {total} micro-rupiah")
    # One canonical order: a replay compares equal to its first write, and new accounts are
    # opened in the same order by every writer. (Balance rows lock in order in the schema.)
    return tuple(sorted(spec.postings, key=lambda p: (p.account_id, p.amount_micros)))
