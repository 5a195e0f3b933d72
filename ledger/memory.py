"""In-memory twins of the ledger's ports: `MemoryLedger` (the `Ledger`) and
`MemoryPrices` (the `Prices`), real and stateful, for one process and no database.

`MemoryLedger` keeps the same rules as `PostgresLedger` wherever the contract suite in
`tests/contract/` looks: the same checks before a write (`checked_postings`), the same
idempotency by ref (a replay returns the first write with `replayed=True`, another write
under a used ref is a `RefConflict`), user accounts opened on their first posting, and the
same reads. Writes are atomic because nothing here awaits between checking and storing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from ledger.accounts import SYSTEM_ACCOUNTS, check_account
from ledger.audit import Problem, VerifyReport
from ledger.errors import PriceMissing, RefConflict
from ledger.ledger import ENTRIES_PAGE_MAX, Entry
from ledger.model import CHARGE_TYPES, Transaction, TransactionSpec
from ledger.postings import checked_postings
from ledger.prices import Price
from ledger.usage import DayUsage, day_bounds

_TOKEN_FIELDS = ("prompt_tokens", "tool_use_prompt_tokens", "cached_tokens", "output_tokens", "thinking_tokens")


class MemoryLedger:
    """The double-entry ledger in lists: transactions, and entries pointing at them."""

    def __init__(self) -> None:
        self._transactions: dict[str, Transaction] = {}  # by ref
        self._entries: list[Entry] = []
        self._accounts: set[str] = set(SYSTEM_ACCOUNTS)
        self._transaction_ids = itertools.count(1)
        self._entry_ids = itertools.count(1)

    async def transact(self, *, spec: TransactionSpec) -> Transaction:
        postings = checked_postings(spec)
        first = self._transactions.get(spec.ref)
        if first is not None:
            if first.type != spec.type or first.postings != postings:
                raise RefConflict(
                    f"ref {spec.ref!r} was already used for a different {first.type} transaction", existing=first
                )
            return replace(first, replayed=True)
        transaction = Transaction(
            id=next(self._transaction_ids),
            type=spec.type,
            ref=spec.ref,
            postings=postings,
            metadata=dict(spec.metadata),
            created_at=spec.at or datetime.now(UTC),
        )
        self._transactions[spec.ref] = transaction
        for posting in postings:
            self._accounts.add(posting.account_id)
            self._entries.append(
                Entry(
                    id=next(self._entry_ids),
                    transaction_id=transaction.id,
                    account_id=posting.account_id,
                    amount_micros=posting.amount_micros,
                    created_at=transaction.created_at,
                    type=transaction.type,
                    ref=transaction.ref,
                    metadata=transaction.metadata,
                )
            )
        return transaction

    async def balance_micros(self, account_id: str) -> int:
        account = check_account(account_id)
        return sum(e.amount_micros for e in self._entries if e.account_id == account)

    async def entries(self, account_id: str, *, before_id: int | None = None, limit: int = 50) -> list[Entry]:
        if not 1 <= limit <= ENTRIES_PAGE_MAX:
            raise ValueError(f"a page holds 1 to {ENTRIES_PAGE_MAX} entries, not {limit}")
        account = check_account(account_id)
        mine = [e for e in self._entries if e.account_id == account and (before_id is None or e.id < before_id)]
        return sorted(mine, key=lambda e: e.id, reverse=True)[:limit]

    async def usage_for_day(self, account_id: str, *, day: date, zone: ZoneInfo) -> DayUsage:
        account = check_account(account_id)
        start, end = day_bounds(day, zone)
        charged: dict[int, int] = {}
        receipts: dict[int, dict[str, object]] = {}
        for entry in self._entries:
            if entry.account_id == account and start <= entry.created_at < end and entry.type in CHARGE_TYPES:
                charged[entry.transaction_id] = charged.get(entry.transaction_id, 0) + entry.amount_micros
                receipts[entry.transaction_id] = entry.metadata
        tokens = dict.fromkeys(_TOKEN_FIELDS, 0)
        for receipt in receipts.values():
            counted = receipt.get("tokens")
            if isinstance(counted, dict):
                for name in _TOKEN_FIELDS:
                    tokens[name] += int(counted.get(name, 0))
        return DayUsage(
            day=day,
            cost_micros=-sum(charged.values()),
            calls=len(charged),
            input_tokens=tokens["prompt_tokens"] + tokens["tool_use_prompt_tokens"],
            cached_tokens=tokens["cached_tokens"],
            output_tokens=tokens["output_tokens"],
            thinking_tokens=tokens["thinking_tokens"],
        )

    async def verify(self) -> VerifyReport:
        problems: list[Problem] = []
        for transaction in self._transactions.values():
            amounts = [e.amount_micros for e in self._entries if e.transaction_id == transaction.id]
            if len(amounts) < 2 or sum(amounts) != 0:
                detail = f"transaction {transaction.id} has {len(amounts)} entries summing to {sum(amounts)}"
                problems.append(Problem("unbalanced", transaction.ref, detail))
        return VerifyReport(
            transactions=len(self._transactions),
            entries=len(self._entries),
            accounts=len(self._accounts),
            problems=tuple(problems),
        )


@dataclass
class MemoryPrices:
    """Versioned price rows, as the `prices` table holds them: the model's own newest row
    valid at a moment, else the newest '*' row; never edited, only added to."""

    rows: list[Price]

    @classmethod
    def flat(cls, *, input_idr: int = 10_000, cached_idr: int = 2_500, output_idr: int = 42_000) -> MemoryPrices:
        """One '*' price for every model since 2020 (the migration's default row)."""
        since = datetime(2020, 1, 1, tzinfo=UTC)
        return cls([Price(1, "*", input_idr, cached_idr, output_idr, since)])

    async def add(
        self,
        *,
        model: str,
        input_per_mtok_idr: int,
        cached_input_per_mtok_idr: int,
        output_per_mtok_idr: int,
        valid_from: datetime,
    ) -> Price:
        """A new price for `model` ('*' for the default) from `valid_from` on."""
        assert valid_from.tzinfo is not None, "a price starts at an aware time"
        price = Price(
            len(self.rows) + 1, model, input_per_mtok_idr, cached_input_per_mtok_idr, output_per_mtok_idr, valid_from
        )
        self.rows.append(price)
        return price

    async def price_for(self, model: str, at: datetime) -> Price:
        assert at.tzinfo is not None, "prices are looked up at an aware time"
        valid = [p for p in self.rows if p.model in (model, "*") and p.valid_from <= at]
        if not valid:
            raise PriceMissing(f"no price for {model!r} (nor a default) at {at.isoformat()}")
        return max(valid, key=lambda p: (p.model == model, p.valid_from))
