"""Personas, the team layer and tool descriptions promise only what registered tools do
(docs/agents.md#capabilities-and-honesty): checked against the toolbox the composition root
really builds, so a persona that names a capability no tool provides fails here, and the
texts grow true as tools land."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from agents import AGENTS, Session, ToolSpec, compose, hollow
from agents.capabilities import capabilities, promised, render_persona
from tests.fakes.toolbox import described_toolbox

# Describing tools does no I/O, so the home needs no pool here.
TEAM = described_toolbox().team()
EVERY_TOOL = [spec for specs in TEAM.values() for spec in specs]


def rendered(agent: str) -> str:
    return render_persona(AGENTS[agent].persona, {t.name for t in TEAM[agent]})


@pytest.mark.parametrize("agent", ["zee", "yori", "rafal"])
def test_a_specialists_persona_promises_only_its_own_tools(agent: str) -> None:
    assert hollow(rendered(agent), TEAM[agent]) == []


def test_avas_persona_promises_only_what_the_team_can_do() -> None:
    assert hollow(rendered("ava"), EVERY_TOOL) == []


@pytest.mark.parametrize("agent", ["zee", "yori", "rafal"])
def test_the_handoff_tool_describing_a_specialist_promises_only_its_tools(agent: str) -> None:
    (handoff,) = [spec for spec in TEAM["ava"] if spec.name == agent]
    assert hollow(handoff.description, TEAM[agent]) == []


@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_composed_instruction_promises_nothing_hollow(agent: str) -> None:
    session = Session(now=datetime(2026, 11, 30, 2, tzinfo=UTC), time_zone=ZoneInfo("Asia/Jakarta"))
    text = compose(agent=AGENTS[agent], channel="text", trigger="human", session=session, team=TEAM)
    own = EVERY_TOOL if agent == "ava" else list(TEAM[agent])
    assert hollow(text, own) == []
    assert "{tools:" not in text, "capability tags never reach the model"


def test_the_team_layer_is_built_from_the_registered_tools() -> None:
    session = Session(now=datetime(2026, 11, 30, 2, tzinfo=UTC), time_zone=ZoneInfo("Asia/Jakarta"))
    text = compose(agent=AGENTS["ava"], channel="text", trigger="human", session=session, team=TEAM)
    team = text.split("[TEAM]", 1)[1].split("\n\n", 1)[0]
    assert "Tools: list_devices, device_status, send_commands" in team
    for name in ("yori", "rafal"):
        line = next(line for line in team.splitlines() if line.startswith(f"- {name.capitalize()} "))
        assert line.endswith("Tools: none.") == (not TEAM[name]), line


def test_a_persona_line_that_promises_a_missing_tool_fails_the_check() -> None:
    persona = "You are Yori.\n- You play the person's music and skip tracks."
    assert hollow(render_persona(persona, set()), []) == ["music"]


def test_a_tagged_line_appears_only_when_its_tools_exist() -> None:
    persona = "You are Yori.\n- You play music with play. {tools: play}\n- No music tools yet. {tools: none}"
    assert render_persona(persona, set()) == "You are Yori.\n- No music tools yet."
    assert render_persona(persona, {"play"}) == "You are Yori.\n- You play music with play."
    play = ToolSpec("play", "Play a track.", {"type": "object", "properties": {}})
    assert hollow(render_persona(persona, {"play"}), [play]) == []


def test_saying_what_cannot_be_done_promises_nothing() -> None:
    assert promised("I can't play music yet: no music service is connected here.") == []
    assert promised("Maaf, aku belum bisa muterin musik.") == []


@pytest.mark.parametrize("capability", capabilities(), ids=lambda c: c.name)
def test_every_capability_recognises_its_own_wording(capability: object) -> None:
    for wording in (capability.en, capability.id):  # type: ignore[attr-defined]
        assert capability in promised(f"Zee can {wording}.")


async def test_the_team_description_grows_true_as_tools_land() -> None:
    """From a team with only Ava's handoffs, register a music tool for Yori (named as another
    engineer might) and a wake tool for Ava: the team layer, the offline greeting and Yori's
    persona follow, nothing hard-coded."""
    from agents import ModelRequest, OfflineModel, Tool, Toolbox, handoff_tools
    from agents.model import Content
    from agents.team import read_team
    from agents.tools import object_schema

    toolbox = Toolbox()
    toolbox.register("ava", lambda context: handoff_tools(context.delegate))  # type: ignore[arg-type]

    async def nothing(_: dict[str, object]) -> dict[str, object]:
        return {}

    def tool(name: str, description: str) -> Tool:
        return Tool(ToolSpec(name, description, object_schema({})), nothing)

    toolbox.register("yori", lambda _: [tool("start_playback", "Play a track, album or playlist by its uri.")])
    toolbox.register("ava", lambda _: [tool("schedule_wake", "Leave a note to your future self.")])
    team = toolbox.team()
    session = Session(now=datetime(2026, 11, 30, 2, tzinfo=UTC), time_zone=ZoneInfo("Asia/Jakarta"))
    system = compose(agent=AGENTS["ava"], channel="text", trigger="human", session=session, team=team)
    members = {m.name: m for m in read_team(system)}
    assert members["yori"].capabilities == ("music",) and members["rafal"].capabilities == ()
    assert "wakes" in members["ava"].capabilities
    request = ModelRequest("offline-1", system, (Content("user", "[2026-11-30 09:00 Budi] hi"),), tuple(team["ava"]))
    greeting = (await OfflineModel().generate(request=request)).text
    assert "Yori can play your music" in greeting and "I can remind you of things later" in greeting
    assert "Zee and Rafal are not connected" in greeting
    assert hollow(greeting, [s for specs in team.values() for s in specs]) == []
    yori = compose(agent=AGENTS["yori"], channel="text", trigger="ava", session=session, team=team)
    assert "No music tools are connected" not in yori
