"""The wallet's operations on a real PostgreSQL: charging model calls at versioned prices,
grants, top-ups, the guard, and a person's usage for their local day."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import asyncpg
import pytest

from ledger import (
    GRANT_ACCOUNT,
    REVENUE_ACCOUNT,
    TOPUP_ACCOUNT,
    AccountUnknown,
    AmountInvalid,
    InsufficientBalance,
    PostgresLedger,
    PriceBook,
    PriceMissing,
    RefConflict,
    RefInvalid,
    TokenUsage,
    Transaction,
    charge_model_call,
    grant_signup,
    guard,
    top_up,
    user_account,
)

PERSON = "usr_budi"
WALLET = user_account(PERSON)
JAKARTA = ZoneInfo("Asia/Jakarta")
NOON = datetime(2025, 3, 10, 5, 0, tzinfo=UTC)  # 12:00 in Jakarta


@pytest.fixture
def book(pool: asyncpg.Pool) -> PostgresLedger:
    return PostgresLedger(pool)


@pytest.fixture
def prices(pool: asyncpg.Pool) -> PriceBook:
    return PriceBook(pool)


async def charge(
    book: PostgresLedger,
    prices: PriceBook,
    tokens: TokenUsage,
    *,
    run_id: str = "run_1",
    call_index: int = 1,
    model: str = "gemini-3.5-flash",
    at: datetime = NOON,
) -> Transaction | None:
    return await charge_model_call(
        book,
        prices,
        person_id=PERSON,
        run_id=run_id,
        call_index=call_index,
        agent="ava",
        trigger="human",
        model=model,
        tokens=tokens,
        at=at,
    )


async def test_a_model_call_is_charged_with_a_full_receipt(book: PostgresLedger, prices: PriceBook) -> None:
    tokens = TokenUsage(prompt_tokens=1_000, cached_tokens=400, tool_use_prompt_tokens=50, output_tokens=80)
    flash = await prices.price_for("gemini-3.5-flash", NOON)

    txn = await charge_model_call(
        book,
        prices,
        person_id=PERSON,
        run_id="run_abc",
        call_index=2,
        agent="zee",
        trigger="ava",
        model="gemini-3.5-flash",
        tokens=tokens,
        at=NOON,
    )

    cost = 650 * 10_000 + 400 * 2_500 + 80 * 42_000
    assert txn is not None
    assert txn.ref == "run:run_abc:call:2"
    assert txn.type == "agent_call"
    assert txn.created_at == NOON
    assert txn.metadata == {
        "agent": "zee",
        "run_id": "run_abc",
        "trigger": "ava",
        "model": "gemini-3.5-flash",
        "call_index": 2,
        "tokens": {
            "prompt_tokens": 1_000,
            "cached_tokens": 400,
            "tool_use_prompt_tokens": 50,
            "output_tokens": 80,
            "thinking_tokens": 0,
        },
        "price": {
            "id": flash.id,
            "input_per_mtok_idr": 10_000,
            "cached_input_per_mtok_idr": 2_500,
            "output_per_mtok_idr": 42_000,
        },
        "cost_micros": cost,
    }
    assert await book.balance_micros(WALLET) == -cost
    assert await book.balance_micros(REVENUE_ACCOUNT) == cost
    [entry] = await book.entries(WALLET)
    assert entry.metadata == txn.metadata


async def test_a_retried_call_is_charged_once(book: PostgresLedger, prices: PriceBook) -> None:
    tokens = TokenUsage(prompt_tokens=100, output_tokens=10)
    first = await charge(book, prices, tokens)
    again = await charge(book, prices, tokens)

    assert first is not None and again is not None
    assert again.replayed and again.id == first.id
    assert await book.balance_micros(WALLET) == -(100 * 10_000 + 10 * 42_000)


async def test_a_run_that_fails_after_one_call_is_charged_for_that_call(
    book: PostgresLedger, prices: PriceBook
) -> None:
    await charge(book, prices, TokenUsage(prompt_tokens=10), call_index=1)
    # ...the second model call raised, so it was never charged.
    assert [e.ref for e in await book.entries(WALLET)] == ["run:run_1:call:1"]
    assert await book.balance_micros(WALLET) == -100_000


async def test_a_call_without_usage_writes_nothing(book: PostgresLedger, prices: PriceBook, pool: asyncpg.Pool) -> None:
    assert await charge(book, prices, TokenUsage()) is None
    assert await pool.fetchval("SELECT count(*) FROM transactions") == 0
    assert await pool.fetchval("SELECT count(*) FROM accounts WHERE kind = 'user'") == 0


async def test_the_offline_model_is_billed_at_the_default_rate(book: PostgresLedger, prices: PriceBook) -> None:
    txn = await charge(book, prices, TokenUsage(prompt_tokens=3, output_tokens=2), model="offline-1")
    offline = await prices.price_for("offline-1", NOON)

    assert offline.model == "offline-1"
    assert txn is not None
    assert txn.metadata["price"]["id"] == offline.id
    assert await book.balance_micros(WALLET) == -(3 * 10_000 + 2 * 42_000)


async def test_a_newer_price_applies_only_from_its_valid_from(book: PostgresLedger, prices: PriceBook) -> None:
    change = datetime(2025, 6, 1, tzinfo=UTC)
    old = await prices.price_for("offline-1", change)
    new = await prices.add(
        model="offline-1",
        input_per_mtok_idr=1,
        cached_input_per_mtok_idr=1,
        output_per_mtok_idr=2,
        valid_from=change,
    )

    assert (await prices.price_for("offline-1", change - timedelta(microseconds=1))).id == old.id
    assert (await prices.price_for("offline-1", change)).id == new.id
    assert (await prices.price_for("offline-1", change + timedelta(days=365))).id == new.id
    # Other models are untouched.
    assert (await prices.price_for("gemini-3.5-flash", change)).output_per_mtok_idr == 42_000

    tokens = TokenUsage(prompt_tokens=10, output_tokens=10)
    await charge(book, prices, tokens, model="offline-1", run_id="before", at=change - timedelta(seconds=1))
    await charge(book, prices, tokens, model="offline-1", run_id="after", at=change)
    costs = {e.ref: -e.amount_micros for e in await book.entries(WALLET)}
    assert costs == {"run:before:call:1": 10 * 10_000 + 10 * 42_000, "run:after:call:1": 10 * 1 + 10 * 2}


async def test_models_without_their_own_price_use_the_default(prices: PriceBook) -> None:
    default = await prices.price_for("some-new-model", NOON)
    assert default.model == "*"
    assert (default.input_per_mtok_idr, default.cached_input_per_mtok_idr, default.output_per_mtok_idr) == (
        10_000,
        2_500,
        42_000,
    )
    # A model's own row wins over a newer default.
    await prices.add(
        model="*", input_per_mtok_idr=1, cached_input_per_mtok_idr=1, output_per_mtok_idr=1, valid_from=NOON
    )
    assert (await prices.price_for("gemini-3.5-flash", NOON)).model == "gemini-3.5-flash"
    assert (await prices.price_for("some-new-model", NOON)).input_per_mtok_idr == 1
    with pytest.raises(PriceMissing):
        await prices.price_for("gemini-3.5-flash", datetime(2019, 1, 1, tzinfo=UTC))


async def test_usage_for_day_follows_the_persons_zone(book: PostgresLedger, prices: PriceBook) -> None:
    late = datetime(2025, 1, 1, 23, 30, tzinfo=UTC)  # 06:30 on 2 January in Jakarta
    await charge(book, prices, TokenUsage(prompt_tokens=100, cached_tokens=20, output_tokens=7), run_id="a", at=late)
    await charge(book, prices, TokenUsage(prompt_tokens=5, thinking_tokens=3), run_id="b", at=late + timedelta(hours=1))
    await charge(book, prices, TokenUsage(prompt_tokens=1), run_id="c", at=datetime(2025, 1, 1, 16, 59, tzinfo=UTC))
    await top_up(book, person_id=PERSON, amount_micros=10**9, ref="t1")  # money in is not usage

    jakarta_2nd = await book.usage_for_day(WALLET, day=date(2025, 1, 2), zone=JAKARTA)
    assert jakarta_2nd.calls == 2
    assert jakarta_2nd.input_tokens == 105
    assert jakarta_2nd.cached_tokens == 20
    assert jakarta_2nd.output_tokens == 7
    assert jakarta_2nd.thinking_tokens == 3
    assert jakarta_2nd.total_tokens == 115
    assert jakarta_2nd.cost_micros == (80 * 10_000 + 20 * 2_500 + 7 * 42_000) + (5 * 10_000 + 3 * 42_000)
    assert jakarta_2nd.as_json()["date"] == "2025-01-02"

    # 16:59 UTC is 23:59 on the 1st in Jakarta; 23:30 UTC is not the 1st there.
    jakarta_1st = await book.usage_for_day(WALLET, day=date(2025, 1, 1), zone=JAKARTA)
    assert (jakarta_1st.calls, jakarta_1st.input_tokens) == (1, 1)
    utc_1st = await book.usage_for_day(WALLET, day=date(2025, 1, 1), zone=ZoneInfo("UTC"))
    assert (utc_1st.calls, utc_1st.input_tokens) == (2, 101)  # 16:59 and 23:30 UTC

    empty = await book.usage_for_day(user_account("usr_nobody"), day=date(2025, 1, 2), zone=JAKARTA)
    assert (empty.calls, empty.cost_micros, empty.total_tokens) == (0, 0, 0)


async def test_usage_for_a_day_across_a_dst_change_spans_the_whole_local_day(
    book: PostgresLedger, prices: PriceBook
) -> None:
    berlin = ZoneInfo("Europe/Berlin")  # 30 March 2025 has 23 hours there
    for hour in (0, 12, 21):  # UTC; 21:00 UTC is 23:00 local on the 30th
        at = datetime(2025, 3, 30, hour, 30, tzinfo=UTC)
        await charge(book, prices, TokenUsage(prompt_tokens=1), run_id=f"h{hour}", at=at)
    usage = await book.usage_for_day(WALLET, day=date(2025, 3, 30), zone=berlin)
    assert usage.calls == 3


async def test_the_signup_grant_is_given_once_per_person(book: PostgresLedger, pool: asyncpg.Pool) -> None:
    first = await grant_signup(book, person_id=PERSON, amount_micros=5_000_000_000)
    again = await grant_signup(book, person_id=PERSON, amount_micros=5_000_000_000)
    # Even after the setting changed, a person keeps the one grant they got.
    changed = await grant_signup(book, person_id=PERSON, amount_micros=9_000_000_000)

    assert not first.replayed and again.replayed and changed.replayed
    assert first.ref == "grant:signup:usr_budi"
    assert await book.balance_micros(WALLET) == 5_000_000_000
    assert await book.balance_micros(GRANT_ACCOUNT) == -5_000_000_000
    assert await pool.fetchval("SELECT count(*) FROM transactions") == 1


async def test_top_ups_are_idempotent_by_ref(book: PostgresLedger) -> None:
    first = await top_up(book, person_id=PERSON, amount_micros=50_000_000_000, ref="ops-17", source="cli")
    again = await top_up(book, person_id=PERSON, amount_micros=50_000_000_000, ref="ops-17", source="cli")

    assert again.replayed and again.id == first.id
    assert first.ref == "topup:ops-17"
    assert first.metadata == {"source": "cli", "ref": "ops-17"}
    assert await book.balance_micros(WALLET) == 50_000_000_000
    assert await book.balance_micros(TOPUP_ACCOUNT) == -50_000_000_000
    with pytest.raises(RefConflict):
        await top_up(book, person_id=PERSON, amount_micros=1_000_000, ref="ops-17")


@pytest.mark.parametrize("amount", [0, -5, 1.5, 2.0, True, "100", None, 10**15 + 1])
async def test_top_ups_and_grants_refuse_bad_amounts(book: PostgresLedger, pool: asyncpg.Pool, amount: object) -> None:
    with pytest.raises(AmountInvalid):
        await top_up(book, person_id=PERSON, amount_micros=amount, ref="x")  # type: ignore[arg-type]
    with pytest.raises(AmountInvalid):
        await grant_signup(book, person_id=PERSON, amount_micros=amount)  # type: ignore[arg-type]
    assert await pool.fetchval("SELECT count(*) FROM transactions") == 0


async def test_top_ups_refuse_bad_refs_and_people(book: PostgresLedger, pool: asyncpg.Pool) -> None:
    for ref in ("", "two words", "x" * 101):
        with pytest.raises(RefInvalid):
            await top_up(book, person_id=PERSON, amount_micros=1, ref=ref)
    with pytest.raises(AccountUnknown):
        await top_up(book, person_id="not a person", amount_micros=1, ref="ok")
    assert await pool.fetchval("SELECT count(*) FROM transactions") == 0


async def test_the_guard_refuses_an_empty_or_overdrawn_wallet(book: PostgresLedger, prices: PriceBook) -> None:
    with pytest.raises(InsufficientBalance) as empty:
        await guard(book, person_id=PERSON)
    assert empty.value.balance_micros == 0
    assert empty.value.type == "insufficient_balance"

    await grant_signup(book, person_id=PERSON, amount_micros=100_000)
    await guard(book, person_id=PERSON)

    # Post-paid: the last run may overdraw, and then the next run is refused.
    await charge(book, prices, TokenUsage(prompt_tokens=11))
    with pytest.raises(InsufficientBalance) as overdrawn:
        await guard(book, person_id=PERSON)
    assert overdrawn.value.balance_micros == -10_000

    await top_up(book, person_id=PERSON, amount_micros=10_001, ref="fix")
    await guard(book, person_id=PERSON)
    assert (await book.verify()).ok
