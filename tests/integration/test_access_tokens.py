"""Access tokens for live adapters: refreshed from the sealed refresh token, cached,
renewed after a 401, and a rotated refresh token is sealed again (Spotify may rotate)."""

from __future__ import annotations

import asyncpg
import pytest

from agents import TokenCipher
from agents.integrations.hints import RateLimited
from agents.integrations.linking import Links
from agents.integrations.oauth import AccessTokens, OAuthClient
from agents.yori.agent import SPOTIFY
from agents.yori.spotify import SpotifyMusic
from tests.fakes.linked import client_for
from tests.fakes.vendors import FakeSpotify


async def test_tokens_are_cached_renewed_and_rotated(pool: asyncpg.Pool) -> None:
    fake = FakeSpotify()
    fake.oauth.rotate = True
    links = Links(pool, TokenCipher(TokenCipher.new_key()))
    first_refresh = fake.oauth.link("acct")
    await links.save(person_id="usr_1", integration="spotify", refresh_token=first_refresh, account_id=None)
    async with client_for(fake) as http:
        client = OAuthClient(
            SPOTIFY, client_id="spotify-client", client_secret="spotify-secret", redirect_uri="http://t/cb", http=http
        )
        tokens = AccessTokens(client, links)
        music = SpotifyMusic(http=http, tokens=tokens)
        token = await tokens.token("usr_1")
        assert await tokens.token("usr_1") == token, "cached until shortly before it expires"
        stored = await links.get(person_id="usr_1", integration="spotify")
        assert stored is not None and stored.refresh_token != first_refresh
        assert stored.refresh_token in fake.oauth.refresh, "the rotated refresh token was sealed again"

        fake.oauth.access.clear()  # Spotify forgets the access token early: one 401, one refresh
        assert await music.my_devices(person_id="usr_1")
        assert await tokens.token("usr_1") != token


async def test_a_refresh_the_provider_rate_limits_names_its_wait(pool: asyncpg.Pool) -> None:
    fake = FakeSpotify()
    links = Links(pool, TokenCipher(TokenCipher.new_key()))
    await links.save(person_id="usr_1", integration="spotify", refresh_token=fake.oauth.link("acct"), account_id=None)
    fake.oauth.retry_after_s = 45
    async with client_for(fake) as http:
        client = OAuthClient(
            SPOTIFY, client_id="spotify-client", client_secret="spotify-secret", redirect_uri="http://t/cb", http=http
        )
        with pytest.raises(RateLimited, match="try again in 45 seconds") as limited:
            await AccessTokens(client, links).token("usr_1")
    assert limited.value.retry_after_s == 45
    assert fake.violations == []
