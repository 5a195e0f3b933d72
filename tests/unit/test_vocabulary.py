"""The recogniser's prompt (voice/vocabulary.py): the room's names (and, for the benchmark,
the home's devices), no command words, within its limits."""

from __future__ import annotations

from agents import AGENTS, SANDBOX_DEVICE_NAMES
from voice.vocabulary import NAMES_MAX, hearing_prompt, room_prompt


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
