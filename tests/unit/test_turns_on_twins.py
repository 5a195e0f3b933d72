"""`Turns` without HTTP or PostgreSQL: the turn on the in-memory twins of its ports
(thread, runs, people, ledger, events) and the scripted model, asserting on the state
the twins keep — the thread, the runs, the ledger and the events."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import pytest

from agents import (
    FunctionCall,
    ModelResponse,
    ModelUnavailable,
    RunContext,
    RunLimits,
    ScriptedModel,
    Tool,
    Toolbox,
    Usage,
    handoff_tools,
)
from chat import Person, Turns, Wallet
from chat.bookkeeping import Apart
from chat.memory import MemoryEvents, MemoryPeople, MemoryRuns, MemoryThreads
from ledger import InsufficientBalance, Transaction, TransactionSpec, top_up, user_account
from ledger.memory import MemoryLedger, MemoryPrices

JAKARTA = ZoneInfo("Asia/Jakarta")
GRANT = 5_000_000_000


@dataclass
class World:
    people: MemoryPeople
    threads: MemoryThreads
    runs: MemoryRuns
    ledger: MemoryLedger
    events: MemoryEvents
    wallet: Wallet
    turns: Turns
    model: ScriptedModel

    async def person(self, name: str = "Budi") -> Person:
        """A new person with the wallet's signup grant (none when the grant is 0)."""
        person, _ = await self.people.sign_in_local(name)
        await self.wallet.grant_signup(person.id)
        return person

    async def thread(self, person: Person) -> list[tuple[str, str]]:
        return [(m.author, m.text) for m in await self.threads.page(person.id, before=None, after=None, limit=100)]


def toolbox() -> Toolbox:
    """Ava's handoffs only: the turn's own logic, with no specialist tools to stand in for."""
    box = Toolbox()

    def handoffs(context: RunContext) -> list[Tool]:
        assert context.delegate is not None
        return handoff_tools(context.delegate)

    box.register("ava", handoffs)
    return box


def world(limits: RunLimits | None = None, grant: int = GRANT, apart: Apart | None = None) -> World:
    events = MemoryEvents()
    runs = MemoryRuns(events)
    ledger = MemoryLedger()
    wallet = Wallet(ledger=ledger, prices=MemoryPrices.flat(), runs=runs, events=events, signup_grant_micros=grant)
    threads = MemoryThreads(events)
    model = ScriptedModel()
    turns = Turns(
        threads=threads,
        runs=runs,
        wallet=wallet,
        model=model,
        model_name=lambda _agent: "scripted-1",
        toolbox=toolbox(),
        history_tokens_max=12_000,
        thread_wait_s=5,
        limits=limits,
        apart=apart,
    )
    people = MemoryPeople(default_time_zone="UTC")
    return World(people, threads, runs, ledger, events, wallet, turns, model)


def handoff(name: str = "zee", tag: str | None = None) -> ModelResponse:
    return ModelResponse("", (FunctionCall(f"c-{name}", name, {"tag": tag or f"@{name}"}),))


async def test_a_message_without_a_mention_goes_to_ava_and_her_reply_is_kept_and_charged() -> None:
    w = world()
    me = await w.person()
    w.model.extend([ModelResponse("Hello Budi!")])
    result = await w.turns.post(me, text="hi there", channel="text", zone=JAKARTA)
    assert [(m.author, m.text) for m in result.messages] == [("human", "hi there"), ("ava", "Hello Budi!")]
    assert [(r.agent, r.trigger, r.status, r.model_calls) for r in result.runs] == [("ava", "human", "succeeded", 1)]
    assert await w.thread(me) == [("human", "hi there"), ("ava", "Hello Budi!")]
    run = await w.runs.get(me.id, result.runs[0].id)
    assert run is not None and run.cost_micros > 0
    assert await w.ledger.balance_micros(user_account(me.id)) == GRANT - run.cost_micros
    assert (await w.ledger.verify()).ok
    assert await w.runs.uncharged_calls() == []
    events = w.events.of(me.id)
    # The signup grant's announcement, then the turn. The call's charge is written beside
    # the turn (chat.bookkeeping), so its announcement may come before or after the reply,
    # but always inside the run, which ends last.
    assert events[0] == "wallet.changed"
    assert [e for e in events[1:] if e != "wallet.changed"] == ["message", "run.started", "message", "run.finished"]
    assert events.count("wallet.changed") == 2
    charged = max(i for i, e in enumerate(events) if e == "wallet.changed")
    assert events.index("run.started") < charged < events.index("run.finished")


async def test_a_single_mention_goes_straight_to_that_specialist() -> None:
    w = world()
    me = await w.person()
    w.model.extend([ModelResponse("Playing it.")])
    result = await w.turns.post(me, text="@yori play something calm", channel="text", zone=JAKARTA)
    assert [(r.agent, r.trigger) for r in result.runs] == [("yori", "human")]
    assert "[ROLE: SPECIALIST]" in w.model.requests[0].system
    assert await w.thread(me) == [("human", "@yori play something calm"), ("yori", "Playing it.")]


async def test_a_handoff_writes_the_bare_tag_and_the_specialist_runs_under_ava() -> None:
    w = world()
    me = await w.person()
    w.model.extend([handoff("zee", tag="@yori do it"), ModelResponse("Done."), ModelResponse("")])
    result = await w.turns.post(me, text="lights please", channel="text", zone=JAKARTA)
    assert await w.thread(me) == [("human", "lights please"), ("ava", "@zee"), ("zee", "Done.")]
    ava, zee = result.runs
    assert (ava.agent, zee.agent, zee.trigger, zee.parent_run_id) == ("ava", "zee", "ava", ava.id)
    assert (ava.status, zee.status, ava.tool_calls) == ("succeeded", "succeeded", 1)
    assert w.model.requests[2].contents[-1].results[0].response == {"response": "Done."}


async def test_a_silent_reply_succeeds_and_writes_nothing() -> None:
    w = world()
    me = await w.person()
    w.model.extend([ModelResponse(" \u200b\n")])
    result = await w.turns.post(me, text="hmm", channel="text", zone=JAKARTA)
    assert [m.author for m in result.messages] == ["human"]
    assert result.runs[0].status == "succeeded"
    assert await w.thread(me) == [("human", "hmm")]


async def test_a_failed_run_keeps_the_persons_message_and_says_why() -> None:
    w = world()
    me = await w.person()
    w.model.extend([ModelUnavailable("timed out")])
    result = await w.turns.post(me, text="are you there?", channel="text", zone=JAKARTA)
    assert await w.thread(me) == [("human", "are you there?")]
    run = result.runs[0]
    assert (run.status, run.error_code) == ("failed", "model_unavailable")
    assert run.finished_at is not None


async def test_a_run_over_its_model_call_limit_fails_clearly() -> None:
    w = world(limits=RunLimits(model_calls_max=3))
    me = await w.person()
    w.model.extend([handoff(), ModelResponse("Done.")] + [handoff(), ModelResponse("Again.")] * 2)
    result = await w.turns.post(me, text="again and again", channel="text", zone=JAKARTA)
    ava = result.runs[0]
    assert (ava.status, ava.error_code, ava.model_calls) == ("failed", "run_limit_exceeded", 3)
    assert [r.agent for r in result.runs].count("zee") == 3
    assert ("human", "again and again") in await w.thread(me)


async def test_a_retry_with_the_same_client_id_returns_the_first_turn_and_writes_nothing() -> None:
    w = world()
    me = await w.person()
    w.model.extend([ModelResponse("Once.")])
    first = await w.turns.post(me, text="hello", channel="text", zone=JAKARTA, client_id="c-1")
    again = await w.turns.post(me, text="hello", channel="text", zone=JAKARTA, client_id="c-1")
    assert [m.id for m in again.messages] == [m.id for m in first.messages]
    assert len(w.model.requests) == 1
    assert await w.thread(me) == [("human", "hello"), ("ava", "Once.")]


async def test_an_empty_wallet_is_refused_before_anything_is_written() -> None:
    w = world(grant=0)
    me = await w.person()
    with pytest.raises(InsufficientBalance):
        await w.turns.post(me, text="hello", channel="text", zone=JAKARTA)
    assert await w.thread(me) == []
    assert w.model.requests == []
    await top_up(w.ledger, person_id=me.id, amount_micros=1_000_000, ref="t-1")
    w.model.extend([ModelResponse("Thanks!")])
    result = await w.turns.post(me, text="hello", channel="text", zone=JAKARTA)
    assert result.runs[0].status == "succeeded"


async def test_a_call_hears_the_reply_before_the_turn_has_written_it_and_the_turn_still_keeps_it() -> None:
    w = world()
    me = await w.person()
    w.model.extend([handoff(), ModelResponse("Done, the light is on."), ModelResponse("All set! #happy#")])
    heard: list[tuple[object, list[str]]] = []

    def on_reply(reply: object) -> None:
        heard.append((reply, list(w.events.of(me.id))))

    result = await w.turns.post(me, text="turn on the light", channel="voice", zone=JAKARTA, on_reply=on_reply)
    assert len(heard) == 1, "told once"
    reply, events_then = heard[0]
    assert reply == result.spoken and result.spoken is not None
    assert [s.text for s in result.spoken.segments] == ["All set!"]
    # Told before Ava's reply was written or her run ended (Zee's end may be written already).
    assert events_then.count("message") == 3
    assert events_then.count("run.finished") <= 1
    assert [(r.agent, r.status) for r in result.runs] == [("ava", "succeeded"), ("zee", "succeeded")]
    assert await w.thread(me) == [
        ("human", "turn on the light"),
        ("ava", "@zee"),
        ("zee", "Done, the light is on."),
        ("ava", "All set!"),
    ]
    assert all(r.cost_micros > 0 for r in result.runs), "every run's row carries its charges"
    assert await w.runs.uncharged_calls() == []


async def test_a_text_turn_is_never_told_early() -> None:
    w = world()
    me = await w.person()
    w.model.extend([ModelResponse("Hello!")])
    heard: list[object] = []
    await w.turns.post(me, text="hi", channel="text", zone=JAKARTA, on_reply=heard.append)
    assert heard == []


async def test_a_charge_that_cannot_be_written_fails_its_run_at_the_end_and_the_turn_still_ends() -> None:
    w = world()
    me = await w.person()

    async def broken(*, spec: TransactionSpec) -> Transaction:
        raise RuntimeError(f"the ledger is gone ({spec.ref})")

    w.ledger.transact = broken  # type: ignore[method-assign]
    w.model.extend([ModelResponse("Hello!")])
    result = await w.turns.post(me, text="hi", channel="text", zone=JAKARTA)
    assert [(r.agent, r.status, r.error_code) for r in result.runs] == [("ava", "failed", "internal_error")]
    assert await w.thread(me) == [("human", "hi"), ("ava", "Hello!")], "the reply was given; it is kept"
    assert len(await w.runs.uncharged_calls()) == 1, "left for the sweep that settles uncharged calls"


async def test_a_charge_the_turns_books_never_start_is_charged_by_the_sweep_with_its_receipt() -> None:
    @contextlib.asynccontextmanager
    async def unreachable() -> AsyncIterator[None]:
        raise OSError("connection refused")
        yield

    w = world(apart=unreachable)
    me = await w.person()
    w.model.extend([ModelResponse("Hello!")])
    with pytest.raises(OSError, match="refused"):
        await w.turns.post(me, text="hi", channel="text", zone=JAKARTA)
    assert len(w.wallet.outbox.to_retry()) == 1, "the running server's sweep retries it, not only the next start"
    assert await w.wallet.settle_outbox() == 1
    assert w.wallet.outbox.pending == 0
    assert await w.ledger.balance_micros(user_account(me.id)) == GRANT - CALL_MICROS
    assert await w.runs.uncharged_calls() == []


async def test_a_call_whose_run_is_not_there_is_never_charged_and_leaves_the_outbox() -> None:
    w = world()
    me = await w.person()
    call = w.wallet.called(
        person_id=me.id,
        run_id="run_lost",
        index=1,
        agent="ava",
        trigger="human",
        model="scripted-1",
        usage={"prompt_tokens": 100, "output_tokens": 10},
    )
    assert await w.wallet.charge(call) == 0
    assert await w.ledger.balance_micros(user_account(me.id)) == GRANT, "no run, no receipt, no charge"
    assert w.wallet.outbox.pending == 0 and await w.wallet.settle_outbox() == 0


# What one scripted call costs at the flat price: 100 prompt tokens at Rp 10,000 and 10
# output tokens at Rp 42,000 per million.
CALL_MICROS = 1_420_000


class Gate:
    """Where a turn's bookkeeping runs (`apart`): nothing is written until it opens."""

    def __init__(self) -> None:
        self.open = asyncio.Event()

    @contextlib.asynccontextmanager
    async def apart(self) -> AsyncIterator[None]:
        await self.open.wait()
        yield


async def test_a_handoff_on_a_wallet_that_holds_enough_does_not_wait_for_the_turns_charges() -> None:
    gate = Gate()
    w = world(apart=gate.apart)
    me = await w.person()
    w.model.extend([handoff(), ModelResponse("Done, the light is on."), ModelResponse("All set! #happy#")])
    heard = asyncio.Event()
    turn = asyncio.create_task(
        w.turns.post(me, text="turn on the light", channel="voice", zone=JAKARTA, on_reply=lambda _: heard.set())
    )
    await asyncio.wait_for(heard.wait(), 5)
    assert await w.wallet.balance_micros(me.id) == GRANT, "no charge written yet"
    assert [a for a, _ in await w.thread(me)][:3] == ["human", "ava", "zee"], "Zee ran all the same"
    assert not turn.done(), "the turn still waits for its books"
    gate.open.set()
    result = await asyncio.wait_for(turn, 5)
    assert [(r.agent, r.status) for r in result.runs] == [("ava", "succeeded"), ("zee", "succeeded")]
    assert await w.wallet.balance_micros(me.id) == GRANT - 3 * CALL_MICROS


async def test_a_handoff_the_turns_own_unwritten_charges_would_empty_the_wallet_for_is_refused() -> None:
    """The balance read at the handoff does not hold Ava's first charge yet; counted in,
    nothing is left, so the turn waits for its books, reads again and refuses."""
    gate = Gate()
    w = world(grant=CALL_MICROS, apart=gate.apart)
    me = await w.person()
    w.model.extend([handoff(), ModelResponse("Done, the light is on.")])
    turn = asyncio.create_task(w.turns.post(me, text="turn on the light", channel="text", zone=JAKARTA))
    await asyncio.sleep(0.05)
    assert await w.wallet.balance_micros(me.id) == CALL_MICROS and not turn.done()
    gate.open.set()
    result = await asyncio.wait_for(turn, 5)
    assert [(r.agent, r.status, r.error_code) for r in result.runs] == [("ava", "failed", "insufficient_balance")]
    assert [a for a, _ in await w.thread(me)] == ["human", "ava"], "Zee never ran; Ava said why"
    assert await w.wallet.balance_micros(me.id) == 0


async def test_a_run_stops_before_a_model_call_its_wallet_cannot_pay_for() -> None:
    """docs/money.md#the-guard: the turn's first call had money behind it; the next is not
    made once that call's cost has used up the balance the turn began with."""
    w = world(grant=1_000)
    me = await w.person()
    costly = Usage(prompt_tokens=1_000, output_tokens=10)  # 10,420,000 µRp, far above 1,000
    w.model.extend(
        [
            ModelResponse("", (FunctionCall("c-1", "look_around", {}),), costly),
            ModelResponse("never asked for"),
        ]
    )
    result = await w.turns.post(me, text="hi there", channel="text", zone=JAKARTA)

    assert [(r.agent, r.status, r.error_code, r.model_calls) for r in result.runs] == [
        ("ava", "failed", "insufficient_balance", 1)
    ]
    assert "wallet" in result.messages[-1].text.lower() and result.messages[-1].author == "ava"
    cost = 1_000 * 10_000 + 10 * 42_000
    assert await w.ledger.balance_micros(user_account(me.id)) == 1_000 - cost
    with pytest.raises(InsufficientBalance):
        await w.turns.post(me, text="and now?", channel="text", zone=JAKARTA)
