"""The wallet's business operations, written in terms of the Ledger port.

- `charge_model_call`: bill one model call right after it returns, so a run that fails
  halfway is charged for exactly what it burned. Its ref `run:<run_id>:call:<n>` makes a
  retry, or a replay after a crash, charge once.
- `charge_extraction`: bill the model call that read a batch of a person's messages for
  their knowledge graph; its ref `learn:<person_id>:<first message id>` makes every retry
  of that batch, or a replay after a crash, charge once (docs/money.md#learning).
- `grant_signup`: a new person's starting credit, once per person ever.
- `top_up`: money in from an operator (CLI or admin API), idempotent by the caller's ref.
- `guard`: the wallet is post-paid; a run may take it below zero, and then no new run
  starts until it is topped up.

Each posts the person's wallet against one system account, so revenue, grants and top-ups
stay separately visible.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from ledger.accounts import GRANT_ACCOUNT, REVENUE_ACCOUNT, TOPUP_ACCOUNT, user_account
from ledger.errors import AmountInvalid, InsufficientBalance, RefConflict, RefInvalid
from ledger.ledger import Ledger
from ledger.model import Posting, Transaction, TransactionSpec
from ledger.postings import check_amount
from ledger.prices import Prices, TokenUsage, cost_micros

TOPUP_REF_CHARS_MAX = 100
_TOPUP_REF = re.compile(rf"[!-~]{{1,{TOPUP_REF_CHARS_MAX}}}")


def usage_postings(person_id: str, cost_micros: int) -> tuple[Posting, Posting]:
    """A usage charge moves money from the person's wallet to revenue."""
    return Posting(user_account(person_id), -cost_micros), Posting(REVENUE_ACCOUNT, cost_micros)


async def _model_call_spec(
    prices: Prices,
    *,
    person_id: str,
    ref: str,
    receipt: dict[str, object],
    model: str,
    tokens: TokenUsage,
    at: datetime,
) -> TransactionSpec:
    """A model call's charge at the price in force `at`: the receipt's own fields, then
    the tokens, the price row and the cost, as every model call's receipt reads."""
    price = await prices.price_for(model, at)
    cost = cost_micros(price=price, tokens=tokens)
    metadata = {**receipt, "tokens": tokens.as_receipt(), "price": price.as_receipt(), "cost_micros": cost}
    return TransactionSpec(
        type="agent_call", ref=ref, postings=usage_postings(person_id, cost), metadata=metadata, at=at
    )


async def charge_model_call(
    ledger: Ledger,
    prices: Prices,
    *,
    person_id: str,
    run_id: str,
    call_index: int,
    agent: str,
    trigger: str,
    model: str,
    tokens: TokenUsage,
    at: datetime,
) -> Transaction | None:
    """Charge one model call to the person; None (nothing written) when it used nothing.

    `at` is when the call returned: it picks the price version and the usage day, so a
    charge replayed later is the same charge.
    """
    assert call_index >= 0, "model calls are numbered from 0 or 1 within a run"
    if tokens.is_zero:
        return None
    spec = await _model_call_spec(
        prices,
        person_id=person_id,
        ref=f"run:{run_id}:call:{call_index}",
        receipt={"agent": agent, "run_id": run_id, "trigger": trigger, "model": model, "call_index": call_index},
        model=model,
        tokens=tokens,
        at=at,
    )
    return await ledger.transact(spec=spec)


async def charge_extraction(
    ledger: Ledger,
    prices: Prices,
    *,
    person_id: str,
    first_message_id: str,
    messages: int,
    model: str,
    tokens: TokenUsage,
    at: datetime,
) -> Transaction | None:
    """Charge the model call that read a batch of messages for the knowledge graph; None
    (nothing written) when it used nothing.

    A batch is named by its first message, so reading it again (a retry after a failure,
    or after a crash before the worker's cursor moved) is charged once: a second reading
    may use other token counts, and then the first charge stands (returned as replayed).
    """
    if tokens.is_zero:
        return None
    spec = await _model_call_spec(
        prices,
        person_id=person_id,
        ref=f"learn:{person_id}:{first_message_id}",
        receipt={
            "agent": "knowledge",
            "trigger": "learning",
            "model": model,
            "first_message_id": first_message_id,
            "messages": messages,
        },
        model=model,
        tokens=tokens,
        at=at,
    )
    try:
        return await ledger.transact(spec=spec)
    except RefConflict as exc:
        return replace(exc.existing, replayed=True)


async def call_cost(prices: Prices, *, model: str, tokens: TokenUsage, at: datetime) -> int:
    """What `charge_model_call` would charge for this call at `at`, written nowhere: a
    turn counts the charges it has queued but not yet written (chat.turns, at a handoff)."""
    if tokens.is_zero:
        return 0
    return cost_micros(price=await prices.price_for(model, at), tokens=tokens)


def _positive(amount_micros: object) -> int:
    amount = check_amount(amount_micros)
    if amount < 0:
        raise AmountInvalid("the amount must be positive")
    return amount


async def grant_signup(ledger: Ledger, *, person_id: str, amount_micros: int) -> Transaction:
    """Give a person their signup credit. Once per person: a second call, even with a
    different amount (the setting changed), returns the first grant."""
    amount = _positive(amount_micros)
    spec = TransactionSpec(
        type="signup_grant",
        ref=f"grant:signup:{person_id}",
        postings=(Posting(GRANT_ACCOUNT, -amount), Posting(user_account(person_id), amount)),
        metadata={"reason": "signup"},
    )
    try:
        return await ledger.transact(spec=spec)
    except RefConflict as exc:
        return replace(exc.existing, replayed=True)


async def top_up(
    ledger: Ledger, *, person_id: str, amount_micros: int, ref: str, source: str = "operator"
) -> Transaction:
    """Add money to a person's wallet. `ref` is the caller's idempotency key (a payment
    id, an operator's ticket): the same ref and amount again tops up once; the same ref
    with another amount is a RefConflict."""
    amount = _positive(amount_micros)
    if not isinstance(ref, str) or not _TOPUP_REF.fullmatch(ref):
        raise RefInvalid(f"a top-up ref is 1 to {TOPUP_REF_CHARS_MAX} printable ASCII characters without spaces")
    spec = TransactionSpec(
        type="topup",
        ref=f"topup:{ref}",
        postings=(Posting(TOPUP_ACCOUNT, -amount), Posting(user_account(person_id), amount)),
        metadata={"source": source, "ref": ref},
    )
    return await ledger.transact(spec=spec)


async def guard(ledger: Ledger, *, person_id: str) -> int:
    """Refuse to start a run (InsufficientBalance) when the wallet is at or below zero;
    otherwise return the balance read."""
    balance = await ledger.balance_micros(user_account(person_id))
    if balance <= 0:
        raise InsufficientBalance("The wallet is empty; top it up to continue.", balance_micros=balance)
    return balance
