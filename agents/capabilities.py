"""What the agents may promise, tied to the tools that keep the promise.

A persona, a team description or an offline greeting may only say an agent can do what
one of its registered tools really does (SPEC §6, issue 8). This module is the small
shared vocabulary for that: each capability names the words that promise it and the
tool names that provide it, and says it in English and Indonesian for the offline model.

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


@dataclass(frozen=True, slots=True)
class Capability:
    name: str
    promise: re.Pattern[str]  # words that claim this capability
    tools: frozenset[str]  # any one of these tools provides it
    en: str  # how it is said in a sentence ("Zee can ...")
    id: str


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        "home_read",
        _words(r"\b(lists? (the person's |your )?devices|device status|reads? a device)"),
        frozenset({"list_devices", "device_status"}),
        "check your devices",
        "ngecek perangkat",
    ),
    Capability(
        "home_control",
        _words(r"\b(switch(es)? (lights|on|off)|turns? (lights )?(on|off)|dims?|opens? (and closes )?curtains)\b"),
        frozenset({"send_commands"}),
        "switch and dim your lights, set the AC and move the curtains",
        "nyalain, matiin, dan redupin lampu, ngatur AC, dan buka tutup gorden",
    ),
    Capability(
        "music",
        _words(r"\b(plays?|pauses?|skips?|search(es)? tracks|sets? the volume|now playing)\b"),
        frozenset({"play", "pause", "search_tracks", "now_playing", "next_track", "skip", "set_volume"}),
        "play your music",
        "muterin musik",
    ),
    Capability(
        "mail",
        _words(r"\b(reads?|sends?|check(s)?) (and sends? )?(your |the person's )?(e-?mails?|mail|inbox)\b"),
        frozenset({"read_messages", "send_email", "search_messages", "read_email"}),
        "read and send your email",
        "baca dan kirim email",
    ),
    Capability(
        "calendar",
        _words(r"\b(lists?|adds?|reads?) (and adds? )?(calendar )?events\b"),
        frozenset({"list_events", "add_event"}),
        "see and add calendar events",
        "lihat dan nambah acara di kalender",
    ),
    Capability(
        "contacts",
        _words(r"\b(reads?|lists?|adds?) (and adds? )?contacts\b"),
        frozenset({"list_contacts", "add_contact"}),
        "look up and add contacts",
        "cari dan nambah kontak",
    ),
    Capability(
        "wakes",
        _words(r"\b(remind(s|ing)?( you| the person)?|reminders?|wake notes?|notes? to your future self)\b"),
        frozenset({"schedule_wake"}),
        "remind you of things later",
        "ngingetin kamu nanti",
    ),
    Capability(
        "recall",
        _words(r"\b(recalls?|knows the person|remembers? (facts|what you told))\b"),
        frozenset({"recall"}),
        "remember what you tell me",
        "ingat hal yang kamu ceritain",
    ),
)

# Ava's handoff tools describe a specialist, not a capability of their own.
_HANDOFFS = frozenset({"zee", "yori", "rafal"})

_TAG = re.compile(r"\s*\{(tools|without):\s*([^}]*)\}\s*$")


def provides(capability: Capability, specs: Iterable[ToolSpec | str]) -> bool:
    """True when one of the tools provides the capability: named for it, or (for a tool
    named otherwise) described with the very words that promise it ("Play a track")."""
    for spec in specs:
        name = spec if isinstance(spec, str) else spec.name
        if name in capability.tools:
            return True
        if not isinstance(spec, str) and name not in _HANDOFFS and capability.promise.search(spec.description):
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
            for c in CAPABILITIES
            if c not in found and (c.promise.search(sentence) or c.en.lower() in low or c.id.lower() in low)
        ]
    return found


def offered(specs: Iterable[ToolSpec | str]) -> list[Capability]:
    """What an agent with these tools can really do, in vocabulary order."""
    listed = list(specs)
    return [c for c in CAPABILITIES if provides(c, listed)]


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
