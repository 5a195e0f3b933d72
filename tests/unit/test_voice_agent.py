"""Ava's voice processor with Pipecat's own `run_test`: what reaches the TTS, how the
goodbye ends the call, and what a barge-in does to a reply in flight."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars

from pipecat.frames.frames import (
    AggregatedTextFrame,
    EndWorkerFrame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    OutputTransportMessageFrame,
    TextFrame,
)
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.tests.utils import SleepFrame, run_test

from agents import Segment, SpokenReply, parse_spoken
from voice.agent import AvaVoiceAgent, live_speech


def said(text: str) -> LLMContextFrame:
    return LLMContextFrame(context=LLMContext([{"role": "user", "content": text}]))


def fixed(reply: str, heard: list[str] | None = None, delay_s: float = 0.0):  # type: ignore[no-untyped-def]
    async def turn(text: str) -> SpokenReply:
        if heard is not None:
            heard.append(text)
        await asyncio.sleep(delay_s)
        return parse_spoken(reply)

    return turn


async def test_the_reply_is_spoken_sentence_by_sentence_with_emotions_and_no_tags() -> None:
    heard: list[str] = []
    agent = AvaVoiceAgent(fixed("Done, the light is on. #relieved# Sleep well! #affectionate#", heard))
    down, _ = await run_test(agent, frames_to_send=[said("turn on the bedroom light"), SleepFrame(0.2)])
    assert heard == ["turn on the bedroom light"]
    spoken = [f for f in down if isinstance(f, AggregatedTextFrame)]
    assert [(f.text, f.text_type) for f in spoken] == [
        ("Done, the light is on.", "emotion:relieved"),
        ("Sleep well!", "emotion:affectionate"),
    ]
    assert not any("#" in f.text for f in down if isinstance(f, TextFrame))
    captions = [f.message for f in down if isinstance(f, OutputTransportMessageFrame)]
    assert captions[0] == {
        "type": "transcript",
        "role": "assistant",
        "text": "Done, the light is on.",
        "emotion": "relieved",
    }
    kinds = [type(f) for f in down if isinstance(f, LLMFullResponseStartFrame | LLMFullResponseEndFrame)]
    assert kinds == [LLMFullResponseStartFrame, LLMFullResponseEndFrame]
    assert not any(isinstance(f, EndWorkerFrame) for f in down)


async def test_a_goodbye_is_uninterruptible_and_ends_the_worker_after_it() -> None:
    ended: list[bool] = []
    agent = AvaVoiceAgent(fixed("Bye, talk soon! #affectionate# #end#"), on_end_call=lambda: ended.append(True))
    down, up = await run_test(agent, frames_to_send=[said("okay bye"), SleepFrame(0.2)])
    spoken_at = next(i for i, f in enumerate(down) if isinstance(f, AggregatedTextFrame))
    end_at = next(i for i, f in enumerate(down) if isinstance(f, EndWorkerFrame))
    assert spoken_at < end_at
    ours = (AggregatedTextFrame, OutputTransportMessageFrame, LLMFullResponseStartFrame, LLMFullResponseEndFrame)
    goodbye = [f for f in down if isinstance(f, ours)]
    assert goodbye and all(not f.interruptible for f in goodbye)
    assert [f.text for f in down if isinstance(f, AggregatedTextFrame)] == ["Bye, talk soon!"]
    assert ended == [True]
    del up


async def test_a_barge_in_drops_stale_speech_but_lets_the_turn_finish() -> None:
    finished: list[str] = []

    async def slow_turn(text: str) -> SpokenReply:
        await asyncio.sleep(0.3)
        finished.append(text)
        return parse_spoken("Here is a long answer. #neutral#")

    agent = AvaVoiceAgent(slow_turn)
    down, _ = await run_test(
        agent, frames_to_send=[said("tell me a story"), SleepFrame(0.1), InterruptionFrame(), SleepFrame(0.5)]
    )
    assert finished == ["tell me a story"], "the turn (and its thread writes) ran to the end"
    assert not any(isinstance(f, AggregatedTextFrame) for f in down), "its speech was stale and dropped"
    assert any(isinstance(f, InterruptionFrame) for f in down)


async def test_a_turn_that_could_not_run_says_nothing() -> None:
    async def refused(text: str) -> None:
        return None

    down, _ = await run_test(AvaVoiceAgent(refused), frames_to_send=[said("hello"), SleepFrame(0.1)])
    assert not any(isinstance(f, AggregatedTextFrame) for f in down)


async def test_sentences_said_during_the_turn_are_spoken_at_once_and_a_barge_in_stops_the_generation() -> None:
    stopped: list[bool] = []

    async def streaming_turn(text: str) -> SpokenReply:
        live = live_speech()
        assert live is not None, "the agent lets its turn speak as it goes"
        live.say(Segment("On it.", "neutral"))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.stop.wait(), timeout=2.0)  # the generation goes on until stopped
        stopped.append(live.stop.is_set())
        live.say(Segment("This comes after the person spoke.", None))
        return SpokenReply((), end_call=False)

    agent = AvaVoiceAgent(streaming_turn)
    down, _ = await run_test(
        agent, frames_to_send=[said("turn on the light"), SleepFrame(0.2), InterruptionFrame(), SleepFrame(0.2)]
    )
    assert stopped == [True], "the barge-in stopped the generation behind the speech"
    spoken = [f for f in down if isinstance(f, AggregatedTextFrame)]
    assert [(f.text, f.text_type) for f in spoken] == [("On it.", "emotion:neutral")]
    kinds = [type(f) for f in down if isinstance(f, LLMFullResponseStartFrame | LLMFullResponseEndFrame)]
    assert kinds == [LLMFullResponseStartFrame, LLMFullResponseEndFrame]


async def test_a_copy_of_the_turns_context_keeps_nothing_of_the_call_once_the_turn_is_over() -> None:
    # asyncpg's statement cache keeps such a copy for five minutes (a timer scheduled in the
    # turn's context); a LiveSpeech in it kept the whole call alive that long after the hang-up.
    copies: list[contextvars.Context] = []

    async def turn(text: str) -> SpokenReply:
        assert live_speech() is not None
        copies.append(contextvars.copy_context())
        return parse_spoken("Done. #neutral#")

    down, _ = await run_test(AvaVoiceAgent(turn), frames_to_send=[said("turn on the light"), SleepFrame(0.2)])
    assert [f.text for f in down if isinstance(f, AggregatedTextFrame)] == ["Done."]
    assert len(copies) == 1
    assert copies[0].run(live_speech) is None, "the turn's speech (and through it the call) is let go"


async def test_a_sentence_being_pushed_when_the_person_speaks_goes_before_the_interruption_or_not_at_all() -> None:
    """Pushing a frame can yield (an observer, an event handler): a sentence checked as
    current, then pushed after the barge-in's interruption had gone by, reached the voice
    after it and was spoken over the person (seen on the Google voice path)."""

    async def streaming_turn(text: str) -> SpokenReply:
        live = live_speech()
        assert live is not None
        live.say(Segment("First.", "neutral"))
        await asyncio.sleep(0.1)
        live.say(Segment("Second.", "neutral"))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.stop.wait(), timeout=2.0)
        return SpokenReply((), end_call=False)

    agent = AvaVoiceAgent(streaming_turn)

    async def slow_push(_processor: object, frame: object) -> None:
        if isinstance(frame, OutputTransportMessageFrame) and frame.message.get("text") == "Second.":
            await asyncio.sleep(0.3)  # the person starts speaking while this is on its way

    agent.add_event_handler("on_before_push_frame", slow_push)

    down, _ = await run_test(
        agent, frames_to_send=[said("tell me"), SleepFrame(0.2), InterruptionFrame(), SleepFrame(0.5)]
    )
    order = [f for f in down if isinstance(f, AggregatedTextFrame | InterruptionFrame)]
    interrupted_at = next(i for i, f in enumerate(order) if isinstance(f, InterruptionFrame))
    assert not [f for f in order[interrupted_at:] if isinstance(f, AggregatedTextFrame)], order


async def test_a_barge_in_during_a_wake_note_stops_it_where_it_is() -> None:
    """A wake note (or the idle prompt) is said unprompted through `speak`, and went out
    without the interruption lock: its sentence being handed over when the person spoke
    reached the voice after the interruption, and the sentences after it were said over
    the person, each billed as the voice received it."""
    agent = AvaVoiceAgent(fixed("Unused. #neutral#"))
    note = SpokenReply(
        (
            Segment("Time to stretch.", "neutral"),
            Segment("You asked me to remind you.", "neutral"),
            Segment("Bye.", None),
        ),
        end_call=False,
    )

    async def slow_push(_processor: object, frame: object) -> None:
        if isinstance(frame, OutputTransportMessageFrame) and frame.message.get("text") == note.segments[1].text:
            await asyncio.sleep(0.3)  # the person starts speaking while this is on its way

    agent.add_event_handler("on_before_push_frame", slow_push)
    speaking: list[asyncio.Task[None]] = []
    asyncio.get_running_loop().call_later(0.1, lambda: speaking.append(asyncio.create_task(agent.speak(note))))

    down, _ = await run_test(agent, frames_to_send=[SleepFrame(0.2), InterruptionFrame(), SleepFrame(0.5)])
    await speaking[0]
    order = [f for f in down if isinstance(f, AggregatedTextFrame | InterruptionFrame)]
    interrupted_at = next(i for i, f in enumerate(order) if isinstance(f, InterruptionFrame))
    # The sentence on its way went out whole before the interruption (the voice drops it
    # there, and bills what it received of it, once); nothing of the note came after.
    assert [f.text for f in order[:interrupted_at] if isinstance(f, AggregatedTextFrame)] == [
        "Time to stretch.",
        "You asked me to remind you.",
    ]
    assert not [f for f in order[interrupted_at:] if isinstance(f, AggregatedTextFrame)], order
    kinds = [type(f) for f in down if isinstance(f, LLMFullResponseStartFrame | LLMFullResponseEndFrame)]
    assert kinds == [LLMFullResponseStartFrame, LLMFullResponseEndFrame]
