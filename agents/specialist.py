"""Everything about one specialist, declared in its own package.

A specialist package (`agents/zee/`, `agents/yori/`, `agents/rafal/`, or a package of the
same shape anywhere on the path) has an `agent.py` whose `SPECIALIST` says, in one place:
who it is (`AgentSpec`: handle, display name, domain, what Ava reads about it, its
`persona.txt`), what Ava may say it does (`capabilities`), the port its tools act on with
its sandbox and live adapters and how the settings choose between them (`Port`), the
outside account a person links for it (`Vendor`), its tools, and how the offline model
understands its requests (`SkillSet`). Tables of its own go in the package's `sql/`.

The roster (agents/roster.py) lists the packages; the composition root builds each port
from its declaration (agents/specialists.py) and registers its tools; nothing else names
a specialist. docs/adding-an-agent.md walks through writing one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import asyncpg
import httpx
from pydantic_settings import BaseSettings, SettingsConfigDict

from agents.capabilities import Capability
from agents.integrations.accounts import Account
from agents.integrations.confirmations import PendingActions
from agents.integrations.oauth import AccessTokens, Provider
from agents.offline.skillset import SkillSet
from agents.roster import AgentSpec
from agents.toolbox import RunContext
from agents.tools import Tool

P = TypeVar("P")


class VendorSettings(BaseSettings):
    """A package's own settings (its vendor's credentials), read from the environment or
    `.env` by the composition root (settings.py `Settings.for_specialist`), never here."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    def client(self) -> tuple[str, str] | None:
        """The app's (client id, client secret) at the vendor, or None: sandbox only."""
        return None


class NoSettings(VendorSettings):
    """A specialist with no outside service to configure."""


@dataclass(frozen=True, slots=True)
class Vendor:
    """The outside account a person links so the specialist acts on the real thing."""

    name: str  # the integration's name in links and URLs: "google", "spotify", "tuya"
    display_name: str
    # How a person links it: OAuth with this provider, or (None) by naming their account
    # id at the vendor, which the server's own credentials then act for (Tuya).
    oauth: Provider | None = None


@dataclass(frozen=True, slots=True)
class LiveParts:
    """What a live adapter is built from; the composition root supplies it."""

    http: httpx.AsyncClient  # one client for every vendor, closed with the process
    settings: VendorSettings  # the package's own settings, as declared in `Port.settings`
    tokens: AccessTokens | None  # the person's access tokens, when the vendor links by OAuth
    account_of: Callable[[str], Awaitable[str | None]]  # person id -> their linked account id


# The port chosen for one run (sandbox or live), asked for on the first tool call.
Choose = Callable[[], Awaitable[Account[P]]]


@dataclass(frozen=True, slots=True)
class Port(Generic[P]):
    """The specialist's port and its two adapters."""

    kind: str  # what the adapters serve, as the startup log line names it: "smart_home"
    sandbox: Callable[[asyncpg.Pool], P]  # a stateful stand-in every person has
    # The live adapter when this server holds the vendor's credentials, else None.
    live: Callable[[LiveParts], P | None] = lambda _parts: None
    vendor: Vendor | None = None
    settings: type[VendorSettings] = NoSettings


# (the port for this run, the run, the pending risky actions) -> the tools bound to the run.
ToolsFor = Callable[[Choose[P], RunContext, PendingActions], Sequence[Tool]]


@dataclass(frozen=True, slots=True)
class Specialist(Generic[P]):
    agent: AgentSpec
    capabilities: tuple[Capability, ...]  # what a persona or Ava may promise it does
    port: Port[P]
    tools: ToolsFor[P]
    offline: SkillSet


def declared(value: Any) -> Specialist[Any]:
    """A roster entry as the full declaration (the roster stores it by its protocol)."""
    assert isinstance(value, Specialist), f"{value!r} is not a Specialist"
    return value
