"""What the linking API does (docs/agents.md#linking): each integration's state for a person, the
consent URL, completing a link, and disconnecting (revoking upstream where possible).

An integration is `live` when the person linked it and this server holds the vendor's
credentials, `sandbox` when they have not linked it (their agent uses the sandbox), and
`unavailable` when they linked it but this server can no longer reach the vendor (no
credentials configured now); their agent then falls back to the sandbox too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from agents.integrations.linking import (
    IntegrationUnknown,
    LinkingUnavailable,
    LinkRejected,
    Links,
    StateSigner,
)
from agents.integrations.oauth import AccessTokens, OAuthClient

Status = Literal["live", "sandbox", "unavailable"]
# An account id at a vendor that links by it (a Tuya app account's uid).
_ACCOUNT_ID = re.compile(r"^[A-Za-z0-9]{6,64}$")


@dataclass(frozen=True, slots=True)
class Linkable:
    """One integration a person can link, as its specialist's package declares it."""

    name: str
    display_name: str
    agent: str
    # Linked by the person's account id at the vendor (no OAuth): possible when this server
    # holds the vendor's own credentials (`enabled`).
    by_account_id: bool = False
    enabled: bool = False


@dataclass(frozen=True, slots=True)
class IntegrationState:
    name: str
    display_name: str
    agent: str
    status: Status
    linked: bool
    can_link: bool
    linked_at: datetime | None
    by_account_id: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "display_name": self.display_name,
            "agent": self.agent,
            "status": self.status,
            "linked": self.linked,
            "can_link": self.can_link,
            "linked_at": self.linked_at.isoformat() if self.linked_at else None,
            # How a client links it: the provider's consent page, or the vendor account's id.
            "links_by": "account_id" if self.by_account_id else "oauth",
        }


class Connections:
    def __init__(
        self,
        *,
        links: Links,
        signer: StateSigner,
        oauth: Mapping[str, OAuthClient],
        tokens: Mapping[str, AccessTokens],
        integrations: Sequence[Linkable],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._links = links
        self._signer = signer
        self._oauth = dict(oauth)
        self._tokens = dict(tokens)
        self._integrations = {i.name: i for i in sorted(integrations, key=lambda i: i.name)}
        self._clock = clock

    def _known(self, name: str) -> str:
        if name not in self._integrations:
            known = sorted(self._integrations)
            choices = ", ".join(known[:-1]) + " or " + known[-1] if len(known) > 1 else "".join(known)
            raise IntegrationUnknown(f"There is no integration {name[:40]!r}; try {choices}.")
        return name

    def can_link(self, name: str) -> bool:
        known = self._integrations.get(name)
        return name in self._oauth or (known is not None and known.by_account_id and known.enabled)

    async def states(self, *, person_id: str) -> list[IntegrationState]:
        links = await self._links.all(person_id=person_id)
        states = []
        for name, known in self._integrations.items():
            link = links.get(name)
            status: Status = "sandbox" if link is None else ("live" if self.can_link(name) else "unavailable")
            states.append(
                IntegrationState(
                    name,
                    known.display_name,
                    known.agent,
                    status,
                    link is not None,
                    self.can_link(name),
                    link.linked_at if link else None,
                    known.by_account_id,
                )
            )
        return states

    def auth_url(self, *, person_id: str, name: str) -> str:
        client = self._oauth.get(self._known(name))
        if client is None:
            known = self._integrations[name]
            raise LinkingUnavailable(
                f"{known.display_name} links by account id: POST the connection with account_id."
                if known.by_account_id
                else f"This server has no {known.display_name} credentials configured."
            )
        return client.authorization_url(self._signer.issue(person_id=person_id, integration=name, now=self._clock()))

    async def connect(
        self, *, person_id: str, name: str, code: str | None, state: str | None, account_id: str | None
    ) -> IntegrationState:
        known = self._integrations[self._known(name)]
        if not self.can_link(name):
            raise LinkingUnavailable(f"This server has no {known.display_name} credentials configured.")
        if known.by_account_id:
            if account_id is None or not _ACCOUNT_ID.match(account_id):
                raise LinkRejected(
                    f"Send the {known.display_name} app account's uid as account_id (letters and digits)."
                )
            await self._links.save(person_id=person_id, integration=name, refresh_token=None, account_id=account_id)
        else:
            if not code or not state:
                raise LinkRejected("Send the code and state from the provider's redirect.")
            # The state first: a forged or stale one never reaches the provider.
            self._signer.verify(state, person_id=person_id, integration=name, now=self._clock())
            grant = await self._oauth[name].exchange(code)
            assert grant.refresh_token is not None
            await self._links.save(
                person_id=person_id,
                integration=name,
                refresh_token=grant.refresh_token,
                account_id=None,
                scopes=grant.scopes,
            )
            if name in self._tokens:
                self._tokens[name].forget(person_id)
        return next(s for s in await self.states(person_id=person_id) if s.name == name)

    async def disconnect(self, *, person_id: str, name: str) -> dict[str, Any]:
        self._known(name)
        link = await self._links.delete(person_id=person_id, integration=name)
        if link is None:
            return {"name": name, "was_linked": False, "revoked_upstream": False}
        if name in self._tokens:
            self._tokens[name].forget(person_id)
        client = self._oauth.get(name)
        revoked = bool(client and link.refresh_token and await client.revoke(link.refresh_token))
        return {"name": name, "was_linked": True, "revoked_upstream": revoked}
