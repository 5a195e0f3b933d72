"""The one registry of which tools each agent gets (agent -> tool factories over its ports).

The composition root registers a factory per capability (`zee` -> the home's tools, `ava`
-> her handoffs, later her wake and recall tools); a turn asks for one agent's tools bound
to one run. New capabilities plug in here, in one place, instead of in the turn's code.

A factory only binds handlers to the run; it never does I/O, so the toolbox can also be
asked what an agent *could* do (`specs_for`) without a person or a run: that is what the
team description and the persona-versus-tools check read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from agents.handoff import Delegate
from agents.instructions import Channel, Trigger
from agents.model import ToolSpec
from agents.roster import AGENTS, AgentSpec
from agents.tools import Tool


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a tool may know about the run it serves."""

    person_id: str
    person_name: str
    zone: ZoneInfo
    channel: Channel
    trigger: Trigger
    run_id: str
    # Set for the lead: writes her tag and runs the specialist. None for specialists.
    delegate: Delegate | None = None


ToolFactory = Callable[[RunContext], Sequence[Tool]]


async def _no_delegate(specialist: AgentSpec, tag: str, *, direct: bool = False) -> tuple[str, bool]:
    raise AssertionError("a described tool was called")


# Used to list what an agent could do; no handler built on it is ever called.
DESCRIBING = RunContext(
    person_id="",
    person_name="",
    zone=ZoneInfo("UTC"),
    channel="text",
    trigger="human",
    run_id="",
    delegate=_no_delegate,
)


class Toolbox:
    def __init__(self) -> None:
        self._factories: dict[str, list[ToolFactory]] = {name: [] for name in AGENTS}
        self._team: dict[str, tuple[ToolSpec, ...]] | None = None

    def register(self, agent: str, factory: ToolFactory) -> None:
        assert agent in self._factories, f"unknown agent {agent!r}"
        self._factories[agent].append(factory)
        self._team = None

    def tools_for(self, agent: str, context: RunContext) -> list[Tool]:
        tools = [tool for factory in self._factories[agent] for tool in factory(context)]
        names = [t.name for t in tools]
        assert len(names) == len(set(names)), f"{agent} has two tools with one name: {names}"
        return tools

    def specs_for(self, agent: str) -> list[ToolSpec]:
        """What the agent could call in this deployment (descriptions for the model and for checks)."""
        return [t.spec for t in self.tools_for(agent, DESCRIBING)]

    def team(self) -> dict[str, tuple[ToolSpec, ...]]:
        """Every agent's tools in this deployment: what the team layer and personas may promise.

        Built once and kept until a tool is registered: one object for every run, so the
        lead's team layer is rendered once too (agents.team.team_layer). Read it, never change it."""
        if self._team is None:
            self._team = {name: tuple(self.specs_for(name)) for name in self._factories}
        return self._team

    def has_tools(self, agent: str) -> bool:
        return bool(self._factories[agent])
