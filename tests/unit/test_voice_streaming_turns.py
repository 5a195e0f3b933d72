"""A call's turn spoken as it goes (issue 28), on the in-memory twins: sentences said as
the model writes them, Ava's acknowledgement with her handoff (never claiming a result
before the tool ran), a specialist's answer said as it is with no relay call and the same
thread as the text door, and barge-in or a broken stream billed once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agents import FunctionCall, ModelResponse, Segment, SpokenReply
from agents.gemini import GeminiModel
from bench.cloudsim.gemini import Answer, SimulatedGemini, scripted_responder
from bench.cloudsim.latency import LogNormal, ModelLatency
from chat import Turns
from chat.speaking import Speaking, claims_result
from tests.unit.test_turns_on_twins import JAKARTA, World, toolbox, world


def direct(name: str = "zee") -> FunctionCall:
    return FunctionCall(f"c-{name}", name, {"tag": f"@{name}", "answer_directly": True})


def test_sentences_are_said_when_finished_and_a_result_waits_for_its_tool() -> None:
    said: list[Segment] = []
    speaking = Speaking(said.append)
    for piece in ("Sure", ", one mo", "ment. #neu", "tral#", " Done, it's on now. ", "Anything else?"):
        speaking.text(piece)
    assert [s.text for s in said] == ["Sure, one moment."]  # the tag ended it; the claim is held
    speaking.answer_ended(calls=True)  # a tool runs next: the claim (and what followed) is dropped
    assert [s.text for s in said] == ["Sure, one moment."] and said[0].emotion == "neutral"
    speaking.text("The bedroom light is on now. #relieved# Anything else?")
    speaking.answer_ended(calls=False)  # after the tool ran, a result may be said
    assert [s.text for s in said][1:] == ["The bedroom light is on now.", "Anything else?"]


def test_what_claims_a_result() -> None:
    assert claims_result("Done, the light is on now.") and claims_result("Udah aku nyalain ya.")
    assert not claims_result("On it.") and not claims_result("Sure, I'll ask Zee to turn it on.")


async def voice_turn(w: World, text: str) -> tuple[list[str], SpokenReply | None, list[tuple[str, str]]]:
    me = await w.person()
    said: list[str] = []
    replies: list[SpokenReply] = []
    await w.turns.post(
        me, text=text, channel="voice", zone=JAKARTA, on_reply=replies.append, on_say=lambda s: said.append(s.text)
    )
    return said, (replies[0] if replies else None), await w.thread(me)


async def test_the_acknowledgement_is_said_and_the_specialist_answers_without_a_relay_call() -> None:
    w = world()
    w.model.extend([ModelResponse("On it. #neutral#", (direct(),)), ModelResponse("The bedroom light is on.")])
    said, reply, thread = await voice_turn(w, "turn on the bedroom light")
    assert said == ["On it.", "The bedroom light is on."]
    assert reply is not None and reply.segments == ()  # all of it was said as it came
    assert len(w.model.requests) == 2  # Ava, Zee: no third call to repeat Zee's words

    # The same request by text: Ava hands on, Zee answers, Ava stays silent after it.
    text = world()
    text.model.extend([ModelResponse("", (direct(),)), ModelResponse("The bedroom light is on."), ModelResponse("")])
    me = await text.person()
    await text.turns.post(me, text="turn on the bedroom light", channel="text", zone=JAKARTA)
    assert (
        thread
        == await text.thread(me)
        == [
            ("human", "turn on the bedroom light"),
            ("ava", "@zee"),
            ("zee", "The bedroom light is on."),
        ]
    )


async def test_an_acknowledgement_that_claims_the_result_is_never_said_before_the_tool() -> None:
    w = world()
    w.model.extend([ModelResponse("Done, the light is on now! #relieved#", (direct(),)), ModelResponse("It's on.")])
    said, _, _ = await voice_turn(w, "turn on the bedroom light")
    assert said == ["It's on."]


async def test_without_live_speech_ava_relays_as_before() -> None:
    w = world()
    w.model.extend(
        [ModelResponse("", (direct(),)), ModelResponse("It's on."), ModelResponse("Zee says it's on. #relieved#")]
    )
    me = await w.person()
    result = await w.turns.post(me, text="turn on the light", channel="voice", zone=JAKARTA)
    assert len(w.model.requests) == 3
    assert result.spoken is not None and [s.text for s in result.spoken.segments] == ["Zee says it's on."]


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedGemini]:
    async with SimulatedGemini(scripted_responder([])) as simulated:
        yield simulated


async def gemini_world(sim: SimulatedGemini) -> tuple[World, GeminiModel]:
    w = world()
    model = GeminiModel(api_key="sim-key", base_url=sim.base_url, timeout_s=10.0, retries_max=0)
    w.turns = Turns(
        threads=w.threads,
        runs=w.runs,
        wallet=w.wallet,
        model=model,
        model_name=lambda _agent: "gemini-3.5-flash",
        toolbox=toolbox(),
        history_tokens_max=12_000,
        thread_wait_s=5,
    )
    return w, model


async def test_barge_in_stops_the_generation_and_bills_it_once(sim: SimulatedGemini) -> None:
    long = "Here is a long story about the moon. " * 20
    # Events 200 ms apart, so the stop reaches the vendor before its next event (below).
    sim.latency = ModelLatency(first_token=LogNormal(p50_s=0.01, p95_s=0.02), tokens_per_s=40.0)
    sim.responder = scripted_responder([Answer(text=long, prompt_tokens=300)])
    w, model = await gemini_world(sim)
    try:
        me = await w.person()
        stop = asyncio.Event()
        said: list[str] = []

        def say(segment: Segment) -> None:
            said.append(segment.text)
            stop.set()  # the person speaks over the first sentence

        result = await w.turns.post(me, text="tell me a story", channel="voice", zone=JAKARTA, on_say=say, stop=stop)
    finally:
        await model.aclose()
    assert said == ["Here is a long story about the moon."]
    # The thread keeps what the person heard before speaking over it, nothing after.
    assert await w.thread(me) == [("human", "tell me a story"), ("ava", "Here is a long story about the moon.")]
    [run] = result.runs
    assert run.status == "succeeded" and run.model_calls == 1
    charged = run.usage
    assert charged["prompt_tokens"] == 300 and 0 < charged["output_tokens"] < (len(long) + 3) // 4
    assert run.cost_micros > 0
    assert await w.runs.uncharged_calls() == []
    assert (await w.ledger.verify()).ok
    # What the vendor bills for the stream it was told to stop (docs/money.md#a-stream-cut-short):
    # the usage on the last event it sent, charged once.
    [served] = sim.served
    async with asyncio.timeout(5):
        while not served.dropped:
            await asyncio.sleep(0.01)
    assert (charged["prompt_tokens"], charged["output_tokens"]) == (served.prompt_tokens, served.output_tokens)
    calls = [e for e in await w.wallet.entries(me.id, before_id=None, limit=50) if e.type == "agent_call"]
    assert [e.amount_micros for e in calls] == [-run.cost_micros]


async def test_a_stream_broken_part_way_is_billed_once_for_what_it_sent(sim: SimulatedGemini) -> None:
    sim.responder = scripted_responder([Answer(text="One sentence here. " * 10, prompt_tokens=200, fail_after=40)])
    w, model = await gemini_world(sim)
    try:
        me = await w.person()
        said: list[str] = []
        result = await w.turns.post(
            me, text="tell me", channel="voice", zone=JAKARTA, on_say=lambda s: said.append(s.text)
        )
    finally:
        await model.aclose()
    [run] = result.runs
    assert run.status == "failed" and run.error_code == "model_unavailable"
    assert run.model_calls == 1 and run.usage["prompt_tokens"] == 200
    assert run.usage["output_tokens"] == sim.served[0].output_tokens > 0
    assert (await w.ledger.verify()).ok


async def test_a_primed_tool_runs_before_the_first_model_call_of_a_speaking_run() -> None:
    from agents import RunContext, Tool, Toolbox, ToolSpec, handoff_tools

    listed: list[str] = []

    async def list_devices(_args: dict[str, object]) -> dict[str, object]:
        listed.append("listed")
        return {"devices": [{"id": "sbx-light-bedroom"}]}

    box = Toolbox()

    def handoffs(context: RunContext) -> list[Tool]:
        assert context.delegate is not None
        return handoff_tools(context.delegate)

    box.register("ava", handoffs)
    box.register(
        "zee", lambda _c: [Tool(ToolSpec("list_devices", "List.", {"type": "object"}), list_devices, primed=True)]
    )
    w = world()
    w.turns = Turns(
        threads=w.threads,
        runs=w.runs,
        wallet=w.wallet,
        model=w.model,
        model_name=lambda _agent: "scripted-1",
        toolbox=box,
        history_tokens_max=12_000,
        thread_wait_s=5,
    )
    w.model.extend([ModelResponse("On it. #neutral#", (direct(),)), ModelResponse("It's on.")])
    said, _, _ = await voice_turn(w, "turn on the bedroom light")
    assert said == ["On it.", "It's on."] and listed == ["listed"]
    zee_first = w.model.requests[1].contents
    # Zee's first call already holds the device list, as if it had asked for it.
    assert zee_first[-2].calls[0].name == "list_devices" and zee_first[-1].results[0].response["devices"]


def test_a_result_written_beside_a_command_is_said_only_once_the_command_succeeded() -> None:
    said: list[Segment] = []
    speaking = Speaking(said.append)
    speaking.text("Done: the bedroom light is on. ")
    speaking.answer_ended(calls=True)
    assert said == []  # the command has not run yet
    assert speaking.tools_ran(succeeded=True) is True
    assert [s.text for s in said] == ["Done: the bedroom light is on."]

    failed = Speaking(said.append)
    failed.text("Done: the bedroom light is on.")
    failed.answer_ended(calls=True)
    assert failed.tools_ran(succeeded=False) is False  # dropped: the model answers from the error
    failed.text("I couldn't reach the light.")
    failed.answer_ended(calls=False)
    assert [s.text for s in said][1:] == ["I couldn't reach the light."]
    assert Speaking(said.append).tools_ran(succeeded=True) is False  # nothing claimed: the model goes on


def zee_world(outcome: dict[str, object]) -> World:
    """Ava's handoffs and a Zee whose `send_commands` answers `outcome`."""
    from agents import RunContext, Tool, Toolbox, ToolSpec, handoff_tools

    async def send_commands(_args: dict[str, object]) -> dict[str, object]:
        return outcome

    box = Toolbox()

    def handoffs(context: RunContext) -> list[Tool]:
        assert context.delegate is not None
        return handoff_tools(context.delegate)

    box.register("ava", handoffs)
    box.register("zee", lambda _c: [Tool(ToolSpec("send_commands", "Send.", {"type": "object"}), send_commands)])
    w = world()
    w.turns = Turns(
        threads=w.threads,
        runs=w.runs,
        wallet=w.wallet,
        model=w.model,
        model_name=lambda _agent: "scripted-1",
        toolbox=box,
        history_tokens_max=12_000,
        thread_wait_s=5,
    )
    return w


SEND = FunctionCall("c-send", "send_commands", {"device_id": "sbx-light-bedroom", "commands": []})


async def test_a_confirmation_written_with_the_command_ends_the_speaking_run_once_it_succeeded() -> None:
    w = zee_world({"account": "sandbox", "ok": True})
    w.model.extend([ModelResponse("On it. #neutral#", (direct(),)), ModelResponse("The bedroom light is on.", (SEND,))])
    said, reply, thread = await voice_turn(w, "turn on the bedroom light")
    assert said == ["On it.", "The bedroom light is on."]
    assert reply is not None and reply.segments == ()
    assert len(w.model.requests) == 2  # Ava's handoff and Zee's command: no call to write the result again
    assert "[SAID ON A CALL]" in w.model.requests[1].system  # Zee knows its answer is said aloud

    # The same request by text: Zee's command, then its answer, then Ava silent. Same thread.
    text = zee_world({"account": "sandbox", "ok": True})
    text.model.extend(
        [
            ModelResponse("", (direct(),)),
            ModelResponse("", (SEND,)),
            ModelResponse("The bedroom light is on."),
            ModelResponse(""),
        ]
    )
    me = await text.person()
    await text.turns.post(me, text="turn on the bedroom light", channel="text", zone=JAKARTA)
    assert "[SAID ON A CALL]" not in text.model.requests[1].system
    assert (
        thread
        == await text.thread(me)
        == [("human", "turn on the bedroom light"), ("ava", "@zee"), ("zee", "The bedroom light is on.")]
    )


@pytest.mark.parametrize(
    "outcome",
    [{"error": "The device is offline."}, {"status": "awaiting_confirmation", "action_id": "a-1"}],
)
async def test_a_confirmation_written_ahead_is_dropped_when_the_command_did_not_succeed(
    outcome: dict[str, object],
) -> None:
    w = zee_world(outcome)
    w.model.extend(
        [
            ModelResponse("On it. #neutral#", (direct(),)),
            ModelResponse("The bedroom light is on.", (SEND,)),
            ModelResponse("The light didn't answer."),
        ]
    )
    said, _, thread = await voice_turn(w, "turn on the bedroom light")
    assert said == ["On it.", "The light didn't answer."]  # the claim was never said
    assert len(w.model.requests) == 3
    assert thread[-1] == ("zee", "The light didn't answer.")


async def test_a_confirmation_written_ahead_is_not_said_once_the_person_spoke_over_the_run() -> None:
    w = zee_world({"account": "sandbox", "ok": True})
    w.model.extend(
        [
            ModelResponse("On it. #neutral#", (direct(),)),
            ModelResponse("The bedroom light is on.", (SEND,)),
            ModelResponse(""),  # Zee, asked again after its command: its answer is cut at once
            ModelResponse(""),  # Ava, after a silent Zee
        ]
    )
    me = await w.person()
    stop = asyncio.Event()
    said: list[str] = []

    def say(segment: Segment) -> None:
        said.append(segment.text)
        stop.set()  # the person speaks over the acknowledgement

    await w.turns.post(me, text="turn on the bedroom light", channel="voice", zone=JAKARTA, on_say=say, stop=stop)
    assert said == ["On it."]  # the held confirmation was never said over the person
    assert await w.thread(me) == [("human", "turn on the bedroom light"), ("ava", "@zee")]
    assert len(w.model.requests) == 4 and not w.model.replies


@pytest.mark.parametrize(("outcome", "heard"), [({"ok": True}, True), ({"error": "No player is open."}, False)])
async def test_a_specialists_sentence_beside_its_command_waits_for_it_even_in_words_no_list_catches(
    outcome: dict[str, object], heard: bool
) -> None:
    w = zee_world(outcome)
    w.model.extend(
        [
            ModelResponse("On it. #neutral#", (direct(),)),
            ModelResponse("Turning the bedroom light on for you.", (SEND,)),  # claims_result misses it
            ModelResponse("Sorry, that didn't work."),
        ]
    )
    said, _, _ = await voice_turn(w, "turn on the bedroom light")
    if heard:  # said once the command succeeded, and the run ended there
        assert said == ["On it.", "Turning the bedroom light on for you."] and len(w.model.requests) == 2
    else:  # never said: the command failed
        assert said == ["On it.", "Sorry, that didn't work."]
