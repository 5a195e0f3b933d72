"""Property: any mix of charges, grants and top-ups, run by concurrent writers, leaves a
ledger that `verify` finds whole and whose balances equal a simple model's sums.

Refs are drawn from a small pool so retries (same ref, same money) and conflicts (same
ref, other money) happen often, and concurrently. Which of two conflicting writers wins
is up to the database; the model therefore checks that exactly one of the attempted
versions of each ref was committed, that every caller was told the truth about it, and
then sums the committed postings.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger import (
    GRANT_ACCOUNT,
    REVENUE_ACCOUNT,
    TOPUP_ACCOUNT,
    PostgresLedger,
    Posting,
    PriceBook,
    RefConflict,
    TokenUsage,
    Transaction,
    charge_model_call,
    cost_micros,
    grant_signup,
    top_up,
    user_account,
)

AT = datetime(2025, 5, 1, 8, 0, tzinfo=UTC)
_examples = itertools.count()


@dataclass(frozen=True)
class Op:
    kind: str  # 'charge' | 'grant' | 'topup'
    person: int
    key: int  # which run call / top-up ref, within the person
    size: int  # tokens or micro-rupiah; differing sizes for one ref make a conflict


ops_strategy = st.lists(
    st.builds(
        Op,
        kind=st.sampled_from(["charge", "charge", "grant", "topup"]),
        person=st.integers(0, 2),
        key=st.integers(0, 3),
        size=st.sampled_from([0, 1, 7, 150, 2_000]),
    ),
    min_size=1,
    max_size=24,
)


@dataclass
class Outcome:
    op: Op
    ref: str | None  # None: nothing to write (a call without usage)
    intended: tuple[Posting, ...]
    result: Transaction | RefConflict | None


async def perform(book: PostgresLedger, prices: PriceBook, tag: str, op: Op) -> Outcome:
    person_id = f"p{tag}_{op.person}"
    wallet = user_account(person_id)
    if op.kind == "charge":
        tokens = TokenUsage(prompt_tokens=op.size, output_tokens=op.size // 3)
        price = await prices.price_for("gemini-3.5-flash", AT)
        cost = cost_micros(price=price, tokens=tokens)
        ref = None if tokens.is_zero else f"run:{person_id}_r{op.key}:call:1"
        intended = (Posting(REVENUE_ACCOUNT, cost), Posting(wallet, -cost))
        call = charge_model_call(
            book,
            prices,
            person_id=person_id,
            run_id=f"{person_id}_r{op.key}",
            call_index=1,
            agent="ava",
            trigger="human",
            model="gemini-3.5-flash",
            tokens=tokens,
            at=AT,
        )
    elif op.kind == "grant":
        amount = op.size + 1
        ref = f"grant:signup:{person_id}"
        intended = (Posting(GRANT_ACCOUNT, -amount), Posting(wallet, amount))
        call = grant_signup(book, person_id=person_id, amount_micros=amount)
    else:
        amount = op.size + 1
        ref = f"topup:{person_id}_t{op.key}"
        intended = (Posting(TOPUP_ACCOUNT, -amount), Posting(wallet, amount))
        call = top_up(book, person_id=person_id, amount_micros=amount, ref=f"{person_id}_t{op.key}")
    try:
        result: Transaction | RefConflict | None = await call
    except RefConflict as exc:
        result = exc
    return Outcome(op, ref, intended, result)


async def run_lane(book: PostgresLedger, prices: PriceBook, tag: str, lane: list[Op]) -> list[Outcome]:
    return [await perform(book, prices, tag, op) for op in lane]


async def system_balances(book: PostgresLedger) -> Counter[str]:
    return Counter({a: await book.balance_micros(a) for a in (REVENUE_ACCOUNT, TOPUP_ACCOUNT, GRANT_ACCOUNT)})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops_strategy, lanes=st.integers(1, 4))
async def test_concurrent_operations_keep_every_invariant(pool: asyncpg.Pool, ops: list[Op], lanes: int) -> None:
    book, prices = PostgresLedger(pool), PriceBook(pool)
    tag = str(next(_examples))  # fresh people per example; the database is shared
    before = await system_balances(book)

    async with asyncio.timeout(60), asyncio.TaskGroup() as group:
        tasks = [group.create_task(run_lane(book, prices, tag, ops[i::lanes])) for i in range(lanes)]
    outcomes = [o for t in tasks for o in t.result()]

    committed: dict[str, Transaction] = {}
    for ref in {o.ref for o in outcomes if o.ref is not None}:
        row = await pool.fetchrow("SELECT id FROM transactions WHERE ref = $1", ref)
        if row is not None:
            first = [o.result for o in outcomes if isinstance(o.result, Transaction) and o.result.ref == ref]
            assert first, f"{ref} was written but nobody was told"
            committed[ref] = first[0]

    expected: Counter[str] = Counter()
    for ref, txn in committed.items():
        attempts = [o for o in outcomes if o.ref == ref]
        # What was stored is one of the versions someone tried to write...
        assert txn.postings in {o.intended for o in attempts}
        # ...written once, and every caller was told about that one write.
        assert sum(1 for o in attempts if isinstance(o.result, Transaction) and not o.result.replayed) == 1
        for o in attempts:
            if isinstance(o.result, Transaction):
                assert (o.result.id, o.result.postings) == (txn.id, txn.postings)
            else:
                assert isinstance(o.result, RefConflict)
                assert o.intended != txn.postings and o.op.kind != "grant"
        for posting in txn.postings:
            expected[posting.account_id] += posting.amount_micros
    for o in outcomes:
        if o.ref is None:
            assert o.result is None
        else:
            assert o.ref in committed, f"{o.ref} was attempted but never written"

    for person in range(3):
        wallet = user_account(f"p{tag}_{person}")
        balance = await book.balance_micros(wallet)
        assert balance == expected[wallet]
        # Paging through the whole history finds every entry once, adding up to the balance.
        seen, before_id = [], None
        while page := await book.entries(wallet, before_id=before_id, limit=7):
            seen += page
            before_id = page[-1].id
        assert len({e.id for e in seen}) == len(seen) == sum(1 for t in committed.values() if wallet in accounts(t))
        assert sum(e.amount_micros for e in seen) == balance
    after = await system_balances(book)
    for account in (REVENUE_ACCOUNT, TOPUP_ACCOUNT, GRANT_ACCOUNT):
        assert after[account] - before[account] == expected[account]

    report = await book.verify()
    assert report.ok, report.problems


def accounts(txn: Transaction) -> set[str]:
    return {p.account_id for p in txn.postings}
