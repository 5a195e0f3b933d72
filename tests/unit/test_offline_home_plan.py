"""Zee's offline plan never switches a whole room on a word it does not know.

Phone-quality speech came back as "turn on the bedroom life": the room was found, the
device was not, and every bedroom device went on. Naming only a room now asks which one;
"everything in the bedroom" and "the bedroom lights" still mean all of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from agents.zee.asks import asks_of
from agents.zee.offline import plan


def _device(device_id: str, name: str, category: str, status: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": device_id,
        "name": name,
        "category": category,
        "status": [{"code": k, "value": v} for k, v in status.items()],
    }


HOME = [
    _device("light-bed", "Bedroom light", "dj", {"switch_led": False}),
    _device("ac-bed", "Bedroom AC", "kt", {"switch": False, "temp_set": 24}),
    _device("light-living", "Living room light", "dj", {"switch_led": False}),
]


@pytest.mark.parametrize("said", ["turn on the bedroom life", "turn on the bedroom"])
def test_a_room_alone_asks_which_device(said: str) -> None:
    decided = plan("en", asks_of(said, ""), HOME)
    assert not decided.sends
    assert decided.say.startswith("Which one") and "bedroom light" in decided.say and "bedroom AC" in decided.say


@pytest.mark.parametrize(
    ("said", "switched"),
    [
        ("turn on everything in the bedroom", {"light-bed", "ac-bed"}),
        ("turn on the bedroom light", {"light-bed"}),
        ("turn on all the lights", {"light-bed", "light-living"}),
    ],
)
def test_what_is_named_is_switched(said: str, switched: set[str]) -> None:
    assert {device["id"] for device, _, _ in plan("en", asks_of(said, ""), HOME).sends} == switched


LOCKED = [*HOME, _device("lock-front", "Front door", "ms", {"lock_motor_state": True})]


@pytest.mark.parametrize(
    ("said", "locked"),
    [("unlock the front door", False), ("bukain pintu depan dong", False), ("kunciin pintunya ya", True)],
)
def test_a_door_lock_is_commanded_and_nothing_else(said: str, locked: bool) -> None:
    decided = plan("en", asks_of(said, ""), LOCKED)
    assert [(d["id"], list(c)) for d, c, _ in decided.sends] == [
        ("lock-front", [{"code": "lock_motor_state", "value": locked}])
    ]


def test_everything_off_leaves_the_lock_alone() -> None:
    decided = plan("en", asks_of("turn everything off", ""), LOCKED)
    assert "lock-front" not in {d["id"] for d, _, _ in decided.sends}
