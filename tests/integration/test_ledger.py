"""The ledger against a real PostgreSQL: writes, idempotency, refusals, concurrency, and
the invariants the schema itself enforces when someone bypasses the code with raw SQL."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

import ledger
from database import create_pool
from ledger import (
    GRANT_ACCOUNT,
    REVENUE_ACCOUNT,
    TOPUP_ACCOUNT,
    AccountUnknown,
    AmountInvalid,
    LedgerError,
    PostgresLedger,
    Posting,
    RefConflict,
    RefInvalid,
    TransactionSpec,
    Unbalanced,
    user_account,
)

ALICE = user_account("usr_alice")
BOB = user_account("usr_bob")
_refs = itertools.count()


def charge(account: str, micros: int, *, ref: str | None = None, **metadata: Any) -> TransactionSpec:
    return TransactionSpec(
        type="agent_call",
        ref=f"test:{next(_refs)}" if ref is None else ref,
        postings=(Posting(account, -micros), Posting(REVENUE_ACCOUNT, micros)),
        metadata=metadata,
    )


async def rows(pool: asyncpg.Pool) -> tuple[int, int, int, int]:
    """Everything a refused write must leave untouched."""
    row = await pool.fetchrow(
        """SELECT (SELECT count(*) FROM transactions), (SELECT count(*) FROM entries),
                  (SELECT count(*) FROM accounts), (SELECT count(*) FROM account_balances)"""
    )
    assert row is not None
    return (row[0], row[1], row[2], row[3])


@pytest.fixture
def book(pool: asyncpg.Pool) -> PostgresLedger:
    return PostgresLedger(pool)


@pytest.fixture
async def wide_pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    """Enough connections for every concurrent writer to be in the database at once."""
    pool = await create_pool(database_url, size_max=40)
    yield pool
    await pool.close()


def test_public_surface() -> None:
    assert sorted(ledger.__all__) == sorted(
        [
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
            "Posting",
            "PostgresLedger",
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
    )
    for name in ledger.__all__:
        assert getattr(ledger, name) is not None
    codes = {cls.type for cls in (AmountInvalid, Unbalanced, RefConflict, RefInvalid, AccountUnknown)}
    assert codes == {"amount_invalid", "unbalanced", "ref_conflict", "ref_invalid", "account_unknown"}
    assert ledger.InsufficientBalance.type == "insufficient_balance"


async def test_a_charge_moves_money_from_the_wallet_to_revenue(book: PostgresLedger) -> None:
    txn = await book.transact(spec=charge(ALICE, 1_500, agent="ava"))

    assert not txn.replayed
    assert txn.type == "agent_call"
    assert txn.metadata == {"agent": "ava"}
    assert txn.postings == (Posting(REVENUE_ACCOUNT, 1_500), Posting(ALICE, -1_500))
    assert txn.created_at.tzinfo is not None
    assert await book.balance_micros(ALICE) == -1_500
    assert await book.balance_micros(REVENUE_ACCOUNT) == 1_500
    assert (await book.verify()).ok


async def test_balances_of_accounts_never_posted_to_are_zero(book: PostgresLedger) -> None:
    assert await book.balance_micros(user_account("usr_nobody")) == 0
    assert await book.balance_micros(TOPUP_ACCOUNT) == 0
    with pytest.raises(AccountUnknown):
        await book.balance_micros("user:has space:IDR")
    with pytest.raises(AccountUnknown):
        await book.balance_micros("revenue:USD")


async def test_the_same_ref_twice_writes_once(book: PostgresLedger, pool: asyncpg.Pool) -> None:
    first = await book.transact(spec=charge(ALICE, 700, ref="run:r1:call:1"))
    again = await book.transact(spec=charge(ALICE, 700, ref="run:r1:call:1", other="receipt"))

    assert again.replayed and not first.replayed
    assert again.id == first.id
    assert again.metadata == first.metadata  # the first write's receipt stands
    assert again.created_at == first.created_at
    assert await book.balance_micros(ALICE) == -700
    assert await pool.fetchval("SELECT count(*) FROM transactions WHERE ref = 'run:r1:call:1'") == 1


async def test_ten_concurrent_writers_of_one_ref_write_once(wide_pool: asyncpg.Pool) -> None:
    book = PostgresLedger(wide_pool)
    results = await asyncio.gather(*(book.transact(spec=charge(ALICE, 900, ref="run:same:call:1")) for _ in range(10)))

    assert len({t.id for t in results}) == 1
    assert sum(not t.replayed for t in results) == 1
    assert await book.balance_micros(ALICE) == -900
    assert await wide_pool.fetchval("SELECT count(*) FROM transactions") == 1


async def test_a_reused_ref_with_other_postings_conflicts_and_writes_nothing(
    book: PostgresLedger, pool: asyncpg.Pool
) -> None:
    first = await book.transact(spec=charge(ALICE, 700, ref="run:r2:call:1"))
    before = await rows(pool)

    with pytest.raises(RefConflict) as caught:
        await book.transact(spec=charge(ALICE, 701, ref="run:r2:call:1"))
    assert caught.value.existing.id == first.id
    assert caught.value.type == "ref_conflict"
    with pytest.raises(RefConflict):
        await book.transact(spec=charge(BOB, 700, ref="run:r2:call:1"))
    other_type = TransactionSpec(type="adjustment", ref="run:r2:call:1", postings=first.postings)
    with pytest.raises(RefConflict):
        await book.transact(spec=other_type)

    assert await rows(pool) == before
    assert await book.balance_micros(ALICE) == -700
    assert await book.balance_micros(BOB) == 0


@pytest.mark.parametrize(
    ("postings", "error"),
    [
        pytest.param((Posting(ALICE, 0), Posting(REVENUE_ACCOUNT, 0)), AmountInvalid, id="zero"),
        pytest.param((Posting(ALICE, -1.5), Posting(REVENUE_ACCOUNT, 1.5)), AmountInvalid, id="float"),  # type: ignore[arg-type]
        pytest.param((Posting(ALICE, -1.0), Posting(REVENUE_ACCOUNT, 1.0)), AmountInvalid, id="whole float"),  # type: ignore[arg-type]
        pytest.param((Posting(ALICE, True), Posting(REVENUE_ACCOUNT, -1)), AmountInvalid, id="bool"),
        pytest.param((Posting(ALICE, "5"), Posting(REVENUE_ACCOUNT, -5)), AmountInvalid, id="string"),  # type: ignore[arg-type]
        pytest.param((Posting(ALICE, -(10**15 + 1)), Posting(REVENUE_ACCOUNT, 10**15 + 1)), AmountInvalid, id="huge"),
        pytest.param((Posting(ALICE, -5), Posting(REVENUE_ACCOUNT, 4)), Unbalanced, id="sum not zero"),
        pytest.param((Posting(ALICE, 5),), Unbalanced, id="one posting"),
        pytest.param((), Unbalanced, id="no postings"),
        pytest.param(tuple(Posting(ALICE, (-1) ** i) for i in range(18)), Unbalanced, id="too many postings"),
        pytest.param((Posting("user:a b:IDR", -5), Posting(REVENUE_ACCOUNT, 5)), AccountUnknown, id="bad user id"),
        pytest.param((Posting("cash:IDR", -5), Posting(REVENUE_ACCOUNT, 5)), AccountUnknown, id="unknown system"),
        pytest.param((Posting("user:x:USD", -5), Posting(REVENUE_ACCOUNT, 5)), AccountUnknown, id="other currency"),
    ],
)
async def test_refused_writes_write_nothing(
    book: PostgresLedger, pool: asyncpg.Pool, postings: tuple[Posting, ...], error: type[LedgerError]
) -> None:
    await book.transact(spec=charge(ALICE, 10))
    before = await rows(pool)

    with pytest.raises(error):
        await book.transact(spec=TransactionSpec(type="adjustment", ref="bad:1", postings=postings))

    assert await rows(pool) == before
    assert await book.balance_micros(ALICE) == -10


@pytest.mark.parametrize("ref", ["", "has space", "x" * 201, "ünïcode", "tab\there"])
async def test_refs_are_short_printable_ascii(book: PostgresLedger, pool: asyncpg.Pool, ref: str) -> None:
    with pytest.raises(RefInvalid):
        await book.transact(spec=charge(ALICE, 5, ref=ref))
    assert await rows(pool) == (0, 0, 3, 0)


async def test_32_concurrent_charges_to_one_person_end_at_the_exact_balance(wide_pool: asyncpg.Pool) -> None:
    book = PostgresLedger(wide_pool)
    amounts = [1_000 + i for i in range(32)]

    async with asyncio.timeout(30):  # a deadlock would hang, not fail
        await asyncio.gather(
            *(book.transact(spec=charge(ALICE, a, ref=f"run:c{i}:call:1")) for i, a in enumerate(amounts))
        )

    assert await book.balance_micros(ALICE) == -sum(amounts)
    assert await book.balance_micros(REVENUE_ACCOUNT) == sum(amounts)
    assert (await book.verify()).ok


async def test_32_concurrent_mixed_writers_across_people_keep_every_sum(wide_pool: asyncpg.Pool) -> None:
    book = PostgresLedger(wide_pool)
    people = [user_account(f"usr_{n}") for n in range(4)]
    expected = dict.fromkeys([*people, REVENUE_ACCOUNT, TOPUP_ACCOUNT, GRANT_ACCOUNT], 0)
    specs: list[TransactionSpec] = []
    for i in range(32):
        person, amount = people[i % 4], 100 + i
        kind = i % 4
        if kind == 0:
            specs.append(
                TransactionSpec(
                    type="topup",
                    ref=f"topup:{i}",
                    postings=(Posting(TOPUP_ACCOUNT, -amount), Posting(person, amount)),
                )
            )
            expected[TOPUP_ACCOUNT] -= amount
            expected[person] += amount
        elif kind == 1:
            # Person to person, in both directions, so writers lock two user rows in
            # opposite orders unless the ledger sorts them.
            payer, payee = (person, people[(i + 1) % 4]) if i % 8 < 4 else (people[(i + 1) % 4], person)
            specs.append(
                TransactionSpec(
                    type="adjustment",
                    ref=f"adjust:{i}",
                    postings=(Posting(payer, -amount), Posting(payee, amount)),
                )
            )
            expected[payer] -= amount
            expected[payee] += amount
        else:
            specs.append(charge(person, amount, ref=f"run:m{i}:call:1"))
            expected[person] -= amount
            expected[REVENUE_ACCOUNT] += amount
    specs.append(
        TransactionSpec(
            type="signup_grant",
            ref="grant:signup:many",
            postings=(Posting(GRANT_ACCOUNT, -400), *(Posting(p, 100) for p in people)),
        )
    )
    expected[GRANT_ACCOUNT] -= 400
    for person in people:
        expected[person] += 100

    async with asyncio.timeout(30):
        await asyncio.gather(*(book.transact(spec=s) for s in specs))

    assert {account: await book.balance_micros(account) for account in expected} == expected
    report = await book.verify()
    assert report.ok, report.problems
    assert report.transactions == 33


async def test_a_cancelled_caller_is_still_charged(book: PostgresLedger, pool: asyncpg.Pool) -> None:
    task = asyncio.create_task(book.transact(spec=charge(ALICE, 333, ref="run:gone:call:1")))
    await asyncio.sleep(0)  # the write has started
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    for _ in range(500):
        if await book.balance_micros(ALICE) == -333:
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the cancelled charge was never written")
    replay = await book.transact(spec=charge(ALICE, 333, ref="run:gone:call:1"))
    assert replay.replayed


async def test_a_write_that_fails_after_its_caller_left_is_logged(
    book: PostgresLedger, caplog: pytest.LogCaptureFixture
) -> None:
    await book.transact(spec=charge(ALICE, 5, ref="run:x:call:1"))
    task = asyncio.create_task(book.transact(spec=charge(ALICE, 6, ref="run:x:call:1")))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    for _ in range(500):
        if any("failed after its caller went away" in r.getMessage() for r in caplog.records):
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the conflicting write's failure was never reported")
    [record] = [r for r in caplog.records if r.name == "ledger.ledger"]
    assert record.exc_info is not None and isinstance(record.exc_info[1], RefConflict)
    assert await book.balance_micros(ALICE) == -5


async def test_entries_page_newest_first_with_their_receipts(book: PostgresLedger) -> None:
    written = [await book.transact(spec=charge(ALICE, 10 + i, agent="zee", n=i)) for i in range(5)]

    first_page = await book.entries(ALICE, limit=2)
    assert [e.amount_micros for e in first_page] == [-14, -13]
    assert first_page[0].metadata == {"agent": "zee", "n": 4}
    assert first_page[0].ref == written[4].ref
    assert first_page[0].type == "agent_call"
    assert first_page[0].transaction_id == written[4].id
    assert first_page[0].account_id == ALICE
    assert first_page[0].as_json()["receipt"] == {"agent": "zee", "n": 4}

    rest = await book.entries(ALICE, before_id=first_page[-1].id, limit=200)
    assert [e.amount_micros for e in rest] == [-12, -11, -10]
    assert await book.entries(ALICE, before_id=rest[-1].id) == []
    assert await book.entries(user_account("usr_nobody")) == []
    for limit in (0, 201):
        with pytest.raises(ValueError, match="page"):
            await book.entries(ALICE, limit=limit)


async def test_the_balance_snapshot_equals_the_sum_of_entries(book: PostgresLedger, pool: asyncpg.Pool) -> None:
    for i in range(40):
        await book.transact(spec=charge([ALICE, BOB][i % 2], 1 + i * 7))

    summed = await pool.fetch("SELECT account_id, sum(amount_micros)::bigint AS micros FROM entries GROUP BY 1")
    assert summed
    for row in summed:
        assert await book.balance_micros(row["account_id"]) == row["micros"]
    # Revenue's snapshot is spread over stripes, so concurrent charges lock different rows.
    stripes = await pool.fetchval("SELECT count(*) FROM account_balances WHERE account_id = $1", REVENUE_ACCOUNT)
    assert stripes > 1


# ---- The schema's own guarantees, tested around the code with raw SQL ----------------

_HEADER_SQL = "INSERT INTO transactions (type, ref) VALUES ('adjustment', $1) RETURNING id"
_ENTRY_SQL = "INSERT INTO entries (transaction_id, account_id, amount_micros, created_at) VALUES ($1, $2, $3, now())"


@pytest.mark.parametrize(
    "amounts",
    [
        pytest.param([], id="no entries"),
        pytest.param([5], id="one entry"),
        pytest.param([5, -4], id="sum not zero"),
        pytest.param([5, -5, 1], id="three entries not summing to zero"),
    ],
)
async def test_raw_sql_cannot_commit_an_unbalanced_transaction(pool: asyncpg.Pool, amounts: list[int]) -> None:
    accounts = itertools.cycle([TOPUP_ACCOUNT, GRANT_ACCOUNT, REVENUE_ACCOUNT])

    async def write() -> None:
        async with pool.acquire() as conn, conn.transaction():
            txn = await conn.fetchval(_HEADER_SQL, "raw:1")
            for account, amount in zip(accounts, amounts, strict=False):
                await conn.execute(_ENTRY_SQL, txn, account, amount)
            # Every statement succeeded: the check waits for COMMIT, when all entries are in.

    with pytest.raises(asyncpg.CheckViolationError, match="unbalanced"):
        await write()
    assert await rows(pool) == (0, 0, 3, 0)


async def test_raw_sql_may_commit_a_balanced_transaction_and_the_snapshot_follows(
    pool: asyncpg.Pool, book: PostgresLedger
) -> None:
    async with pool.acquire() as conn, conn.transaction():
        txn = await conn.fetchval(_HEADER_SQL, "raw:ok")
        await conn.execute(_ENTRY_SQL, txn, TOPUP_ACCOUNT, -50)
        await conn.execute(_ENTRY_SQL, txn, GRANT_ACCOUNT, 50)
    assert await book.balance_micros(GRANT_ACCOUNT) == 50
    assert (await book.verify()).ok


async def test_raw_sql_cannot_add_entries_to_a_committed_transaction(pool: asyncpg.Pool, book: PostgresLedger) -> None:
    txn = await book.transact(spec=charge(ALICE, 10))

    async def write() -> None:
        async with pool.acquire() as conn, conn.transaction():
            # Balanced in itself, yet it would rewrite history.
            await conn.execute(_ENTRY_SQL, txn.id, ALICE, -5)
            await conn.execute(_ENTRY_SQL, txn.id, REVENUE_ACCOUNT, 5)

    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="database transaction that created"):
        await write()


async def test_raw_sql_cannot_post_to_an_account_that_does_not_exist(pool: asyncpg.Pool) -> None:
    async def write() -> None:
        async with pool.acquire() as conn, conn.transaction():
            txn = await conn.fetchval(_HEADER_SQL, "raw:ghost")
            await conn.execute(_ENTRY_SQL, txn, "user:ghost:IDR", -5)
            await conn.execute(_ENTRY_SQL, txn, REVENUE_ACCOUNT, 5)

    with pytest.raises(asyncpg.ForeignKeyViolationError, match="account"):
        await write()


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE entries SET amount_micros = amount_micros * 2",
        "UPDATE entries SET account_id = 'revenue:IDR' WHERE account_id <> 'revenue:IDR'",
        "DELETE FROM entries",
        "TRUNCATE entries CASCADE",
        "UPDATE transactions SET ref = ref || 'x'",
        "DELETE FROM transactions",
        "UPDATE account_balances SET balance_micros = 0",
        "DELETE FROM account_balances",
        "INSERT INTO account_balances (account_id, stripe, balance_micros) VALUES ('topup:IDR', 0, 1)",
        "UPDATE prices SET output_per_mtok_idr = 1",
        "DELETE FROM prices",
        "DELETE FROM accounts WHERE kind = 'user'",
        "UPDATE accounts SET id = 'user:someone_else:IDR' WHERE kind = 'user'",
    ],
)
async def test_history_cannot_be_rewritten(pool: asyncpg.Pool, book: PostgresLedger, sql: str) -> None:
    await book.transact(spec=charge(ALICE, 10))
    before = await rows(pool)

    with pytest.raises(asyncpg.IntegrityConstraintViolationError):
        await pool.execute(sql)

    assert await rows(pool) == before
    assert await book.balance_micros(ALICE) == -10
    assert (await book.verify()).ok


# ---- verify() on a ledger corrupted behind the triggers' backs ----------------------


async def corrupt(pool: asyncpg.Pool, *statements: str) -> None:
    """Run SQL with every trigger off (superuser only), as a bad restore might."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        for sql in statements:
            await conn.execute(sql)


def raw_entry(txn: int, account: str, amount: int) -> str:
    values = f"({txn}, '{account}', {amount}, now())"
    return f"INSERT INTO entries (transaction_id, account_id, amount_micros, created_at) VALUES {values}"


async def test_verify_passes_a_healthy_ledger(book: PostgresLedger) -> None:
    await book.transact(spec=charge(ALICE, 10))
    await book.transact(spec=charge(BOB, 20))
    report = await book.verify()
    assert report.ok
    assert (report.transactions, report.entries, report.accounts) == (2, 4, 5)


async def test_verify_flags_a_snapshot_that_drifted(book: PostgresLedger, pool: asyncpg.Pool) -> None:
    await book.transact(spec=charge(ALICE, 10))
    await corrupt(pool, f"UPDATE account_balances SET balance_micros = balance_micros + 1 WHERE account_id = '{ALICE}'")

    report = await book.verify()
    assert not report.ok
    assert [(p.kind, p.subject) for p in report.problems] == [("snapshot_mismatch", ALICE)]
    assert "-10" in report.problems[0].detail and "-9" in report.problems[0].detail


async def test_verify_flags_unbalanced_and_empty_transactions(book: PostgresLedger, pool: asyncpg.Pool) -> None:
    await book.transact(spec=charge(ALICE, 10, ref="good"))
    txn = await pool.fetchval("SELECT id FROM transactions WHERE ref = 'good'")
    await corrupt(
        pool,
        "INSERT INTO transactions (type, ref) VALUES ('adjustment', 'empty')",
        raw_entry(txn, ALICE, -1),
    )

    problems = {(p.kind, p.subject) for p in (await book.verify()).problems}
    # The extra entry also makes Alice's snapshot wrong, since its trigger was off too.
    assert problems == {("unbalanced", "good"), ("unbalanced", "empty"), ("snapshot_mismatch", ALICE)}


async def test_verify_flags_orphan_entries(book: PostgresLedger, pool: asyncpg.Pool) -> None:
    await book.transact(spec=charge(ALICE, 10, ref="good"))
    txn = await pool.fetchval("SELECT id FROM transactions WHERE ref = 'good'")
    await corrupt(
        pool,
        "ALTER TABLE entries DROP CONSTRAINT entries_transaction_id_fkey",
        raw_entry(999999, GRANT_ACCOUNT, 7),
        raw_entry(txn, "user:ghost:IDR", 7),
    )

    report = await book.verify()
    orphans = [p for p in report.problems if p.kind == "orphan_entry"]
    assert len(orphans) == 2
    assert "transaction 999999" in orphans[0].detail
    assert "account user:ghost:IDR" in orphans[1].detail


async def test_verify_flags_a_wallet_further_below_zero_than_one_call_can_take(book: PostgresLedger) -> None:
    """The guard stops a turn before a call its wallet cannot pay for (docs/money.md#the-guard),
    so no wallet is ever further below zero than the dearest possible call."""
    dearest = 4 * 1_048_576 * 10_000 + 4 * 65_536 * 42_000  # the migrations' rates, four hops of a full window
    await book.transact(spec=charge(ALICE, dearest))
    assert (await book.verify()).ok
    await book.transact(spec=charge(BOB, dearest + 1))

    report = await book.verify()
    assert [(p.kind, p.subject) for p in report.problems] == [("overdrawn", BOB)]
    assert str(dearest) in report.problems[0].detail
