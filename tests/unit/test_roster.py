"""Every specialist in the room is whole (docs/adding-an-agent.md): a persona, what it
may promise backed by its own tools, offline skills that claim its requests, and a port
whose sandbox (and live adapter) one contract suite runs over. And the room refuses a
package that cannot join it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents import AGENTS, current_roster
from agents.capabilities import provides
from agents.offline.skillset import SkillSet
from agents.offline.words import topic_of
from agents.roster import BUILT_IN, RosterInvalid, load
from agents.specialist import Specialist, declared
from tests.fakes.toolbox import described_toolbox

CONTRACTS = Path(__file__).parents[1] / "contract"
SPECIALISTS = [declared(s) for s in current_roster().specialists]


def test_the_room_is_ava_and_the_built_in_packages_in_order() -> None:
    assert current_roster().packages == BUILT_IN
    assert list(AGENTS) == ["ava", *(s.agent.name for s in SPECIALISTS)]


@pytest.mark.parametrize("specialist", SPECIALISTS, ids=lambda s: s.agent.name)
def test_a_specialist_has_a_persona_and_a_description(specialist: Specialist[object]) -> None:
    spec = specialist.agent
    assert spec.role == "specialist"
    assert len(spec.persona) > 100, "a persona the model can act on"
    assert spec.display_name in spec.persona or spec.name in spec.persona.lower()
    assert spec.description and spec.domain


@pytest.mark.parametrize("specialist", SPECIALISTS, ids=lambda s: s.agent.name)
def test_each_capability_is_kept_by_one_of_its_own_tools(specialist: Specialist[object]) -> None:
    tools = described_toolbox().specs_for(specialist.agent.name)
    assert specialist.capabilities, "it promises something"
    for capability in specialist.capabilities:
        assert provides(capability, tools), f"{capability.name} has no tool behind it"


@pytest.mark.parametrize("specialist", SPECIALISTS, ids=lambda s: s.agent.name)
def test_offline_skills_claim_the_specialists_own_requests(specialist: Specialist[object]) -> None:
    skills = specialist.offline
    assert isinstance(skills, SkillSet)
    assert skills.skills, "it does its domain's work offline"
    assert all(skills.not_yet), "it can say plainly what it cannot do yet, in both languages"
    said = {
        "zee": "turn on the bedroom light",
        "yori": "put on a playlist",
        "rafal": "check my inbox",
    }[specialist.agent.name]
    assert topic_of(said) == specialist.agent.name


@pytest.mark.parametrize("specialist", SPECIALISTS, ids=lambda s: s.agent.name)
def test_its_port_has_one_contract_suite_over_sandbox_and_live(specialist: Specialist[object]) -> None:
    suite = CONTRACTS / f"test_{specialist.port.kind}_contract.py"
    assert suite.exists(), f"no contract suite for the {specialist.port.kind} port"
    text = suite.read_text()
    sandbox = type(specialist.port.sandbox(None)).__name__  # type: ignore[arg-type]  # a sandbox only keeps its pool
    assert re.search(rf"\b{sandbox}\b", text), f"{suite.name} does not run over {sandbox}"
    package = specialist.agent.package
    live_modules = set(re.findall(rf"from {re.escape(package)}\.(\w+) import", text)) - {"sandbox", "agent"}
    if specialist.port.vendor is not None:
        assert live_modules, f"{suite.name} does not run over the live adapter"


def test_a_package_that_is_missing_or_collides_is_refused() -> None:
    with pytest.raises(RosterInvalid, match="no specialist package"):
        load(["agents.nobody"])
    with pytest.raises(RosterInvalid, match="called 'zee'"):
        load(["agents.zee", "agents.zee"])
