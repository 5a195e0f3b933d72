"""Which adapter serves a person's agent, chosen per run (docs/agents.md#tools-and-integrations).

Linked and the server holds the vendor's credentials -> the live adapter; otherwise the
sandbox. The choice travels with every tool result (`"account": "sandbox"` or `"live"`),
so the agent can always tell the person whether it acted on their real account.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

Kind = Literal["sandbox", "live"]
P = TypeVar("P")

# (person id, integration name) -> does the person hold a link to it?
IsLinked = Callable[[str, str], Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class Account(Generic[P]):
    port: P
    kind: Kind


@dataclass(frozen=True, slots=True)
class Integration(Generic[P]):
    """One integration's two adapters and the rule that picks between them."""

    name: str  # "tuya", "spotify", "google"
    sandbox: P
    live: P | None = None  # None when the server has no credentials for the vendor
    is_linked: IsLinked | None = None

    async def for_person(self, person_id: str) -> Account[P]:
        if self.live is not None and self.is_linked is not None and await self.is_linked(person_id, self.name):
            return Account(self.live, "live")
        return Account(self.sandbox, "sandbox")

    def once(self, person_id: str) -> Callable[[], Awaitable[Account[P]]]:
        """The choice for one run, made on the first tool call (tool factories do no I/O)
        and kept for the rest of the run, so one run never mixes two accounts."""
        chosen: list[Account[P]] = []

        async def choose() -> Account[P]:
            if not chosen:
                chosen.append(await self.for_person(person_id))
            return chosen[0]

        return choose
