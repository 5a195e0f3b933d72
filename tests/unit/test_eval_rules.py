"""Every eval rule can fail: for each one, a turn that does the right thing passes and a
turn with a wrong reply (or wrong runs) fails, with a sentence saying why. A rule that
passes whatever the reply would make the whole eval say nothing (docs/eval.md)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from agents import ToolSpec
from scenarios import RULES, Observation

_NONE: dict[str, Any] = {"type": "object", "properties": {}}


def _spec(name: str, description: str = "") -> ToolSpec:
    return ToolSpec(name, description or name.replace("_", " "), _NONE)


# A small registry shaped like the product's: what each agent can do.
TEAM: dict[str, tuple[ToolSpec, ...]] = {
    "ava": (_spec("zee"), _spec("yori"), _spec("rafal"), _spec("schedule_wake", "Remind the person later.")),
    "zee": (_spec("list_devices"), _spec("device_status"), _spec("send_commands", "Switch lights on or off.")),
    "yori": (
        _spec("search_tracks"),
        _spec("play", "Play a track."),
        _spec("pause"),
        _spec("set_volume"),
        _spec("now_playing"),
    ),
    "rafal": (_spec("read_messages"), _spec("send_email"), _spec("list_events"), _spec("add_event")),
}


def message(author: str, text: str, run: str = "r-ava") -> dict[str, Any]:
    return {"author": author, "text": text, "run_id": run}


def run(
    id_: str, agent: str, *, trigger: str = "human", parent: str | None = None, calls: int = 1, ok: bool = True
) -> dict[str, Any]:
    return {
        "id": id_,
        "agent": agent,
        "trigger": trigger,
        "parent_run_id": parent,
        "status": "succeeded" if ok else "failed",
        "tool_calls": calls,
        "error": None if ok else {"type": "model_unavailable"},
    }


def handed_to_zee(reply: str, *, calls: int = 2) -> Observation:
    """ "turn on the bedroom light": Ava tags Zee, Zee answers."""
    return Observation(
        door="text",
        person_id="p",
        messages=[
            message("human", "turn on the bedroom light", ""),
            message("ava", "@zee"),
            message("zee", reply, "r-zee"),
        ],
        runs=[run("r-ava", "ava"), run("r-zee", "zee", trigger="ava", parent="r-ava", calls=calls)],
        home_before={},
        home_after={},
        spoken="",
        product=SimpleNamespace(team=TEAM),
    )


def said_by(author: str, reply: str, request: str = "hello", *, calls: int = 0) -> Observation:
    return Observation(
        door="text",
        person_id="p",
        messages=[message("human", request, ""), message(author, reply, f"r-{author}")],
        runs=[run(f"r-{author}", author, calls=calls)],
        home_before={},
        home_after={},
        spoken="",
        product=SimpleNamespace(team=TEAM),
    )


async def verdict(rule: str, observation: Observation, expected: Any) -> str | None:
    assert RULES[rule].validate(expected) is None, f"{expected!r} is not a valid {rule} value"
    return await RULES[rule].check(observation, expected)


GOOD = "Done: the bedroom light is on."


async def test_never_says_fails_on_a_forbidden_word() -> None:
    assert await verdict("never_says", handed_to_zee(GOOD), ["#", "[2026"]) is None
    failure = await verdict("never_says", handed_to_zee("Done #relieved# the light is on."), ["#", "[2026"])
    assert failure is not None and "#" in failure


async def test_says_fails_when_a_phrase_is_missing() -> None:
    assert await verdict("says", handed_to_zee(GOOD), ["bedroom light", "on"]) is None
    failure = await verdict("says", handed_to_zee("Done."), ["bedroom light"])
    assert failure is not None and "bedroom light" in failure


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Lampu kamar udah nyala.", "en"),  # Indonesian where English was asked
        ("The lampu kamar is on.", "en"),  # English with Indonesian words mixed in
        ("Done, lampu kamar sudah nyala.", "id"),  # Indonesian with English words mixed in
        ("Banana quantum.", "id"),  # reads as neither
        ("I'm on it.", "id"),  # "I'm" counts as English after lower-casing
    ],
)
async def test_language_fails_on_the_other_language_or_none(reply: str, expected: str) -> None:
    assert await verdict("language", handed_to_zee(reply), expected) is not None


async def test_language_passes_each_language_read_alone() -> None:
    assert await verdict("language", handed_to_zee(GOOD), "en") is None
    assert await verdict("language", handed_to_zee("Lampu kamar udah nyala ya."), "id") is None
    assert await verdict("language", handed_to_zee("I'm on it."), "en") is None


async def test_language_fails_when_nobody_replied() -> None:
    silent = said_by("ava", "")
    assert await verdict("language", silent, "en") is not None


async def test_asks_fails_both_ways() -> None:
    question = handed_to_zee("Which light do you mean, bedroom or living room?")
    assert await verdict("asks", question, True) is None
    assert await verdict("asks", handed_to_zee(GOOD), True) == "nobody asked a question back"
    assert await verdict("asks", question, False) is not None


async def test_runs_fails_on_another_order_trigger_or_parent() -> None:
    right = [{"agent": "ava", "trigger": "human"}, {"agent": "zee", "trigger": "ava", "parent": "ava"}]
    assert await verdict("runs", handed_to_zee(GOOD), right) is None
    assert await verdict("runs", handed_to_zee(GOOD), [{"agent": "ava"}]) is not None
    assert await verdict("runs", handed_to_zee(GOOD), [right[0], {"agent": "zee", "trigger": "human"}]) is not None
    assert await verdict("runs", handed_to_zee(GOOD), [right[1], right[0]]) is not None


async def test_replies_from_fails_on_another_writer() -> None:
    assert await verdict("replies_from", handed_to_zee(GOOD), ["zee"]) is None
    assert await verdict("replies_from", handed_to_zee(GOOD), ["yori"]) is not None
    assert await verdict("replies_from", handed_to_zee(GOOD), ["ava", "zee"]) is not None


async def test_runs_succeed_fails_on_a_failed_run() -> None:
    broken = handed_to_zee(GOOD)
    failed = Observation(**{**_fields(broken), "runs": [run("r-ava", "ava"), run("r-zee", "zee", ok=False)]})
    assert await verdict("runs_succeed", broken, True) is None
    failure = await verdict("runs_succeed", failed, True)
    assert failure is not None and "zee" in failure


def _fields(o: Observation) -> dict[str, Any]:
    return {name: getattr(o, name) for name in Observation.__dataclass_fields__}


async def test_promises_backed_fails_a_deed_no_tool_did() -> None:
    # A booking nobody's tools can make, said as done: the bug this rule exists for.
    failure = await verdict("promises_backed", said_by("ava", "Done, your flight to Bali is booked."), True)
    assert failure is not None and "ava" in failure


async def test_promises_backed_judges_each_reply_by_its_writers_tools() -> None:
    # Playing music is Yori's; Zee promising it is empty even though the team can.
    assert await verdict("promises_backed", said_by("yori", "I can play your music.", calls=1), True) is None
    failure = await verdict("promises_backed", said_by("zee", "I can play your music.", calls=1), True)
    assert failure is not None and "music" in failure


async def test_promises_backed_needs_a_tool_call_behind_done() -> None:
    assert await verdict("promises_backed", handed_to_zee(GOOD, calls=2), True) is None
    failure = await verdict("promises_backed", handed_to_zee(GOOD, calls=0), True)
    assert failure is not None and "no tool called" in failure


async def test_promises_backed_lets_ava_speak_for_whom_she_names() -> None:
    team = "Zee can switch lights on and off; Yori can play your music."
    assert await verdict("promises_backed", said_by("ava", team), True) is None
    assert await verdict("promises_backed", said_by("ava", "Zee can play your music."), True) is not None


async def test_a_refusal_is_fine_and_a_negated_promise_is_no_promise() -> None:
    honest = said_by("ava", "I can't do that yet, sorry: nobody here has a tool for it.", "book me a flight to Bali")
    assert await verdict("promises_backed", honest, True) is None
    assert await verdict("refusals_true", honest, True) is None


@pytest.mark.parametrize(
    ("author", "reply", "asked"),
    [
        ("yori", "I can't play or check music yet: no music service is connected here.", "turn the volume down"),
        ("ava", "I can't do that yet, sorry: nobody here has a tool for it.", "add lunch to my calendar"),
        ("ava", "Maaf, yang itu belum bisa: belum ada yang punya alat buat itu di sini.", "balas emailnya"),
        ("rafal", "I can't open your email, calendar or contacts yet: nothing is connected here.", "any emails?"),
        ("ava", "Zee is not connected to anything yet.", "what can you do?"),
    ],
)
async def test_refusals_true_fails_a_refusal_the_registry_contradicts(author: str, reply: str, asked: str) -> None:
    failure = await verdict("refusals_true", said_by(author, reply, asked), True)
    assert failure is not None and author in failure


async def test_refusals_true_passes_a_device_that_cannot_and_a_missing_tool() -> None:
    # The AC cannot dim: a fact about the device, not a capability the team lacks.
    assert await verdict("refusals_true", handed_to_zee("The bedroom AC can't do that; which setting?"), True) is None
    idle = {**TEAM, "yori": ()}
    alone = said_by("yori", "I can't play or check music yet: no music service is connected here.", "play jazz")
    no_tools = Observation(**{**_fields(alone), "product": SimpleNamespace(team=idle)})
    assert await verdict("refusals_true", no_tools, True) is None


@pytest.mark.parametrize(
    "reply",
    [
        "Okay, I'll remind you to tomorrow to buy milk at 07:00.",  # a time inside the task
        "Okay, I'll remind you to to buy milk.",  # a doubled word
        "Okay, I'll remind you at.",  # a slot left empty at the end
        "Added  , on Friday.",  # an empty slot
        "Oke, nanti aku ingetin untuk.",  # the same in Indonesian
    ],
)
async def test_reads_as_sentences_fails_a_badly_filled_template(reply: str) -> None:
    assert await verdict("reads_as_sentences", said_by("ava", reply), True) is not None


async def test_reads_as_sentences_passes_a_sentence_and_quoted_data() -> None:
    assert (
        await verdict("reads_as_sentences", said_by("ava", "Okay, I'll remind you to buy milk at 07:00."), True) is None
    )
    assert await verdict("reads_as_sentences", handed_to_zee("The bedroom light is on."), True) is None
    quoted = "The latest email is from Sari, about “Hi hi”:\n> see you at the the cafe"
    assert await verdict("reads_as_sentences", said_by("rafal", quoted), True) is None
