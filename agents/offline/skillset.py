"""What a specialist package teaches the offline model about its own requests.

Without a key, every agent is played by rules (agents/offline/). The general rules
(greetings, handing on, relaying, "not my area") are the same for every specialist; what
differs is the domain: which words put a clause in it, what the specialist does with such
a request through its tools, and what it says when no tool can do it yet. A package
declares that here (`SkillSet`, its `offline` in agents/specialist.py); the offline
model reads the installed ones from the roster, so it never lists the agents itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.roster import Roster, current_roster

# agents/offline/situation.py `Skill`: a `Situation` in, a reply or None out. Named loosely
# here because the situation reads the vocabulary, which reads the skill sets.
Skill = Callable[[Any], Any]


def _never(_request: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class SkillSet:
    # Is this clause about the specialist's domain? (Its vocabulary: "lights", "playlist".)
    claims: Callable[[str], bool]
    # What the specialist does with a request of its domain, tried in order; each answers
    # or returns None to let the general rules answer.
    skills: tuple[Skill, ...]
    # What it says when asked for its domain's work and no tool can do it: (English, Indonesian).
    not_yet: tuple[str, str]
    # Requests its own rules recognise that its vocabulary misses ("skip this one").
    owns: Callable[[str], bool] = _never
    # Lower claims first: "play jazz in the living room" is music before it is the home.
    precedence: int = 100
    # Is a timed request in this domain work for later ("turn off the AC at 11")? False
    # where a time is the request's own data ("add dinner on Friday at 7").
    timed_work_is_later: bool = True


@functools.cache
def _order(team: Roster) -> tuple[tuple[str, SkillSet], ...]:
    found: list[tuple[str, SkillSet]] = []
    for specialist in team.specialists:
        skills = specialist.offline
        assert isinstance(skills, SkillSet), f"{specialist.agent.name}: offline must be a SkillSet"
        found.append((specialist.agent.name, skills))
    return tuple(sorted(found, key=lambda item: item[1].precedence))


def claiming_order() -> tuple[tuple[str, SkillSet], ...]:
    """Every installed specialist's skills, in the order their vocabularies are tried."""
    return _order(current_roster())


def skills_of(name: str) -> SkillSet | None:
    """A specialist's offline skills (None for Ava or a name not in the room)."""
    for candidate, skills in claiming_order():
        if candidate == name:
            return skills
    return None
