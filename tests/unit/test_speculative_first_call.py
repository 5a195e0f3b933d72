"""A call's first model call begun on the person's words before their turn ended (issue 28,
chat.speculation), on the in-memory twins with the product's Gemini adapter talking to the
simulated Gemini: adopted when the turn ends on the same words (one call, charged once),
dropped and billed when they change or the person goes on, cut by a barge-in once adopted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from agents import Segment, Usage
from bench.cloudsim.gemini import Answer, SimulatedGemini, scripted_responder
from chat.turns import _HISTORY_ROWS_MAX
from ledger import user_account
from telemetry import metrics
from tests.unit.test_turns_on_twins import GRANT, JAKARTA, World
from tests.unit.test_voice_streaming_turns import gemini_world

STORY = "Here is a long story about the moon. " * 30


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedGemini]:
    async with SimulatedGemini(scripted_responder([])) as simulated:
        yield simulated


async def clear_of_a_new_minute() -> None:
    """Wait out the last second of a minute: a history line carries its message's minute,
    so words heard at :59.9 and written at :00.0 are a request of their own (dropped, by
    design), which would make a test of adoption fail once in a while."""
    second = datetime.now(UTC).second + datetime.now(UTC).microsecond / 1e6
    if second > 58.5:
        await asyncio.sleep(60.2 - second)


async def wallet_exact(w: World, person_id: str, runs_cost_micros: int) -> None:
    """The wallet lost exactly what the runs were charged, every call is charged, and the
    books balance."""
    assert await w.ledger.balance_micros(user_account(person_id)) == GRANT - runs_cost_micros
    assert await w.runs.uncharged_calls() == []
    assert w.wallet.outbox.pending == 0
    assert (await w.ledger.verify()).ok


async def test_the_turn_adopts_the_call_begun_on_the_same_words(sim: SimulatedGemini) -> None:
    sim.responder = scripted_responder([Answer(text="It is noon. #neutral# Anything else?", prompt_tokens=300)])
    w, model = await gemini_world(sim)
    try:
        await clear_of_a_new_minute()
        me = await w.person()
        assert await w.turns.foresee(me, text="What time is it?", channel="voice", zone=JAKARTA)
        await asyncio.sleep(0.05)  # the call is out while the turn-end wait runs
        assert await w.thread(me) == [], "nothing is written before the turn ends"
        said: list[str] = []
        result = await w.turns.post(
            me, text="what time is it", channel="voice", zone=JAKARTA, on_say=lambda s: said.append(s.text)
        )
    finally:
        await model.aclose()
    assert len(sim.served) == 1, "one model call: the one begun on the words"
    assert said == ["It is noon.", "Anything else?"]
    # The thread keeps the words as the model read them (the same words, its punctuation).
    assert await w.thread(me) == [("human", "What time is it?"), ("ava", "It is noon. Anything else?")]
    [run] = result.runs
    assert run.status == "succeeded" and run.model_calls == 1 and run.usage["prompt_tokens"] == 300
    assert run.cost_micros == await w.wallet.cost_of_call(model=run.model or "", usage=run.usage)
    await wallet_exact(w, me.id, run.cost_micros)


async def test_changed_words_drop_the_call_which_is_billed_and_the_turn_calls_anew(sim: SimulatedGemini) -> None:
    sim.responder = scripted_responder(
        [Answer(text=STORY, prompt_tokens=300, first_token_s=0.2), Answer(text="Sure. #neutral#", prompt_tokens=320)]
    )
    w, model = await gemini_world(sim)
    try:
        me = await w.person()
        assert await w.turns.foresee(me, text="tell me a story", channel="voice", zone=JAKARTA)
        await asyncio.sleep(0.05)  # out, not yet answered: it is billed once it reports
        said: list[str] = []
        result = await w.turns.post(
            me,
            text="tell me a joke instead",
            channel="voice",
            zone=JAKARTA,
            on_say=lambda s: said.append(s.text),
        )
    finally:
        await model.aclose()
    assert len(sim.served) == 2
    assert said == ["Sure."], "nothing the dropped call wrote is said"
    assert await w.thread(me) == [("human", "tell me a joke instead"), ("ava", "Sure.")]
    [run] = result.runs
    # Both calls are the run's: the dropped one first, billed for its prompt and what it sent.
    assert run.status == "succeeded" and run.model_calls == 2
    assert run.usage["prompt_tokens"] == 300 + 320
    dropped_output = run.usage["output_tokens"] - sim.served[1].output_tokens
    assert 0 < dropped_output <= sim.served[0].output_tokens
    dropped = Usage(prompt_tokens=300, output_tokens=dropped_output).as_dict()
    answered = Usage(prompt_tokens=320, output_tokens=sim.served[1].output_tokens).as_dict()
    costs = [await w.wallet.cost_of_call(model=run.model or "", usage=u) for u in (dropped, answered)]
    assert run.cost_micros == sum(costs)
    await wallet_exact(w, me.id, run.cost_micros)


async def test_a_person_who_goes_on_speaking_drops_the_first_guess_and_the_turn_adopts_the_second(
    sim: SimulatedGemini,
) -> None:
    sim.responder = scripted_responder(
        [
            Answer(text=STORY, prompt_tokens=200, first_token_s=0.0),
            Answer(text="The moon is far. #neutral#", prompt_tokens=250, first_token_s=0.2),
        ]
    )
    w, model = await gemini_world(sim)
    try:
        await clear_of_a_new_minute()
        me = await w.person()
        assert await w.turns.foresee(me, text="tell me about", channel="voice", zone=JAKARTA)
        await asyncio.sleep(0.1)
        w.turns.unforeseen(me.id)  # they went on speaking
        await asyncio.sleep(0.05)
        assert await w.turns.foresee(me, text="tell me about the moon", channel="voice", zone=JAKARTA)
        assert not await w.turns.foresee(me, text="Tell me about the moon.", channel="voice", zone=JAKARTA)
        said: list[str] = []
        result = await w.turns.post(
            me, text="Tell me about the moon.", channel="voice", zone=JAKARTA, on_say=lambda s: said.append(s.text)
        )
    finally:
        await model.aclose()
    assert len(sim.served) == 2, "the guess, and the call the turn adopted; none made anew"
    assert said == ["The moon is far."]
    assert await w.thread(me) == [("human", "tell me about the moon"), ("ava", "The moon is far.")]
    [run] = result.runs
    assert run.model_calls == 2 and run.usage["prompt_tokens"] == 200 + 250
    await wallet_exact(w, me.id, run.cost_micros)


async def test_a_barge_in_cuts_an_adopted_call_and_bills_it_once(sim: SimulatedGemini) -> None:
    sim.responder = scripted_responder([Answer(text=STORY, prompt_tokens=300, first_token_s=0.15)])
    w, model = await gemini_world(sim)
    try:
        await clear_of_a_new_minute()
        me = await w.person()
        assert await w.turns.foresee(me, text="tell me a story", channel="voice", zone=JAKARTA)
        stop = asyncio.Event()
        said: list[str] = []

        def say(segment: Segment) -> None:
            said.append(segment.text)
            stop.set()  # the person speaks over the first sentence

        result = await w.turns.post(me, text="tell me a story", channel="voice", zone=JAKARTA, on_say=say, stop=stop)
    finally:
        await model.aclose()
    assert len(sim.served) == 1
    assert said == ["Here is a long story about the moon."]
    assert await w.thread(me) == [("human", "tell me a story"), ("ava", "Here is a long story about the moon.")]
    [run] = result.runs
    assert run.model_calls == 1 and run.usage["prompt_tokens"] == 300
    assert 0 < run.usage["output_tokens"] < (len(STORY) + 3) // 4
    await wallet_exact(w, me.id, run.cost_micros)


async def test_a_message_from_another_door_meanwhile_makes_the_turn_call_anew(sim: SimulatedGemini) -> None:
    sim.responder = scripted_responder(
        [
            Answer(text="Noted. #neutral#", prompt_tokens=100, first_token_s=0.0),
            Answer(text="Noted. #neutral#", prompt_tokens=110),
            Answer(text="It is noon. #neutral#", prompt_tokens=120),
        ]
    )
    w, model = await gemini_world(sim)
    try:
        me = await w.person()
        assert await w.turns.foresee(me, text="what time is it", channel="voice", zone=JAKARTA)
        # The thread changes under the guess: its request is no longer the turn's.
        await w.turns.post(me, text="remember I like tea", channel="text", zone=JAKARTA)
        result = await w.turns.post(me, text="what time is it", channel="voice", zone=JAKARTA, on_say=lambda s: None)
    finally:
        await model.aclose()
    assert len(sim.served) == 3
    [run] = result.runs
    assert run.model_calls == 1, "the dropped guess was billed with the text turn that came first"
    tea = (await w.threads.page(me.id, before=None, after=None, limit=9))[0]
    [first_run] = await w.runs.of_origin(me.id, tea.id)
    assert first_run.model_calls == 2 and first_run.usage["prompt_tokens"] == 100 + 110
    await wallet_exact(w, me.id, run.cost_micros + first_run.cost_micros)


async def test_no_guess_on_an_empty_wallet_nor_by_text(sim: SimulatedGemini) -> None:
    w, model = await gemini_world(sim)
    try:
        nobody, _ = await w.people.sign_in_local("Nobody")  # never granted anything
        assert not await w.turns.foresee(nobody, text="what time is it", channel="voice", zone=JAKARTA)
        me = await w.person()
        assert not await w.turns.foresee(me, text="hello", channel="text", zone=JAKARTA), "text never guesses"
    finally:
        await model.aclose()
    assert sim.served == []


async def test_a_guess_left_when_the_call_ended_is_billed_with_the_next_turn(sim: SimulatedGemini) -> None:
    sim.responder = scripted_responder(
        [Answer(text="Sure. #neutral#", prompt_tokens=150), Answer(text="Hi Budi!", prompt_tokens=90)]
    )
    w, model = await gemini_world(sim)
    try:
        me = await w.person()
        assert await w.turns.foresee(me, text="turn it up", channel="voice", zone=JAKARTA)
        await asyncio.sleep(0.05)
        w.turns.unforeseen(me.id)  # the call ended before the turn did
        assert await w.thread(me) == []
        result = await w.turns.post(me, text="hi", channel="text", zone=JAKARTA)  # later, by text
    finally:
        await model.aclose()
    [run] = result.runs
    assert run.model_calls == 2 and run.usage["prompt_tokens"] == 150 + 90
    assert await w.thread(me) == [("human", "hi"), ("ava", "Hi Budi!")]
    await wallet_exact(w, me.id, run.cost_micros)


async def test_dropped_guesses_waiting_for_too_many_people_stop_new_guesses(
    sim: SimulatedGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dropped calls wait for their person's next turn; people who never come back must not
    grow that list for ever, so past the cap no one new is guessed for."""
    monkeypatch.setattr("chat.turns.DROPPED_PEOPLE_MAX", 1)
    sim.responder = scripted_responder([Answer(text="Sure. #neutral#", prompt_tokens=150)])
    w, model = await gemini_world(sim)
    try:
        budi = await w.person("Budi")
        assert await w.turns.foresee(budi, text="turn it up", channel="voice", zone=JAKARTA)
        await asyncio.sleep(0.05)
        w.turns.unforeseen(budi.id)  # Budi's call ended; his dropped call waits for him
        sari = await w.person("Sari")
        assert not await w.turns.foresee(sari, text="what time is it", channel="voice", zone=JAKARTA)
    finally:
        await model.aclose()


async def test_a_call_end_that_cannot_start_its_billing_run_leaves_the_guess_for_the_next_turn(
    sim: SimulatedGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database away at the call's end: nothing is billed then, and the dropped guess is
    not lost either; the person's next turn bills it, once (docs/money.md#a-speculative-
    first-call)."""
    sim.responder = scripted_responder(
        [
            Answer(text="It is noon. #neutral#", prompt_tokens=200),
            Answer(text="Sure. #neutral#", prompt_tokens=150),  # the guess the call ended on
            Answer(text="Hi Budi!", prompt_tokens=90),
        ]
    )
    w, model = await gemini_world(sim)
    try:
        me = await w.person()
        await w.turns.post(me, text="what time is it", channel="voice", zone=JAKARTA, on_say=lambda s: None)
        assert await w.turns.foresee(me, text="turn it up", channel="voice", zone=JAKARTA)
        await asyncio.sleep(0.05)

        async def away(*_args: object, **_kwargs: object) -> None:
            raise ConnectionError("the database is away")

        with monkeypatch.context() as patched:
            patched.setattr(w.runs, "start", away)
            with pytest.raises(ConnectionError):
                await w.turns.bill_dropped(me, channel="voice")
        result = await w.turns.post(me, text="hi", channel="voice", zone=JAKARTA, on_say=lambda s: None)
    finally:
        await model.aclose()
    [run] = result.runs
    assert run.model_calls == 2 and run.usage["prompt_tokens"] == 150 + 90
    assert await w.turns.bill_dropped(me, channel="voice") == 0
    assert (await w.ledger.verify()).ok


async def test_a_thread_past_the_rows_a_turn_reads_still_adopts_the_guess(sim: SimulatedGemini) -> None:
    """A long call's thread holds more messages than a turn reads (`_HISTORY_ROWS_MAX`): the
    turn reads the newest rows with its own message among them, so a guess that read as many
    rows before the words and added them after saw one old line more, differed, and was
    dropped and billed beside a call made anew (BENCHMARKS.md#speculation-adopted-along-a-long-run)."""
    sim.responder = scripted_responder([Answer(text="It is noon. #neutral#", prompt_tokens=300)])
    w, model = await gemini_world(sim)
    try:
        await clear_of_a_new_minute()
        me = await w.person()
        for n in range(_HISTORY_ROWS_MAX):  # earlier turns, as a long call leaves them
            await w.threads.append(me.id, author="human", text=f"line {n}", channel="voice")
        assert await w.turns.foresee(me, text="What time is it?", channel="voice", zone=JAKARTA)
        await asyncio.sleep(0.05)  # the call is out while the turn-end wait runs
        adopted = metrics.speculations.value(outcome="adopted")
        said: list[str] = []
        result = await w.turns.post(
            me, text="what time is it", channel="voice", zone=JAKARTA, on_say=lambda s: said.append(s.text)
        )
    finally:
        await model.aclose()
    assert metrics.speculations.value(outcome="adopted") == adopted + 1
    assert len(sim.served) == 1, "one model call: the guess, adopted"
    assert said == ["It is noon."]
    [served] = sim.served
    assert served.request is not None
    # What the model read is what the text door's turn reads: the newest rows, the words last.
    lines = [c.text for c in served.request.contents]
    assert len(lines) == _HISTORY_ROWS_MAX
    assert lines[0].endswith("] line 1") and lines[-1].endswith("] What time is it?")
    [run] = result.runs
    assert run.model_calls == 1 and run.usage["prompt_tokens"] == 300
    await wallet_exact(w, me.id, run.cost_micros)
