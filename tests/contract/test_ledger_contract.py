"""The `Ledger` and `Prices` ports' contracts: `PostgresLedger` / `PriceBook` and
`MemoryLedger` / `MemoryPrices`, driven through the wallet's own operations."""

from __future__ import annotations

import inspect
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from ledger import (
    REVENUE_ACCOUNT,
    TOPUP_ACCOUNT,
    Ledger,
    PostgresLedger,
    Posting,
    PriceBook,
    PriceMissing,
    Prices,
    RefConflict,
    TokenUsage,
    TransactionSpec,
    Unbalanced,
    charge_model_call,
    grant_signup,
    top_up,
    user_account,
)
from ledger.memory import MemoryLedger, MemoryPrices

JAKARTA = ZoneInfo("Asia/Jakarta")


async def test_a_top_up_moves_money_and_its_ref_writes_once(ledger: Ledger) -> None:
    first = await top_up(ledger, person_id="usr_a", amount_micros=5_000_000, ref="ticket-1")
    again = await top_up(ledger, person_id="usr_a", amount_micros=5_000_000, ref="ticket-1")
    assert (first.replayed, again.replayed, again.id) == (False, True, first.id)
    assert await ledger.balance_micros(user_account("usr_a")) == 5_000_000
    assert await ledger.balance_micros(TOPUP_ACCOUNT) <= -5_000_000
    with pytest.raises(RefConflict):
        await top_up(ledger, person_id="usr_a", amount_micros=7_000_000, ref="ticket-1")
    assert await ledger.balance_micros(user_account("usr_a")) == 5_000_000


async def test_a_signup_grant_is_given_once_per_person(ledger: Ledger) -> None:
    await grant_signup(ledger, person_id="usr_a", amount_micros=1_000)
    again = await grant_signup(ledger, person_id="usr_a", amount_micros=2_000)
    assert again.replayed
    assert await ledger.balance_micros(user_account("usr_a")) == 1_000
    assert await ledger.balance_micros(user_account("usr_never")) == 0


async def test_a_write_that_does_not_balance_writes_nothing(ledger: Ledger) -> None:
    spec = TransactionSpec(
        type="adjustment",
        ref="adj-1",
        postings=(Posting(user_account("usr_a"), 10), Posting(REVENUE_ACCOUNT, -9)),
    )
    with pytest.raises(Unbalanced):
        await ledger.transact(spec=spec)
    assert await ledger.balance_micros(user_account("usr_a")) == 0
    assert (await ledger.verify()).ok


async def test_entries_come_newest_first_a_page_at_a_time(ledger: Ledger) -> None:
    for n in range(5):
        await top_up(ledger, person_id="usr_a", amount_micros=1_000 + n, ref=f"t-{n}")
    account = user_account("usr_a")
    newest = await ledger.entries(account, limit=2)
    assert [e.amount_micros for e in newest] == [1_004, 1_003]
    older = await ledger.entries(account, before_id=newest[-1].id, limit=10)
    assert [e.amount_micros for e in older] == [1_002, 1_001, 1_000]
    assert {e.type for e in older} == {"topup"} and older[0].ref == "topup:t-2"
    assert older[0].metadata == {"source": "operator", "ref": "t-2"}
    with pytest.raises(ValueError):
        await ledger.entries(account, limit=0)


async def test_a_days_usage_counts_the_charges_of_that_local_day(ledger: Ledger) -> None:
    prices = MemoryPrices.flat()
    tokens = TokenUsage(prompt_tokens=1_000, cached_tokens=200, output_tokens=100, thinking_tokens=50)
    # 23:30 UTC on 1 March is 06:30 on 2 March in Jakarta.
    late = datetime(2026, 3, 1, 23, 30, tzinfo=UTC)
    for index, at in enumerate((late, late + timedelta(minutes=5), late - timedelta(hours=12))):
        await charge_model_call(
            ledger,
            prices,
            person_id="usr_a",
            run_id="run_1",
            call_index=index,
            agent="ava",
            trigger="human",
            model="m",
            tokens=tokens,
            at=at,
        )
    await top_up(ledger, person_id="usr_a", amount_micros=9_000_000, ref="not-usage")
    usage = await ledger.usage_for_day(user_account("usr_a"), day=date(2026, 3, 2), zone=JAKARTA)
    assert (usage.calls, usage.input_tokens, usage.cached_tokens, usage.output_tokens) == (2, 2_000, 400, 200)
    assert usage.thinking_tokens == 100
    one_call = await ledger.usage_for_day(user_account("usr_a"), day=date(2026, 3, 1), zone=JAKARTA)
    assert one_call.calls == 1 and usage.cost_micros == 2 * one_call.cost_micros > 0


async def test_verify_counts_what_is_there_and_finds_it_whole(ledger: Ledger) -> None:
    before = await ledger.verify()
    await top_up(ledger, person_id="usr_a", amount_micros=5, ref="v-1")
    after = await ledger.verify()
    assert after.ok
    assert (after.transactions, after.entries, after.accounts) == (
        before.transactions + 1,
        before.entries + 2,
        before.accounts + 1,
    )


async def test_prices_pick_the_models_own_newest_row_else_the_default(prices: PriceBook | MemoryPrices) -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    default = await prices.price_for("contract-model", start)
    assert default.model == "*"
    own = await prices.add(
        model="contract-model",
        input_per_mtok_idr=1,
        cached_input_per_mtok_idr=1,
        output_per_mtok_idr=2,
        valid_from=start,
    )
    newer = await prices.add(
        model="contract-model",
        input_per_mtok_idr=3,
        cached_input_per_mtok_idr=1,
        output_per_mtok_idr=4,
        valid_from=start + timedelta(days=30),
    )
    assert (await prices.price_for("contract-model", start + timedelta(days=1))).id == own.id
    assert (await prices.price_for("contract-model", start + timedelta(days=31))).id == newer.id
    assert (await prices.price_for("other-model", start)).model == "*"
    with pytest.raises(PriceMissing):
        await prices.price_for("contract-model", datetime(2000, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    ("port", "twin", "real"), [(Ledger, MemoryLedger, PostgresLedger), (Prices, MemoryPrices, PriceBook)]
)
def test_the_memory_twins_are_the_ports(port: type, twin: type, real: type) -> None:
    # mypy checks the twins against the ports only where one is assigned to the other; this
    # holds each of them to every method the port declares, named, awaited and typed alike.
    declared = {name for name in vars(port) if not name.startswith("_")}
    assert declared, port
    for name in sorted(declared):
        wanted = inspect.signature(getattr(port, name), eval_str=True)
        for implementation in (twin, real):
            method = getattr(implementation, name, None)
            assert inspect.iscoroutinefunction(method), (implementation.__name__, name)
            assert inspect.signature(method, eval_str=True) == wanted, (implementation.__name__, name)
