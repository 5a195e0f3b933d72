"""What the agents may promise, tied to the tools that keep the promise.

A persona, a team description or an offline greeting may only say an agent can do what
one of its registered tools really does (docs/agents.md). This module is the small
shared vocabulary for that: each capability names the words that promise it and the
tool names that provide it, and says it in English and Indonesian for the offline model.
A specialist's package declares its own; Ava's are here.

Persona and layer lines that need a tool carry a tag, `{tools: a, b}`; `render_persona`
keeps such a line only when the agent has every tool it names (`{tools: none}` only when
it has no tools at all, `{without: a}` only when it lacks them), so the text an agent
reads grows as its tools land and never runs ahead of them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from agents.model import ToolSpec
from agents.roster import Roster, current_roster


@dataclass(frozen=True, slots=True)
class Capability:
    name: str
    promise: re.Pattern[str]  # words that claim this capability
    tools: frozenset[str]  # any one of these tools provides it
    en: str  # how it is said in a sentence ("Zee can ...")
    id: str


def words(pattern: str) -> re.Pattern[str]:
    """A capability's promise: words matched case-insensitively."""
    return re.compile(pattern, re.IGNORECASE)


# Ava's own capabilities; each specialist brings its own (agents/specialist.py), and the
# vocabulary is theirs in roster order, then hers.
LEAD_CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        "wakes",
        words(r"\b(remind(s|ing)?( you| the person)?|reminders?|wake notes?|notes? to your future self)\b"),
        frozenset({"schedule_wake"}),
        "remind you of things later",
        "ngingetin kamu nanti",
    ),
    Capability(
        "recall",
        words(r"\b(recalls?|knows the person|remembers? (facts|what you told))\b"),
        frozenset({"recall"}),
        "remember what you tell me",
        "ingat hal yang kamu ceritain",
    ),
)


def capabilities() -> tuple[Capability, ...]:
    """Every capability the room can have, in the order the team layer states them."""
    return _vocabulary(current_roster())


@functools.cache
def _vocabulary(team: Roster) -> tuple[Capability, ...]:
    found: list[Capability] = []
    for specialist in team.specialists:
        for capability in specialist.capabilities:
            assert isinstance(capability, Capability), f"{specialist.agent.name}: {capability!r} is not a Capability"
            found.append(capability)
    return (*found, *LEAD_CAPABILITIES)


_TAG = re.compile(r"\s*\{(tools|without):\s*([^}]*)\}\s*$")


def provides(capability: Capability, specs: Iterable[ToolSpec | str]) -> bool:
    """True when one of the tools provides the capability: named for it, or (for a tool
    named otherwise) described with the very words that promise it ("Play a track")."""
    for spec in specs:
        name = spec if isinstance(spec, str) else spec.name
        if name in capability.tools:
            return True
        # Ava's handoff tools (named for a specialist) describe it, not a capability of her own.
        handoff = name in current_roster().by_name
        if not isinstance(spec, str) and not handoff and capability.promise.search(spec.description):
            return True
    return False


# A sentence that says something cannot be done promises nothing.
_NEGATION = re.compile(r"\b(can't|cannot|can not|not|no|never|isn't|aren't|belum|nggak|gak|tidak|bukan)\b", re.I)


def promised(text: str) -> list[Capability]:
    """The capabilities a text claims, by the vocabulary above (or its own wording)."""
    found: list[Capability] = []
    for sentence in re.split(r"(?<=[.!?;:])\s+|\n", text):
        if _NEGATION.search(sentence):
            continue
        low = sentence.lower()
        found += [
            c
            for c in capabilities()
            if c not in found and (c.promise.search(sentence) or c.en.lower() in low or c.id.lower() in low)
        ]
    return found


def offered(specs: Iterable[ToolSpec | str]) -> list[Capability]:
    """What an agent with these tools can really do, in vocabulary order."""
    listed = list(specs)
    return [c for c in capabilities() if provides(c, listed)]


def _keeps(line: str, tools: Collection[str]) -> bool:
    match = _TAG.search(line)
    if match is None:
        return True
    names = [name.strip() for name in match.group(2).split(",") if name.strip()]
    if match.group(1) == "without":
        return not any(name in tools for name in names)
    if names == ["none"]:
        return not tools
    return all(name in tools for name in names)


def render_persona(persona: str, tools: Collection[str]) -> str:
    """A persona or layer as the agent reads it: a line tagged `{tools: a, b}` stays only
    when the agent has every tool named, `{tools: none}` only when it has no tools at all,
    and `{without: a}` only when it lacks them; the tags themselves never reach the model."""
    return _rendered(persona, frozenset(tools))


@functools.lru_cache(maxsize=256)
def _rendered(persona: str, tools: frozenset[str]) -> str:
    # The same few personas and layers with the same tools, run after run: rendered once each.
    kept = "\n".join(_TAG.sub("", line) for line in persona.splitlines() if _keeps(line, tools))
    return re.sub(r"\n{3,}", "\n\n", kept).strip()  # a dropped section leaves no gap


def hollow(text: str, specs: Iterable[ToolSpec | str]) -> list[str]:
    """The capabilities a text promises that none of these tools provides (names)."""
    tools = list(specs)
    return [c.name for c in promised(text) if not provides(c, tools)]
