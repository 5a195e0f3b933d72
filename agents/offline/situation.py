"""Reads a model request the way the real model would: which agent is asked to speak,
in which role, channel and trigger, what the thread says, what this run's tools
returned, which tools it has and (for the lead) what the team can do. Everything the
offline model knows comes from the request, nothing else."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from agents.model import FunctionCall, ModelRequest
from agents.offline.words import Lang, detect_language
from agents.roster import AGENTS
from agents.team import Member, read_team

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d) ([^\]]+)\] (.*)$", re.DOTALL)
_NOW = re.compile(r"Current local date and time for the person: (\d{4}-\d\d-\d\d \d\d:\d\d) \((\w+)\)")
_NOW_ZONED = re.compile(r"Current local date and time for the person: (\d{4}-\d\d-\d\d \d\d:\d\d) \(\w+\) \(([^)]+)\)")
NOTE_AUTHOR = "Ava (note to self)"

# What a skill answers: the reply text and the tool calls to make (empty text while calling).
Reply = tuple[str, list[FunctionCall]]


@dataclass(frozen=True, slots=True)
class Line:
    author: str  # the display name in the history prefix
    text: str

    @property
    def by_human(self) -> bool:
        return self.author != NOTE_AUTHOR and all(a.display_name != self.author for a in AGENTS.values())


@dataclass(frozen=True, slots=True)
class Situation:
    agent: str
    lead: bool
    voice: bool
    trigger: str
    lines: tuple[Line, ...]
    results: tuple[tuple[str, dict[str, Any]], ...]  # this run's tool results, in order
    tools: tuple[str, ...] = ()  # the names of the tools this run may call
    team: tuple[Member, ...] = ()  # what each member can do (the lead's team layer)
    # The person's local clock as the session layer states it: ("2026-11-30", "09:00", "Monday").
    clock: tuple[str, str, str] | None = None
    local_now: datetime | None = None  # the same clock, aware, in the person's zone
    # A specialist's answer said aloud as it is written (its `channel_voice_specialist` layer).
    said_aloud: bool = False
    # The lines a run acts on, worked out on first use: the skills ask for the request
    # many times per call, over a history of up to 200 lines. Not an init field, so a
    # situation `replace`d with other lines works them out again.
    _human: tuple[Line, ...] | None = field(default=None, init=False, repr=False, compare=False)

    def _human_lines(self) -> tuple[Line, ...]:
        if self._human is None:
            human = tuple(
                line
                for line in self.lines
                if line.by_human or (self.trigger == "postera" and line.author == NOTE_AUTHOR)
            )
            object.__setattr__(self, "_human", human)
            return human
        return self._human

    @property
    def request(self) -> str:
        """The latest message the run should act on: the person's, or a wake note."""
        lines = self._human_lines()
        return lines[-1].text if lines else ""

    @property
    def previous_request(self) -> str:
        """The person's message before the latest one, for follow-ups ("make it warmer")."""
        lines = self._human_lines()
        return lines[-2].text if len(lines) > 1 else ""

    @property
    def lang(self) -> Lang:
        return detect_language(self.request)

    @property
    def answered_after_request(self) -> bool:
        """Has this agent already written a reply after the latest human message?"""
        name = AGENTS[self.agent].display_name
        for line in reversed(self.lines):
            if line.by_human:
                return False
            if line.author == name and not line.text.startswith("@"):
                return True
        return False

    @property
    def first_time(self) -> bool:
        return len(self._human_lines()) <= 1

    def last_result(self, name: str) -> dict[str, Any] | None:
        for tool, result in reversed(self.results):
            if tool == name:
                return dict(result)
        return None


def read_situation(request: ModelRequest) -> Situation:
    system = request.system
    agent_match = re.search(r"You are (\w+)", system)
    agent = agent_match.group(1).lower() if agent_match else "ava"
    trigger_match = re.search(r"\[TRIGGER: (\w+)\]", system)
    now_match = _NOW.search(system)
    lines: list[Line] = []
    results: list[tuple[str, dict[str, Any]]] = []
    for content in request.contents:
        if content.results:
            results.extend((r.name, r.response) for r in content.results)
        elif content.text and not content.calls:
            line = _line(content.text)
            if line is not None:
                lines.append(line)
    return Situation(
        local_now=_local_now(system),
        agent=agent if agent in AGENTS else "ava",
        lead="[ROLE: LEAD]" in system,
        voice="[CHANNEL: VOICE]" in system,
        said_aloud="[SAID ON A CALL]" in system,
        trigger=trigger_match.group(1).lower() if trigger_match else "human",
        lines=tuple(lines),
        results=tuple(results),
        tools=tuple(t.name for t in request.tools),
        team=_team(system),
        clock=(now_match.group(1)[:10], now_match.group(1)[11:], now_match.group(2)) if now_match else None,
    )


# A turn's runs read the same history lines and instructions on each of their model
# calls; parsed once per process for as long as they keep coming (lines are immutable).
@functools.lru_cache(maxsize=4096)
def _line(text: str) -> Line | None:
    match = _LINE.match(text)
    return Line(match.group(2), match.group(3)) if match else None


@functools.lru_cache(maxsize=64)
def _team(system: str) -> tuple[Member, ...]:
    return tuple(read_team(system))


def _local_now(system: str) -> datetime | None:
    match = _NOW_ZONED.search(system)
    if not match:
        return None
    try:
        return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(match.group(2)))
    except (ValueError, KeyError):
        return None


def call(name: str, args: dict[str, Any]) -> FunctionCall:
    return FunctionCall(id=f"offline_{name}", name=name, args=args)


# A skill looks at the situation and answers, or returns None to let the next one try.
Skill = Callable[[Situation], Reply | None]
