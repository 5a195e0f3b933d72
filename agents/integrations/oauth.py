"""OAuth 2 authorization-code clients, on httpx, and the per-person access-token cache the
live adapters read.

Each provider (declared by the specialist package that uses it: Google by Rafal's,
Spotify by Yori's) differs only in its URLs, scopes, how the client authenticates at the
token endpoint (in the form, or HTTP Basic) and whether it can revoke (Google can;
Spotify offers no revoke endpoint, so disconnecting only forgets). Errors
become the linking errors (`LinkRejected`, `ProviderUnavailable`) while linking, and the
agents' hints (`TokenExpired`, `RateLimited`) while a tool runs.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx

from agents.integrations.hints import not_linked, rate_limited, retry_after_s, token_expired, unavailable
from agents.integrations.linking import LinkRejected, Links, ProviderUnavailable

# An access token is renewed this long before the provider says it expires.
_EARLY_S = 60


@dataclass(frozen=True, slots=True)
class Provider:
    name: str  # the integration: "google" | "spotify"
    display_name: str
    authorize_url: str
    token_url: str
    revoke_url: str | None
    scopes: tuple[str, ...]
    basic_auth: bool  # client credentials in an Authorization header instead of the form
    extra_authorize: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Grant:
    access_token: str
    expires_in_s: int
    refresh_token: str | None
    scopes: str


class OAuthClient:
    """One provider, one registered app (client id, secret, redirect URI)."""

    def __init__(
        self, provider: Provider, *, client_id: str, client_secret: str, redirect_uri: str, http: httpx.AsyncClient
    ) -> None:
        self.provider = provider
        self._client_id = client_id
        self._client_secret = client_secret
        self._redirect_uri = redirect_uri
        self._http = http

    def authorization_url(self, state: str) -> str:
        query = {
            "client_id": self._client_id,
            "redirect_uri": self._redirect_uri,
            "response_type": "code",
            "scope": " ".join(self.provider.scopes),
            "state": state,
            **self.provider.extra_authorize,
        }
        return f"{self.provider.authorize_url}?{urlencode(query)}"

    async def _token_call(self, form: dict[str, str]) -> httpx.Response:
        try:
            if self.provider.basic_auth:
                basic = httpx.BasicAuth(self._client_id, self._client_secret)
                return await self._http.post(self.provider.token_url, data=form, auth=basic)
            form = {**form, "client_id": self._client_id, "client_secret": self._client_secret}
            return await self._http.post(self.provider.token_url, data=form)
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(f"{self.provider.display_name} did not answer.") from exc

    async def exchange(self, code: str) -> Grant:
        """The grant for an authorization code from the provider's redirect."""
        response = await self._token_call(
            {"grant_type": "authorization_code", "code": code, "redirect_uri": self._redirect_uri}
        )
        if response.status_code in (400, 401):
            raise LinkRejected(f"{self.provider.display_name} refused the code; start linking again.")
        if response.status_code != 200:
            raise ProviderUnavailable(f"{self.provider.display_name} answered {response.status_code}.")
        grant = _grant(response.json())
        if grant.refresh_token is None:
            raise LinkRejected(f"{self.provider.display_name} gave no refresh token; start linking again.")
        granted = set(grant.scopes.split())
        if grant.scopes and not set(self.provider.scopes) <= granted:
            raise LinkRejected("Keep every permission selected when linking; some were turned off.")
        return grant

    async def refresh(self, refresh_token: str) -> Grant:
        """A fresh access token; the hints are for the agent that needed it."""
        try:
            response = await self._token_call({"grant_type": "refresh_token", "refresh_token": refresh_token})
        except ProviderUnavailable as exc:
            raise unavailable(self.provider.display_name) from exc
        if response.status_code == 429:
            wait_s = retry_after_s(response.headers.get("retry-after"))
            raise rate_limited(self.provider.display_name, retry_after_s=wait_s)
        if response.status_code in (400, 401):  # invalid_grant: revoked, expired or rotated away
            raise token_expired(self.provider.display_name)
        if response.status_code != 200:
            raise unavailable(self.provider.display_name)
        return _grant(response.json())

    async def revoke(self, token: str) -> bool:
        """Revoke the grant upstream where the provider can; False where it cannot or failed."""
        if self.provider.revoke_url is None:
            return False
        try:
            response = await self._http.post(self.provider.revoke_url, data={"token": token})
        except httpx.HTTPError:
            return False
        return response.status_code == 200


def _grant(body: dict[str, Any]) -> Grant:
    token = body.get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderUnavailable("The provider's token response had no access token.")
    refresh = body.get("refresh_token")
    return Grant(
        access_token=token,
        expires_in_s=int(body.get("expires_in", 3600)),
        refresh_token=refresh if isinstance(refresh, str) and refresh else None,
        scopes=str(body.get("scope", "")),
    )


class AccessTokens:
    """Access tokens per person for one provider, refreshed from the sealed refresh token
    shortly before they expire, and dropped when the vendor says one is no longer good."""

    def __init__(self, client: OAuthClient, links: Links) -> None:
        self._client = client
        self._links = links
        self._cache: dict[str, tuple[str, float]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def token(self, person_id: str) -> str:
        cached = self._cache.get(person_id)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        # One refresh per person at a time: Spotify may rotate the refresh token.
        lock = self._locks.setdefault(person_id, asyncio.Lock())
        async with lock:
            cached = self._cache.get(person_id)
            if cached is not None and cached[1] > time.monotonic():
                return cached[0]
            name = self._client.provider.name
            link = await self._links.get(person_id=person_id, integration=name)
            if link is None:
                raise not_linked(self._client.provider.display_name)
            if link.refresh_token is None:  # sealed under a key that was rotated since
                raise token_expired(self._client.provider.display_name)
            grant = await self._client.refresh(link.refresh_token)
            if grant.refresh_token and grant.refresh_token != link.refresh_token:
                await self._links.rotate(person_id=person_id, integration=name, refresh_token=grant.refresh_token)
            self._cache[person_id] = (grant.access_token, time.monotonic() + max(0, grant.expires_in_s - _EARLY_S))
            if len(self._locks) > 10_000:  # bounded: locks of idle people are cheap to recreate
                self._locks.clear()
            return grant.access_token

    def forget(self, person_id: str) -> None:
        self._cache.pop(person_id, None)
