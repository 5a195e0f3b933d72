"""Who is in the room: the agents, their roles and the names routing recognises.

Each agent's persona lives in its own folder as text, so an agent module could join
another product unchanged; this module only lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Literal

AgentRole = Literal["lead", "specialist"]


@dataclass(frozen=True, slots=True)
class AgentSpec:
    name: str  # the lower-case handle used in @mentions, tool names and message authors
    display_name: str
    role: AgentRole
    description: str  # what the lead reads when deciding whom to hand work to

    @property
    def persona(self) -> str:
        """The agent's own instruction: persona, domain rules and tool guidance."""
        return resources.files(f"agents.{self.name}").joinpath("persona.txt").read_text("utf-8").strip()


AVA = AgentSpec("ava", "Ava", "lead", "Leads the group, keeps wake notes and knows the person.")
ZEE = AgentSpec(
    "zee",
    "Zee",
    "specialist",
    "Smart-home specialist: lists the person's devices with their status, reads a device's "
    "status and switches lights, air conditioners, curtains and other Tuya devices. Acts only "
    "in the present; never give Zee work for a later time.",
)
YORI = AgentSpec(
    "yori",
    "Yori",
    "specialist",
    "Music specialist on Spotify: searches tracks, lists playlists, plays, pauses, skips and "
    "sets the volume. Acts only in the present.",
)
RAFAL = AgentSpec(
    "rafal",
    "Rafal",
    "specialist",
    "Google Workspace specialist: reads and sends email, lists and adds calendar events, reads "
    "and adds contacts. Acts only in the present.",
)

AGENTS: dict[str, AgentSpec] = {a.name: a for a in (AVA, ZEE, YORI, RAFAL)}
SPECIALISTS: tuple[AgentSpec, ...] = (ZEE, YORI, RAFAL)
# Authors a message can have besides the agents: the person and Ava's wake notes.
HUMAN = "human"
POSTERA = "postera"
