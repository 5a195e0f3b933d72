"""Who is in the room: the agents, their roles and the names routing recognises.

Each agent's persona lives in its own folder as text, so an agent module could join
another product unchanged; this module only lists them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Literal

AgentRole = Literal["lead", "specialist"]


@dataclass(frozen=True, slots=True)
class AgentSpec:
    name: str  # the lower-case handle used in @mentions, tool names and message authors
    display_name: str
    role: AgentRole
    domain: str  # a few words naming what the agent looks after
    description: str  # what the lead reads when deciding whom to hand work to

    @property
    def persona(self) -> str:
        """The agent's own instruction: persona, domain rules and tool guidance."""
        return _persona_text(self.name)


@functools.cache
def _persona_text(name: str) -> str:
    # A packaged file that never changes while the process runs: read once, not per run.
    return resources.files(f"agents.{name}").joinpath("persona.txt").read_text("utf-8").strip()


# Descriptions name each member's domain only: what a member can really do depends on the
# tools this deployment registers, and the lead reads that in her team layer (agents/team.py).
AVA = AgentSpec("ava", "Ava", "lead", "you, the lead", "Leads the group and orders work across the specialists.")
ZEE = AgentSpec(
    "zee",
    "Zee",
    "specialist",
    "smart home",
    "Smart-home specialist: the person's lights, air conditioner, curtains and other devices. "
    "Acts only in the present; never give Zee work for a later time.",
)
YORI = AgentSpec(
    "yori",
    "Yori",
    "specialist",
    "music",
    "Music specialist (Spotify). Acts only in the present.",
)
RAFAL = AgentSpec(
    "rafal",
    "Rafal",
    "specialist",
    "email, calendar and contacts",
    "Google Workspace specialist: email, calendar and contacts. Acts only in the present.",
)

AGENTS: dict[str, AgentSpec] = {a.name: a for a in (AVA, ZEE, YORI, RAFAL)}
SPECIALISTS: tuple[AgentSpec, ...] = (ZEE, YORI, RAFAL)
# Authors a message can have besides the agents: the person and Ava's wake notes.
HUMAN = "human"
POSTERA = "postera"
