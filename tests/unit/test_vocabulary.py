"""The recogniser's prompt (voice/vocabulary.py): the room's names (and, for the benchmark,
the home's devices), no command words, within its limits."""

from __future__ import annotations

import pytest

from agents import AGENTS, SANDBOX_DEVICE_NAMES
from voice.vocabulary import (
    NAMES_MAX,
    NO_DEVICE,
    doubt,
    doubts,
    expected_words,
    hearing_prompt,
    room_prompt,
    room_words,
    zee_addressed,
)


def test_the_room_prompt_names_every_member_and_no_command() -> None:
    prompt = room_prompt()
    assert all(spec.display_name in prompt for spec in AGENTS.values())
    assert not any(name[1:] in prompt for name in SANDBOX_DEVICE_NAMES)  # calls go without the devices
    assert not {"turn", "on", "off", "open", "close", "play"} & set(prompt.lower().replace(",", " ").split())


def test_the_benchmarks_prompt_adds_every_sandbox_device() -> None:
    prompt = room_prompt(with_devices=True)
    assert prompt.startswith(room_prompt())
    assert all(name[1:] in prompt for name in SANDBOX_DEVICE_NAMES)  # "the bedroom AC": capitals kept after the first


def test_the_prompt_reads_as_two_sentences_and_keeps_to_its_limits() -> None:
    assert hearing_prompt(["Ava", "Zee"], ["Bedroom AC"]) == "Ava and Zee. The bedroom AC."
    assert hearing_prompt(["Ava"], []) == "Ava."
    assert hearing_prompt([], []) == ""
    many = hearing_prompt([f"N{i}" for i in range(50)], [])
    assert many.count(",") == NAMES_MAX - 2 and "N49" not in many


# --- a phone line's short decode, checked against what the room expects (issue 29) -----------

ROOM = expected_words(["Ava", "Zee", "Yori", "Rafal"], SANDBOX_DEVICE_NAMES)


@pytest.mark.parametrize(
    "heard",
    [
        "Turn on the bad room light.",  # "bad room": near "bedroom"
        "Turn on the bedroom life.",  # a command, and no device of the home in it
        "Turn off the man room light.",
        "Open the living room curtains.",  # "curtains": near "curtain", not it
        "Close the living groom curtain.",
    ],
)
def test_a_short_decode_that_misses_the_rooms_words_is_doubted(heard: str) -> None:
    assert doubt(heard, ROOM)


@pytest.mark.parametrize(
    "heard",
    [
        "Turn on the bedroom light.",
        "turn off the living room light",
        "Close the living room curtain.",
        "Zee, turn on the bedroom AC.",
        "Thanks a lot.",  # "lot" is not near enough to "light"
        "Hello.",
        "What can you do?",
        "Good morning.",
        "Remind me in five minutes to call mom.",
        "",
    ],
)
def test_a_short_decode_with_the_rooms_words_or_none_expected_stands(heard: str) -> None:
    assert doubt(heard, ROOM) == ""


@pytest.mark.parametrize(
    ("heard", "meant"),
    [
        ("See, turn on the bedroom light.", "Zee, turn on the bedroom light."),
        ("Z, turn off the living room light.", "Zee, turn off the living room light."),
        ("see, open the living room curtain", "Zee, open the living room curtain"),
    ],
)
def test_a_lost_zee_before_a_request_to_a_device_is_written_back(heard: str, meant: str) -> None:
    assert zee_addressed(heard, ROOM) == meant


@pytest.mark.parametrize(
    "heard",
    [
        "See, I told you.",  # "see" said as a word: no request to a device follows
        "See you tomorrow.",
        "See the bedroom light?",  # no comma: not a name called
        "See, the bedroom light is on.",  # no request
        "Seeing, turn on the bedroom light.",  # another word
        "Yori, turn on the bedroom light.",  # a name heard as itself stays
        "see, turn on the garage light",  # not a device of this home
    ],
)
def test_see_said_as_a_word_stays(heard: str) -> None:
    assert zee_addressed(heard, ROOM) == heard


def test_no_zee_in_the_room_no_rewrite() -> None:
    room = expected_words(["Ava", "Yori"], SANDBOX_DEVICE_NAMES)
    assert zee_addressed("See, turn on the bedroom light.", room) == "See, turn on the bedroom light."


def test_every_reason_to_doubt_is_listed_in_doubts_order() -> None:
    """`bench.voice_narrowband` weighs each reason; `doubt` gives the first."""
    room = room_words()
    both = doubts("turn on the bad room life", room)
    assert both[0] == NO_DEVICE and "near 'bedroom'" in both[1] and len(both) == 2
    assert doubt("turn on the bad room life", room) == NO_DEVICE
    assert doubts("what's the bad room like", room) == [doubt("what's the bad room like", room)]
    assert doubts("turn on the bedroom light", room) == [] and doubt("turn on the bedroom light", room) == ""
