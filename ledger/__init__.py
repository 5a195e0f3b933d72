"""The wallet: a double-entry ledger in micro-rupiah, prices, the guard and receipts.

Other domains use only the names below. Money is `int` micro-rupiah throughout
(1 IDR = 1,000,000 µRp). The port is `Ledger` (PostgreSQL: `PostgresLedger`); prices
come from a `Prices` source (`PriceBook`); the wallet's operations — charge a model call,
grant, top up, guard — are plain functions over those two, in `ledger.charging`.
"""

from ledger.accounts import GRANT_ACCOUNT, REVENUE_ACCOUNT, TOPUP_ACCOUNT, user_account
from ledger.audit import Problem, VerifyReport
from ledger.charging import call_cost, charge_extraction, charge_model_call, grant_signup, guard, top_up
from ledger.errors import (
    AccountUnknown,
    AmountInvalid,
    InsufficientBalance,
    LedgerError,
    PriceMissing,
    RefConflict,
    RefInvalid,
    Unbalanced,
)
from ledger.ledger import ENTRIES_PAGE_MAX, Entry, Ledger, PostgresLedger
from ledger.model import Posting, Transaction, TransactionSpec, TransactionType
from ledger.money import AMOUNT_MICROS_MAX, MICROS_PER_RUPIAH, format_rupiah
from ledger.prices import Price, PriceBook, Prices, TokenUsage, cost_micros
from ledger.usage import DayUsage
from ledger.voice_usage import VoicePrice, VoicePriceBook, VoiceUsage, charge_voice_usage, voice_cost_micros

__all__ = [
    "AMOUNT_MICROS_MAX",
    "ENTRIES_PAGE_MAX",
    "GRANT_ACCOUNT",
    "MICROS_PER_RUPIAH",
    "REVENUE_ACCOUNT",
    "TOPUP_ACCOUNT",
    "AccountUnknown",
    "AmountInvalid",
    "DayUsage",
    "Entry",
    "InsufficientBalance",
    "Ledger",
    "LedgerError",
    "PostgresLedger",
    "Posting",
    "Price",
    "PriceBook",
    "PriceMissing",
    "Prices",
    "Problem",
    "RefConflict",
    "RefInvalid",
    "TokenUsage",
    "Transaction",
    "TransactionSpec",
    "TransactionType",
    "Unbalanced",
    "VerifyReport",
    "VoicePrice",
    "VoicePriceBook",
    "VoiceUsage",
    "call_cost",
    "charge_extraction",
    "charge_model_call",
    "charge_voice_usage",
    "cost_micros",
    "format_rupiah",
    "grant_signup",
    "guard",
    "top_up",
    "user_account",
    "voice_cost_micros",
]
