"""The team as this deployment really has it, told to the lead at run time.

Ava must describe the group truthfully: only what each member's registered tools do
(docs/agents.md#capabilities-and-honesty). Nothing here is hard-coded per agent: the layer is built from the tool specs
the toolbox gives for each agent, so it becomes true as tools land. The offline model
reads the same layer, so its greeting and Gemini's answers come from one source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agents.capabilities import capabilities, offered
from agents.model import ToolSpec
from agents.roster import AGENTS, SPECIALISTS

# agent name -> the tools it has in this deployment
Team = Mapping[str, Sequence[ToolSpec]]

HEADER = "[TEAM]"
_MEMBER = re.compile(r"^- (\w+) \(([^)]*)\): .*Tools: ([\w, ]+)\.$")


@dataclass(frozen=True, slots=True)
class Member:
    """One line of the team layer, as a reader (the offline model) sees it."""

    name: str
    domain: str
    tools: tuple[str, ...]
    capabilities: tuple[str, ...]  # names from agents.capabilities, as the line states them


def _member_line(name: str, domain: str, specs: Sequence[ToolSpec], *, lead: bool) -> str:
    own = [s for s in specs if not (lead and s.name in AGENTS)]
    can = [c.en for c in offered(own)]
    if lead:
        can.insert(
            0,
            "hand work to the specialists with their handoff tools ("
            + ", ".join(s.name for s in specs if s.name in AGENTS)
            + ")",
        )
    said = "; ".join(can) if can else "nothing in this domain yet, so say plainly it cannot be done yet"
    names = ", ".join(s.name for s in own) or "none"
    return f"- {AGENTS[name].display_name} ({domain}): {said}. Tools: {names}."


# The last team rendered and its layer: a deployment's team is one object (Turns keeps
# the toolbox's), so every lead run after the first reuses the text instead of rebuilding it.
_last: tuple[Team, str] | None = None


def team_layer(team: Team) -> str:
    """The lead's view of what everyone can really do, one line per member."""
    global _last
    if _last is not None and _last[0] is team:
        return _last[1]
    text = _team_layer(team)
    _last = (team, text)
    return text


def _team_layer(team: Team) -> str:
    lines = [
        HEADER,
        "What each member can really do in this deployment, from the tools each one has. Promise only this. "
        "When nobody has a tool for something, say plainly that the group cannot do it yet.",
        _member_line("ava", "you, the lead", team.get("ava", ()), lead=True),
    ]
    lines += [_member_line(s.name, s.domain, team.get(s.name, ()), lead=False) for s in SPECIALISTS]
    return "\n".join(lines)


def read_team(system: str) -> list[Member]:
    """The members listed in a system instruction's team layer (empty when it has none)."""
    if HEADER not in system:
        return []
    members: list[Member] = []
    for line in system.split(HEADER, 1)[1].splitlines():
        match = _MEMBER.match(line.strip())
        if match:
            tools = tuple(t.strip() for t in match.group(3).split(",") if t.strip() and t.strip() != "none")
            said = line.split(": ", 1)[1]
            stated = tuple(c.name for c in capabilities() if c.en in said)
            members.append(Member(match.group(1).lower(), match.group(2), tools, stated))
    return members
