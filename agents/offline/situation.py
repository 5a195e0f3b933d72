"""Reads a model request the way the real model would: which agent is asked to speak,
in which role, channel and trigger, what the thread says and what this run's tools
returned. Everything the offline model knows comes from the request, nothing else."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from agents.model import FunctionCall, ModelRequest
from agents.offline.words import Lang, detect_language
from agents.roster import AGENTS

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d) ([^\]]+)\] (.*)$", re.DOTALL)
NOTE_AUTHOR = "Ava (note to self)"
_NOW = re.compile(r"Current local date and time for the person: (\d{4}-\d\d-\d\d \d\d:\d\d) \(\w+\) \(([^)]+)\)")
_AGENT_NAMES = {a.display_name for a in AGENTS.values()} | {NOTE_AUTHOR}


@dataclass(frozen=True, slots=True)
class Line:
    author: str  # the display name in the history prefix
    text: str

    @property
    def by_human(self) -> bool:
        return self.author not in _AGENT_NAMES


@dataclass(frozen=True, slots=True)
class Situation:
    agent: str
    lead: bool
    voice: bool
    trigger: str
    lines: tuple[Line, ...]
    results: tuple[tuple[str, dict[str, Any]], ...]  # this run's tool results, in order
    local_now: datetime | None = None  # the person's clock, from the session layer

    @property
    def request(self) -> str:
        """The latest message the run should act on: the person's, or a wake note."""
        for line in reversed(self.lines):
            if line.by_human or (self.trigger == "postera" and line.author == NOTE_AUTHOR):
                return line.text
        return ""

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
    lines: list[Line] = []
    results: list[tuple[str, dict[str, Any]]] = []
    for content in request.contents:
        if content.results:
            results.extend((r.name, r.response) for r in content.results)
        elif content.text and not content.calls:
            match = _LINE.match(content.text)
            if match:
                lines.append(Line(match.group(2), match.group(3)))
    return Situation(
        local_now=_local_now(system),
        agent=agent if agent in AGENTS else "ava",
        lead="[ROLE: LEAD]" in system,
        voice="[CHANNEL: VOICE]" in system,
        trigger=trigger_match.group(1).lower() if trigger_match else "human",
        lines=tuple(lines),
        results=tuple(results),
    )


def _local_now(system: str) -> datetime | None:
    match = _NOW.search(system)
    if not match:
        return None
    try:
        return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(match.group(2)))
    except (ValueError, KeyError):
        return None


def call(name: str, args: dict[str, Any]) -> FunctionCall:
    return FunctionCall(id=f"offline_{name}", name=name, args=args)
