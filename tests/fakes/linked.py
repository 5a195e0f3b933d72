"""Live adapters wired to the vendor fakes, with real links and token refresh: what the
contract suites run against besides the sandboxes."""

from __future__ import annotations

import asyncpg
import httpx

from agents import TokenCipher
from agents.integrations.linking import Links
from agents.integrations.oauth import AccessTokens, OAuthClient
from agents.rafal.agent import GOOGLE
from agents.yori.agent import SPOTIFY
from tests.fakes.vendors import FakeGoogle, FakeOAuth, FakeSpotify, FakeTuya

PEOPLE = ("usr_1", "usr_2")


def client_for(*handlers: object) -> httpx.AsyncClient:
    """One client whose transport sends each request to the fake serving that host."""
    fakes = list(handlers)

    def route(request: httpx.Request) -> httpx.Response:
        host = request.url.host
        for fake in fakes:
            if isinstance(fake, FakeSpotify) and host.endswith("spotify.com"):
                return fake.handler(request)
            if isinstance(fake, FakeGoogle) and host.endswith("googleapis.com"):
                return fake.handler(request)
            if isinstance(fake, FakeTuya) and "tuya" in host:
                return fake.handler(request)
        return httpx.Response(599, text=f"no fake for {host}")

    return httpx.AsyncClient(transport=httpx.MockTransport(route), timeout=5)


async def linked_tokens(pool: asyncpg.Pool, http: httpx.AsyncClient, oauth: FakeOAuth, *, google: bool) -> AccessTokens:
    links = Links(pool, TokenCipher(TokenCipher.new_key()))
    provider, name = (GOOGLE, "google") if google else (SPOTIFY, "spotify")
    for person in PEOPLE:
        await links.save(person_id=person, integration=name, refresh_token=oauth.link(person), account_id=None)
    client = OAuthClient(
        provider, client_id=oauth.client_id, client_secret=oauth.client_secret, redirect_uri="http://t/cb", http=http
    )
    return AccessTokens(client, links)
