"""Account ids: what the ledger can hold, spelled so an id says what it names.

A person's wallet is `user:<person_id>:IDR` and is created on its first posting; the
system accounts are seeded by the migration. The database checks the same shape, so
an id refused here could never have been stored anyway.
"""

from __future__ import annotations

import re

from ledger.errors import AccountUnknown

REVENUE_ACCOUNT = "revenue:IDR"
TOPUP_ACCOUNT = "topup:IDR"
GRANT_ACCOUNT = "grant:IDR"
SYSTEM_ACCOUNTS = frozenset({REVENUE_ACCOUNT, TOPUP_ACCOUNT, GRANT_ACCOUNT})

# Matches the CHECK on accounts.id in sql/0001_ledger.sql.
_PERSON_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_USER_ACCOUNT = re.compile(r"user:[A-Za-z0-9_.-]{1,64}:IDR")


def user_account(person_id: str) -> str:
    """The wallet account of a person."""
    if not isinstance(person_id, str) or not _PERSON_ID.fullmatch(person_id):
        raise AccountUnknown(f"{person_id!r} is not a person id the ledger can hold")
    return f"user:{person_id}:IDR"


def is_user_account(account_id: str) -> bool:
    return bool(_USER_ACCOUNT.fullmatch(account_id))


def check_account(account_id: object) -> str:
    """The id itself when the ledger can hold it; AccountUnknown otherwise."""
    if isinstance(account_id, str) and (account_id in SYSTEM_ACCOUNTS or is_user_account(account_id)):
        return account_id
    raise AccountUnknown(f"{account_id!r} is not an account the ledger can hold")
