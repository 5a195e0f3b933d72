"""Assembles the installed specialists' integrations for one deployment from plain values:
each package's sandbox always, its live adapter where this server holds the vendor's
credentials, the links store, the OAuth clients and the linking service, and the tools
each specialist gets.

The composition root reads the settings (each package's own `VendorSettings` among them)
and passes them in; nothing here reads the environment, so a test can build the same
thing from literals. Nothing here names a specialist: it reads their declarations
(agents/specialist.py) from the roster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx

from agents.integrations.accounts import Integration
from agents.integrations.confirmations import PendingActions, PersonSaid
from agents.integrations.connections import Connections, Linkable
from agents.integrations.linking import Links, StateSigner, TokenCipher
from agents.integrations.oauth import AccessTokens, OAuthClient
from agents.roster import current_roster
from agents.specialist import LiveParts, NoSettings, Specialist, VendorSettings, declared
from agents.toolbox import Toolbox


@dataclass(frozen=True, slots=True)
class Specialists:
    """Each installed specialist's integration (by handle), the pending risky actions, and linking."""

    integrations: Mapping[str, Integration[Any]]
    pending: PendingActions
    connections: Connections

    def adapters(self) -> dict[str, str]:
        """What serves each specialist's port, for the startup log line: "SandboxHome + TuyaHome"."""
        described: dict[str, str] = {}
        for name, integration in self.integrations.items():
            kind = declared(current_roster().by_name[name]).port.kind
            described[kind] = " + ".join(
                type(a).__name__ for a in (integration.sandbox, integration.live) if a is not None
            )
        return described

    def register_tools(self, toolbox: Toolbox) -> None:
        """Each specialist's tools, on the port chosen for the person on the run's first call."""
        for name, integration in self.integrations.items():
            specialist = declared(current_roster().by_name[name])

            def tools(context: Any, specialist: Specialist[Any] = specialist, integration: Any = integration) -> Any:
                return specialist.tools(integration.once(context.person_id), context, self.pending)

            toolbox.register(name, tools)


def vendor_settings(specialist: Specialist[Any], given: Mapping[str, VendorSettings]) -> VendorSettings:
    """The package's settings as the root read them (its declared defaults when none were)."""
    chosen = given.get(specialist.agent.name)
    if chosen is None:
        return NoSettings() if specialist.port.settings is NoSettings else specialist.port.settings()
    assert isinstance(chosen, specialist.port.settings), f"{specialist.agent.name}: settings of the wrong kind"
    return chosen


def build_specialists(
    *,
    pool: asyncpg.Pool,
    http: httpx.AsyncClient,
    settings: Mapping[str, VendorSettings],
    redirect_base_url: str,
    token_key: bytes,
    state_key: bytes,
    person_said: PersonSaid,
) -> Specialists:
    """`settings`: each specialist's own settings by handle, read by the composition root.
    Providers send the browser back to {redirect_base_url}/{integration}/callback."""
    links = Links(pool, TokenCipher(token_key))
    base = redirect_base_url.rstrip("/")
    clients: dict[str, OAuthClient] = {}
    tokens: dict[str, AccessTokens] = {}
    integrations: dict[str, Integration[Any]] = {}
    linkable: list[Linkable] = []
    for entry in current_roster().specialists:
        specialist = declared(entry)
        port, own = specialist.port, vendor_settings(specialist, settings)
        vendor, client = port.vendor, own.client()
        if vendor is not None and vendor.oauth is not None and client is not None:
            clients[vendor.name] = OAuthClient(
                vendor.oauth,
                client_id=client[0],
                client_secret=client[1],
                redirect_uri=f"{base}/{vendor.name}/callback",
                http=http,
            )
            tokens[vendor.name] = AccessTokens(clients[vendor.name], links)

        async def account_of(person_id: str, integration: str = vendor.name if vendor else "") -> str | None:
            link = await links.get(person_id=person_id, integration=integration) if integration else None
            return link.account_id if link else None

        live = port.live(
            LiveParts(
                http=http,
                settings=own,
                tokens=tokens.get(vendor.name) if vendor else None,
                account_of=account_of,
            )
        )
        integrations[specialist.agent.name] = Integration(
            vendor.name if vendor else specialist.agent.name, port.sandbox(pool), live, links.is_linked
        )
        if vendor is not None:
            by_account_id = vendor.oauth is None
            linkable.append(
                Linkable(
                    vendor.name,
                    vendor.display_name,
                    specialist.agent.name,
                    by_account_id=by_account_id,
                    enabled=by_account_id and live is not None,
                )
            )
    return Specialists(
        integrations=integrations,
        pending=PendingActions(pool, person_said=person_said),
        connections=Connections(
            links=links, signer=StateSigner(state_key), oauth=clients, tokens=tokens, integrations=linkable
        ),
    )
