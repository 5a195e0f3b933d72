"""Who is in the room: Ava, and the specialists this deployment installed.

A specialist is one package (`agents/zee/`, or any importable package of the same shape)
whose `agent.py` declares a `SPECIALIST` (agents/specialist.py). The roster is the list
of those packages, written once: `BUILT_IN` below, or the list the composition root
installs from the settings. Everything that names the agents (routing's mentions, Ava's
handoff tools, the team layer, the room layer, the offline model's vocabulary, the
recogniser's prompt of names (voice/vocabulary.py), the capability checks, the terminal's
completion) reads it from here, so a new specialist is
added by adding its package name to that list (docs/adding-an-agent.md).

Packages are imported by name (`importlib`), never by an import statement: the roster
sits below the packages it lists, which import the agents' shared parts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal, Protocol, overload

AgentRole = Literal["lead", "specialist"]

# The specialists a deployment has unless told otherwise, in the order the team is listed.
BUILT_IN: tuple[str, ...] = ("agents.zee", "agents.yori", "agents.rafal")

# Authors a message can have besides the agents: the person and Ava's wake notes.
HUMAN = "human"
POSTERA = "postera"

# A handle is what people type after "@" and what the thread stores as an author.
_HANDLE = re.compile(r"^[a-z][a-z0-9_]{1,30}$")


class RosterInvalid(Exception):
    """A specialist package that cannot join the room (a programmer's or operator's mistake)."""


@dataclass(frozen=True, slots=True)
class AgentSpec:
    name: str  # the lower-case handle used in @mentions, tool names and message authors
    display_name: str
    role: AgentRole
    domain: str  # a few words naming what the agent looks after
    description: str  # what the lead reads when deciding whom to hand work to
    package: str = field(default="", compare=False)  # where `persona.txt` lives (default agents.<name>)

    @property
    def persona(self) -> str:
        """The agent's own instruction: persona, domain rules and tool guidance."""
        return _persona_text(self.package or f"agents.{self.name}")


@functools.cache
def _persona_text(package: str) -> str:
    # A packaged file that never changes while the process runs: read once, not per run.
    return resources.files(package).joinpath("persona.txt").read_text("utf-8").strip()


class Declared(Protocol):
    """What the roster reads of a package's declaration (agents/specialist.py `Specialist`).

    The parts lower modules need are typed by the module that owns their type (the
    capabilities by agents/capabilities.py, the offline skills by agents/offline/), since
    the roster sits below both."""

    @property
    def agent(self) -> AgentSpec: ...
    @property
    def capabilities(self) -> tuple[Any, ...]: ...
    @property
    def offline(self) -> Any: ...


AVA = AgentSpec("ava", "Ava", "lead", "you, the lead", "Leads the group and orders work across the specialists.")


@dataclass(frozen=True, eq=False)
class Roster:
    """The installed specialists, in order, and what is derived from them (worked out once
    per roster: a roster never changes; installing another replaces it)."""

    specialists: tuple[Declared, ...]
    packages: tuple[str, ...] = ()  # where each specialist was declared, in the same order

    @functools.cached_property
    def agents(self) -> dict[str, AgentSpec]:
        return {AVA.name: AVA} | {s.agent.name: s.agent for s in self.specialists}

    @functools.cached_property
    def specs(self) -> tuple[AgentSpec, ...]:
        return tuple(s.agent for s in self.specialists)

    @functools.cached_property
    def by_name(self) -> dict[str, Declared]:
        return {s.agent.name: s for s in self.specialists}

    @functools.cached_property
    def mention(self) -> re.Pattern[str]:
        """`@name` naming a member, word-bounded: not after a word character, '@' or '.'
        (e-mail addresses, "@@zee"), not before a word character (a longer name)."""
        names = "|".join(sorted(self.agents, key=lambda n: (-len(n), n)))
        return re.compile(r"(?<![\w@.])@(" + names + r")(?!\w)", re.IGNORECASE)


def _checked(specialists: Sequence[Declared], packages: Sequence[str]) -> Roster:
    seen: set[str] = {AVA.name, HUMAN, POSTERA}
    for specialist in specialists:
        spec = specialist.agent
        if not _HANDLE.match(spec.name):
            raise RosterInvalid(f"agent handle {spec.name!r} must be 2-31 lower-case letters, digits or _")
        if spec.name in seen:
            raise RosterInvalid(f"two members of the room are called {spec.name!r}")
        if spec.role != "specialist":
            raise RosterInvalid(f"{spec.name!r}: only Ava leads; a package declares a specialist")
        seen.add(spec.name)
    return Roster(tuple(specialists), tuple(packages))


def _is_declaration(value: object) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type) and hasattr(value, "agent")


def load(packages: Sequence[str]) -> Roster:
    """The specialists declared by these packages (each `<package>.agent.SPECIALIST`)."""
    found: list[Declared] = []
    for package in packages:
        try:
            module = importlib.import_module(f"{package}.agent")
        except ModuleNotFoundError as exc:
            raise RosterInvalid(f"no specialist package {package!r} ({exc.name} not found)") from exc
        specialist: Any = getattr(module, "SPECIALIST", None)
        if not _is_declaration(specialist):
            raise RosterInvalid(f"{package}.agent declares no SPECIALIST")
        if not specialist.agent.package:  # its persona.txt is found beside its agent.py
            specialist = dataclasses.replace(specialist, agent=dataclasses.replace(specialist.agent, package=package))
        found.append(specialist)
    return _checked(found, packages)


_installed: list[Roster] = []


def current_roster() -> Roster:
    """The roster this process runs with: the built-in team until another is installed."""
    if not _installed:
        _installed.append(load(BUILT_IN))
    return _installed[-1]


def install(packages: Sequence[str]) -> Roster:
    """Make these packages the room (the composition root, once, at startup)."""
    chosen = load(packages)
    _installed[:] = [chosen]
    return chosen


@contextlib.contextmanager
def installed(packages: Sequence[str]) -> Iterator[Roster]:
    """The room with these packages for a while (a test's toy specialist), then as before."""
    before = list(_installed)
    try:
        yield install(packages)
    finally:
        _installed[:] = before


class _Agents(Mapping[str, AgentSpec]):
    """Every member by handle (Ava first), as the current roster has them."""

    def __getitem__(self, name: str) -> AgentSpec:
        return current_roster().agents[name]

    def __iter__(self) -> Iterator[str]:
        return iter(current_roster().agents)

    def __len__(self) -> int:
        return len(current_roster().agents)


class _Specialists(Sequence[AgentSpec]):
    """The specialists' specs in roster order, as the current roster has them."""

    @overload
    def __getitem__(self, index: int) -> AgentSpec: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[AgentSpec]: ...
    def __getitem__(self, index: int | slice) -> AgentSpec | Sequence[AgentSpec]:
        return current_roster().specs[index]

    def __len__(self) -> int:
        return len(current_roster().specs)


AGENTS: Mapping[str, AgentSpec] = _Agents()
SPECIALISTS: Sequence[AgentSpec] = _Specialists()
