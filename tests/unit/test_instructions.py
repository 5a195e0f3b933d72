"""Instruction layers (docs/agents.md#instruction-layers): a matrix of door x layer saying what each composed
instruction contains and omits, and the cache-friendly order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from agents import AGENTS, Session, compose
from agents.capabilities import render_persona
from agents.instructions import layer_text

JAKARTA = ZoneInfo("Asia/Jakarta")
NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)

# (door, channel, agent, trigger): every way a run is started.
DOORS = [
    ("text: Ava for the person", "text", "ava", "human"),
    ("voice: Ava on a call", "voice", "ava", "human"),
    ("phone: Ava on the phone", "phone", "ava", "human"),
    ("wake: Ava woken by a note", "text", "ava", "postera"),
    ("text: Zee mentioned directly", "text", "zee", "human"),
    ("text: Zee handed on by Ava", "text", "zee", "ava"),
    ("voice: Zee handed on during a call", "voice", "zee", "ava"),
    ("text: Yori mentioned directly", "text", "yori", "human"),
    ("text: Rafal handed on by Ava", "text", "rafal", "ava"),
]

LAYERS = {
    "room": "[ROOM]",
    "lead": "[ROLE: LEAD]",
    "team": "[TEAM]",
    "specialist": "[ROLE: SPECIALIST]",
    "text": "[CHANNEL: TEXT]",
    "voice": "[CHANNEL: VOICE]",
    "by_human": "[TRIGGER: HUMAN]",
    "by_ava": "[TRIGGER: AVA]",
    "by_postera": "[TRIGGER: POSTERA]",
    "session": "[SESSION]",
}

EXPECTED = {
    "text: Ava for the person": {"room", "lead", "team", "text", "by_human", "session"},
    "voice: Ava on a call": {"room", "lead", "team", "voice", "by_human", "session"},
    "phone: Ava on the phone": {"room", "lead", "team", "voice", "by_human", "session"},
    "wake: Ava woken by a note": {"room", "lead", "team", "text", "by_postera", "session"},
    "text: Zee mentioned directly": {"room", "specialist", "by_human", "session"},
    "text: Zee handed on by Ava": {"room", "specialist", "by_ava", "session"},
    "voice: Zee handed on during a call": {"room", "specialist", "by_ava", "session"},
    "text: Yori mentioned directly": {"room", "specialist", "by_human", "session"},
    "text: Rafal handed on by Ava": {"room", "specialist", "by_ava", "session"},
}


def session(**changes: object) -> Session:
    values: dict[str, object] = {"now": NOW, "time_zone": JAKARTA, "previous_message_at": NOW - timedelta(minutes=5)}
    values.update(changes)
    return Session(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(("door", "channel", "agent", "trigger"), DOORS, ids=[d[0] for d in DOORS])
def test_each_door_gets_exactly_its_layers(door: str, channel: str, agent: str, trigger: str) -> None:
    text = compose(agent=AGENTS[agent], channel=channel, trigger=trigger, session=session())  # type: ignore[arg-type]
    present = {name for name, marker in LAYERS.items() if marker in text}
    assert present == EXPECTED[door]
    assert text.startswith(render_persona(AGENTS[agent].persona, set())), "the agent's own instruction comes first"


@pytest.mark.parametrize(("door", "channel", "agent", "trigger"), DOORS, ids=[d[0] for d in DOORS])
def test_layers_run_from_static_to_dynamic(door: str, channel: str, agent: str, trigger: str) -> None:
    text = compose(agent=AGENTS[agent], channel=channel, trigger=trigger, session=session())  # type: ignore[arg-type]
    positions = [text.index(marker) for marker in LAYERS.values() if marker in text]
    assert positions == sorted(positions)


def test_voice_layer_carries_the_spoken_rules() -> None:
    text = layer_text("channel_voice")
    assert "#end#" in text and "( ) [ ] \\" in text
    for emotion in ("furious", "relieved", "shocked", "neutral", "smug_angry"):
        assert f"#{emotion}#" in text


def test_session_layer_has_local_time_zone_and_gap() -> None:
    text = compose(agent=AGENTS["ava"], channel="text", trigger="human", session=session())
    assert "2026-11-30 10:00" in text and "Asia/Jakarta" in text
    assert "Time since the previous message: 5 minutes." in text
    first = compose(agent=AGENTS["ava"], channel="text", trigger="human", session=session(previous_message_at=None))
    assert "Time since the previous message" not in first


def test_session_layer_lists_known_facts() -> None:
    text = compose(agent=AGENTS["ava"], channel="text", trigger="human", session=session(facts=("Lives in Bandung",)))
    assert "- Lives in Bandung" in text


@pytest.mark.parametrize(
    ("agent", "channel", "trigger"),
    [("ava", "text", "human"), ("ava", "voice", "human"), ("zee", "text", "ava"), ("zee", "text", "human")],
)
def test_runs_of_one_agent_and_channel_share_a_byte_identical_prefix(agent: str, channel: str, trigger: str) -> None:
    one = compose(agent=AGENTS[agent], channel=channel, trigger=trigger, session=session())  # type: ignore[arg-type]
    later = session(now=NOW + timedelta(hours=7), previous_message_at=NOW, facts=("Likes jazz",))
    two = compose(agent=AGENTS[agent], channel=channel, trigger=trigger, session=later)  # type: ignore[arg-type]
    cut = one.index("[TRIGGER:")
    assert one[:cut] == two[:cut]
    assert one != two


def test_ava_text_and_voice_share_the_prefix_up_to_the_channel() -> None:
    text = compose(agent=AGENTS["ava"], channel="text", trigger="human", session=session())
    voice = compose(agent=AGENTS["ava"], channel="voice", trigger="human", session=session())
    assert text[: text.index("[CHANNEL:")] == voice[: voice.index("[CHANNEL:")]


def test_specialists_prefix_does_not_depend_on_channel() -> None:
    text = compose(agent=AGENTS["zee"], channel="text", trigger="ava", session=session())
    voice = compose(agent=AGENTS["zee"], channel="voice", trigger="ava", session=session())
    assert text == voice
