"""Assembles the specialists' integrations for one deployment from plain values: the
sandboxes always, a live adapter for each vendor whose credentials the server holds,
the links store, the OAuth clients and the linking service.

The composition root reads the settings and passes them in; nothing here reads the
environment, so a test can build the same thing from literals.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
import httpx

from agents.integrations.accounts import Integration
from agents.integrations.confirmations import PendingActions, PersonSaid
from agents.integrations.connections import Connections
from agents.integrations.linking import Links, StateSigner, TokenCipher
from agents.integrations.oauth import GOOGLE, SPOTIFY, AccessTokens, OAuthClient
from agents.rafal.google import GoogleWorkspace
from agents.rafal.sandbox import SandboxWorkspace
from agents.rafal.workspace import Workspace
from agents.yori.music import MusicPlayer
from agents.yori.sandbox import SandboxMusic
from agents.yori.spotify import SpotifyMusic
from agents.zee.home import SmartHome
from agents.zee.sandbox import SandboxHome
from agents.zee.tuya import TuyaHome

# (client id, client secret), or None when the server has no app registered with the vendor.
ClientCredentials = tuple[str, str] | None


@dataclass(frozen=True, slots=True)
class VendorCredentials:
    google: ClientCredentials = None
    spotify: ClientCredentials = None
    tuya: ClientCredentials = None  # the cloud project's access id and secret
    tuya_base_url: str = "https://openapi.tuyaus.com"
    # Providers send the browser back to {base}/{integration}/callback.
    redirect_base_url: str = "http://127.0.0.1:8000/link"


@dataclass(frozen=True, slots=True)
class Specialists:
    """Each specialist's integration, the pending risky actions, and linking."""

    home: Integration[SmartHome]
    music: Integration[MusicPlayer]
    workspace: Integration[Workspace]
    pending: PendingActions
    connections: Connections


def build_specialists(
    *,
    pool: asyncpg.Pool,
    http: httpx.AsyncClient,
    credentials: VendorCredentials,
    token_key: bytes,
    state_key: bytes,
    person_said: PersonSaid,
) -> Specialists:
    links = Links(pool, TokenCipher(token_key))
    clients: dict[str, OAuthClient] = {}
    base = credentials.redirect_base_url.rstrip("/")
    for provider, pair in ((GOOGLE, credentials.google), (SPOTIFY, credentials.spotify)):
        if pair is not None:
            clients[provider.name] = OAuthClient(
                provider,
                client_id=pair[0],
                client_secret=pair[1],
                redirect_uri=f"{base}/{provider.name}/callback",
                http=http,
            )
    tokens = {name: AccessTokens(client, links) for name, client in clients.items()}

    async def tuya_uid(person_id: str) -> str | None:
        link = await links.get(person_id=person_id, integration="tuya")
        return link.account_id if link else None

    tuya = None
    if credentials.tuya is not None:
        client_id, secret = credentials.tuya
        tuya = TuyaHome(
            http=http, base_url=credentials.tuya_base_url, client_id=client_id, secret=secret, uid_of=tuya_uid
        )
    spotify = SpotifyMusic(http=http, tokens=tokens["spotify"]) if "spotify" in tokens else None
    google = GoogleWorkspace(http=http, tokens=tokens["google"]) if "google" in tokens else None
    return Specialists(
        home=Integration("tuya", SandboxHome(pool), tuya, links.is_linked),
        music=Integration("spotify", SandboxMusic(pool), spotify, links.is_linked),
        workspace=Integration("google", SandboxWorkspace(pool), google, links.is_linked),
        pending=PendingActions(pool, person_said=person_said),
        connections=Connections(
            links=links, signer=StateSigner(state_key), oauth=clients, tokens=tokens, tuya_enabled=tuya is not None
        ),
    )
