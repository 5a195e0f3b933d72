"""The speculative first call on the whole server (chat.speculation): real PostgreSQL, the
product's Gemini adapter against the simulated Gemini on 127.0.0.1, turns posted as the
call door posts them. A guess dropped for other words is recorded and charged as the
next run's first call, an adopted one is the run's only call, guesses dropped on a call
that ends with no turn after them are charged at its end with a run of their own, and the
wallet, the receipts and the ledger agree to the micro-rupiah."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from zoneinfo import ZoneInfo

import pytest

from agents import Model
from bench.cloudsim.gemini import Answer, SimulatedGemini, scripted_responder
from chat import Person
from tests.conftest import App
from tests.fakes.simulated_gemini import gemini_on
from tests.unit.test_speculative_first_call import clear_of_a_new_minute
from voice.calls import Call, CallForesight

JAKARTA = ZoneInfo("Asia/Jakarta")
STORY = "Here is a long story about the moon. " * 30


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedGemini]:
    async with SimulatedGemini(scripted_responder([])) as simulated:
        yield simulated


@pytest.fixture
async def model(sim: SimulatedGemini) -> AsyncIterator[Model]:
    async with gemini_on(sim, timeout_s=10.0) as gemini:
        yield gemini


async def _signed_in(app: App) -> Person:
    """A new person signed in through the API (POST /v1/auth/local), read back as turns take them."""
    headers = await app.sign_in()
    me = await app.services.people.get(await app.services.local_tokens.verify(headers["Authorization"].split()[1]))
    assert me is not None
    return me


async def test_a_dropped_guess_and_an_adopted_one_are_each_charged_once(app: App, sim: SimulatedGemini) -> None:
    sim.responder = scripted_responder(
        [
            Answer(text=STORY, prompt_tokens=300, first_token_s=0.2),  # the guess the words overtake
            Answer(text="Why did the moon skip dinner? It was full. #playful#", prompt_tokens=320),
            Answer(text="It is noon. #neutral#", prompt_tokens=200, first_token_s=0.2),  # adopted
        ]
    )
    services = app.services
    me = await _signed_in(app)
    granted = await services.wallet.balance_micros(me.id)

    assert await services.turns.foresee(me, text="tell me a story", channel="voice", zone=JAKARTA)
    await asyncio.sleep(0.05)
    joke = await services.turns.post(me, text="tell me a joke", channel="voice", zone=JAKARTA, on_say=lambda s: None)
    await clear_of_a_new_minute()
    assert await services.turns.foresee(me, text="What time is it?", channel="voice", zone=JAKARTA)
    said: list[str] = []
    noon = await services.turns.post(
        me, text="what time is it", channel="voice", zone=JAKARTA, on_say=lambda s: said.append(s.text)
    )

    assert len(sim.served) == 3
    assert said == ["It is noon."]
    thread = await services.threads.page(me.id, before=None, after=None, limit=10)
    assert [(m.author, m.text) for m in thread] == [
        ("human", "tell me a joke"),
        ("ava", "Why did the moon skip dinner? It was full."),
        ("human", "What time is it?"),
        ("ava", "It is noon."),
    ]
    [dropped_in] = joke.runs
    [adopted] = noon.runs
    assert dropped_in.model_calls == 2 and dropped_in.usage["prompt_tokens"] == 300 + 320
    assert adopted.model_calls == 1 and adopted.usage["prompt_tokens"] == 200
    # Receipts: the dropped guess is call 1 of the run it was billed with, the run's own call 2.
    rows = await services.pool.fetch(
        "SELECT run_id, idx, usage, cost_micros FROM run_calls WHERE person_id = $1 ORDER BY run_id, idx", me.id
    )
    by_run = {(r["run_id"], r["idx"]): r for r in rows}
    assert set(by_run) == {(dropped_in.id, 1), (dropped_in.id, 2), (adopted.id, 1)}
    assert by_run[(dropped_in.id, 1)]["usage"]["prompt_tokens"] == 300
    assert 0 < by_run[(dropped_in.id, 1)]["usage"]["output_tokens"] <= sim.served[0].output_tokens
    assert all(r["cost_micros"] is not None and r["cost_micros"] > 0 for r in rows)
    # The wallet lost exactly what the receipts say, and the books balance.
    spent = sum(r["cost_micros"] for r in rows)
    assert spent == dropped_in.cost_micros + adopted.cost_micros
    assert await services.wallet.balance_micros(me.id) == granted - spent
    assert await services.runs.uncharged_calls() == []
    assert (await services.ledger.verify()).ok


async def test_guesses_dropped_on_a_call_are_billed_when_it_ends_with_a_run_of_their_own(
    app: App, sim: SimulatedGemini
) -> None:
    sim.responder = scripted_responder(
        [
            Answer(text="It is noon. #neutral#", prompt_tokens=200),  # the call's one turn
            Answer(text=STORY, prompt_tokens=300, first_token_s=0.2),  # a guess the person went on after
            Answer(text=STORY, prompt_tokens=310, first_token_s=0.2),  # a guess the call ended on
            Answer(text="Hello again. #happy#", prompt_tokens=250),  # the person's next turn
        ]
    )
    services = app.services
    me = await _signed_in(app)
    granted = await services.wallet.balance_micros(me.id)
    call = Call(id="call-1", person=me, channel="voice")
    foresight = CallForesight(services.turns, call, zone=JAKARTA)

    noon = await services.turns.post(me, text="what time is it", channel="voice", zone=JAKARTA, on_say=lambda s: None)
    assert await services.turns.foresee(me, text="tell me a story", channel="voice", zone=JAKARTA)
    await asyncio.sleep(0.05)
    foresight.resumed()  # the person went on speaking
    assert await services.turns.foresee(me, text="tell me a story about the sea", channel="voice", zone=JAKARTA)
    await asyncio.sleep(0.05)
    await foresight.close()  # they hung up before the turn ended
    assert foresight.billing is not None and await foresight.billing == 2  # billed beside the call's end

    runs = await services.pool.fetch(
        "SELECT id, agent, status, model_calls, cost_micros, trigger_message_id FROM runs WHERE person_id = $1 "
        "ORDER BY started_at",
        me.id,
    )
    first, billed = runs  # the call's one turn, then the run billing its dropped guesses
    assert first["id"] == noon.runs[0].id
    assert billed["agent"] == "ava" and billed["status"] == "succeeded" and billed["model_calls"] == 2
    thread = await services.threads.page(me.id, before=None, after=None, limit=10)
    assert [(m.author, m.text) for m in thread] == [("human", "what time is it"), ("ava", "It is noon.")]
    assert billed["trigger_message_id"] == thread[-1].id
    rows = await services.pool.fetch(
        "SELECT idx, usage, cost_micros FROM run_calls WHERE run_id = $1 ORDER BY idx", billed["id"]
    )
    assert [(r["idx"], r["usage"]["prompt_tokens"]) for r in rows] == [(1, 300), (2, 310)]
    assert all(r["cost_micros"] is not None and r["cost_micros"] > 0 for r in rows)
    assert billed["cost_micros"] == sum(r["cost_micros"] for r in rows)
    # Once: the call's end again, and the person's next turn, bill nothing more for them.
    assert await services.turns.bill_dropped(me, channel="voice") == 0
    hello = await services.turns.post(me, text="hello", channel="voice", zone=JAKARTA, on_say=lambda s: None)
    assert hello.runs[0].model_calls == 1 and hello.runs[0].usage["prompt_tokens"] == 250
    # The wallet lost exactly what the receipts say, and the books balance.
    spent = await services.pool.fetchval("SELECT sum(cost_micros) FROM run_calls WHERE person_id = $1", me.id)
    assert spent == noon.runs[0].cost_micros + billed["cost_micros"] + hello.runs[0].cost_micros
    assert await services.wallet.balance_micros(me.id) == granted - spent
    assert await services.runs.uncharged_calls() == []
    assert (await services.ledger.verify()).ok


async def test_the_billing_run_never_answers_a_message_the_call_left_unanswered(app: App, sim: SimulatedGemini) -> None:
    """A call can end between a person's message being written and its run starting: the
    run billing the call's dropped guesses must not count as that message's answer, or the
    recovery sweep would never answer it (docs/money.md#a-speculative-first-call)."""
    sim.responder = scripted_responder(
        [
            Answer(text="It is noon. #neutral#", prompt_tokens=200),
            Answer(text=STORY, prompt_tokens=300, first_token_s=0.2),  # the guess the call ended on
        ]
    )
    services = app.services
    me = await _signed_in(app)
    foresight = CallForesight(services.turns, Call(id="call-2", person=me, channel="voice"), zone=JAKARTA)

    await services.turns.post(me, text="what time is it", channel="voice", zone=JAKARTA, on_say=lambda s: None)
    assert await services.turns.foresee(me, text="tell me a story", channel="voice", zone=JAKARTA)
    await asyncio.sleep(0.05)
    foresight.resumed()
    cut_off = await services.threads.append(me.id, author="human", text="tell me a story", channel="voice")
    await foresight.close()
    assert foresight.billing is not None and await foresight.billing == 1

    thread = await services.threads.page(me.id, before=None, after=None, limit=10)
    noon_answer = next(m for m in thread if m.author == "ava")
    billed = await services.pool.fetchrow(
        "SELECT trigger_message_id, origin_message_id, model_calls FROM runs WHERE person_id = $1 "
        "ORDER BY started_at DESC LIMIT 1",
        me.id,
    )
    assert billed is not None and billed["model_calls"] == 1
    assert billed["trigger_message_id"] == billed["origin_message_id"] == noon_answer.id
    assert not await services.pool.fetchval("SELECT EXISTS (SELECT FROM runs WHERE origin_message_id = $1)", cut_off.id)
    assert (await services.ledger.verify()).ok


async def test_a_call_ends_at_once_while_its_slow_dropped_guess_is_billed_after_it_once(
    app: App, sim: SimulatedGemini
) -> None:
    """A dropped guess reports its usage only when its stream next sends: here its first
    token is 3 s away. The call's end hands the billing on and returns at once (a person
    calling straight back waits at most CallLimits.handover_s for it); the guess is still
    charged once, when it reports."""
    slow_s = 3.0
    sim.responder = scripted_responder(
        [
            Answer(text="It is noon. #neutral#", prompt_tokens=200),  # the call's one turn
            Answer(text=STORY, prompt_tokens=300, first_token_s=slow_s),  # the guess the call ended on
            Answer(text="Hello again. #happy#", prompt_tokens=250),  # the person's next turn
        ]
    )
    services = app.services
    me = await _signed_in(app)
    granted = await services.wallet.balance_micros(me.id)
    foresight = CallForesight(services.turns, Call(id="call-3", person=me, channel="voice"), zone=JAKARTA)

    noon = await services.turns.post(me, text="what time is it", channel="voice", zone=JAKARTA, on_say=lambda s: None)
    assert await services.turns.foresee(me, text="tell me a story", channel="voice", zone=JAKARTA)
    await asyncio.sleep(0.05)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await foresight.close()  # they hung up while the guess was still waiting for its first token
    ended_s = loop.time() - began
    assert ended_s < 0.5, f"the call's end waited {ended_s:.2f} s for the guess's billing"
    assert foresight.billing is not None and not foresight.billing.done(), "billed after the call's end"
    await foresight.close()  # a second close starts no second billing
    assert await asyncio.wait_for(foresight.billing, slow_s + 10) == 1

    rows = await services.pool.fetch(
        "SELECT c.run_id, c.idx, c.usage, c.cost_micros FROM run_calls c WHERE c.person_id = $1 ORDER BY c.at",
        me.id,
    )
    guessed = [r for r in rows if r["run_id"] != noon.runs[0].id]
    assert [(r["idx"], r["usage"]["prompt_tokens"]) for r in guessed] == [(1, 300)]
    assert 0 < guessed[0]["usage"]["output_tokens"] <= sim.served[1].output_tokens
    # Once: the person's next turn bills nothing more for it.
    hello = await services.turns.post(me, text="hello", channel="voice", zone=JAKARTA, on_say=lambda s: None)
    assert hello.runs[0].model_calls == 1 and hello.runs[0].usage["prompt_tokens"] == 250
    spent = await services.pool.fetchval("SELECT sum(cost_micros) FROM run_calls WHERE person_id = $1", me.id)
    assert spent == noon.runs[0].cost_micros + guessed[0]["cost_micros"] + hello.runs[0].cost_micros
    assert await services.wallet.balance_micros(me.id) == granted - spent
    assert await services.runs.uncharged_calls() == []
    assert (await services.ledger.verify()).ok


async def test_a_long_calls_guess_is_adopted_on_postgresql(app: App, sim: SimulatedGemini) -> None:
    """A thread longer than the page a turn reads, with the page kept in this process
    between turns (chat.recent): the guess reads the rows its turn will, and is adopted."""
    sim.responder = scripted_responder(
        [Answer(text="Hello. #neutral#", prompt_tokens=100), Answer(text="It is noon. #neutral#", prompt_tokens=200)]
    )
    services = app.services
    headers = await app.sign_in()
    me = await services.people.get(await services.local_tokens.verify(headers["Authorization"].split()[1]))
    assert me is not None
    for n in range(200):  # earlier turns of a long call
        await services.threads.append(me.id, author="human", text=f"line {n}", channel="voice")
    await services.turns.post(me, text="hello", channel="voice", zone=JAKARTA, on_say=lambda s: None)  # keeps a page
    await clear_of_a_new_minute()
    assert await services.turns.foresee(me, text="What time is it?", channel="voice", zone=JAKARTA)
    await asyncio.sleep(0.05)  # the call is out while the turn-end wait runs
    said: list[str] = []
    noon = await services.turns.post(
        me, text="what time is it", channel="voice", zone=JAKARTA, on_say=lambda s: said.append(s.text)
    )
    assert len(sim.served) == 2, "the first turn's call, and the guess the second adopted"
    assert said == ["It is noon."]
    [adopted] = noon.runs
    assert adopted.model_calls == 1 and adopted.usage["prompt_tokens"] == 200
    assert (await services.ledger.verify()).ok
