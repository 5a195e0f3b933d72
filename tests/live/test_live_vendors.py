"""The live adapters against the real vendors, read-only, by hand: each test is skipped
unless its credentials are in the environment, and CI never sets them.

    TUYA_ACCESS_ID, TUYA_ACCESS_SECRET, TUYA_BASE_URL, LIVE_TUYA_UID
    SPOTIFY_CLIENT_ID, SPOTIFY_CLIENT_SECRET, LIVE_SPOTIFY_REFRESH_TOKEN
    GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, LIVE_GOOGLE_REFRESH_TOKEN
"""

from __future__ import annotations

import os
from zoneinfo import ZoneInfo

import httpx
import pytest

from agents.integrations.oauth import OAuthClient, Provider
from agents.rafal.agent import GOOGLE
from agents.yori.agent import SPOTIFY

pytestmark = pytest.mark.live


def needs(*names: str) -> dict[str, str]:
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        pytest.skip(f"live test: set {', '.join(missing)}")
    return {n: os.environ[n] for n in names}


class RefreshOnly:
    """A token source for one person from a refresh token in the environment."""

    def __init__(self, provider: Provider, env: dict[str, str], prefix: str, http: httpx.AsyncClient) -> None:
        self._client = OAuthClient(
            provider,
            client_id=env[f"{prefix}_CLIENT_ID"],
            client_secret=env[f"{prefix}_CLIENT_SECRET"],
            redirect_uri="http://127.0.0.1/unused",
            http=http,
        )
        self._refresh = env[f"LIVE_{prefix}_REFRESH_TOKEN"]

    async def token(self, person_id: str) -> str:
        return (await self._client.refresh(self._refresh)).access_token

    def forget(self, person_id: str) -> None:
        pass


async def test_tuya_lists_the_linked_accounts_devices() -> None:
    from agents.zee.tuya import TuyaHome

    env = needs("TUYA_ACCESS_ID", "TUYA_ACCESS_SECRET", "LIVE_TUYA_UID")

    async def uid_of(person_id: str) -> str | None:
        return env["LIVE_TUYA_UID"]

    async with httpx.AsyncClient(timeout=15) as http:
        home = TuyaHome(
            http=http,
            base_url=os.environ.get("TUYA_BASE_URL", "https://openapi.tuyaus.com"),
            client_id=env["TUYA_ACCESS_ID"],
            secret=env["TUYA_ACCESS_SECRET"],
            uid_of=uid_of,
        )
        devices = await home.list_devices(person_id="live")
        assert all(d.id and d.category for d in devices)


async def test_spotify_reads_devices_and_searches() -> None:
    from agents.yori.spotify import SpotifyMusic

    env = needs("SPOTIFY_CLIENT_ID", "SPOTIFY_CLIENT_SECRET", "LIVE_SPOTIFY_REFRESH_TOKEN")
    async with httpx.AsyncClient(timeout=15) as http:
        music = SpotifyMusic(http=http, tokens=RefreshOnly(SPOTIFY, env, "SPOTIFY", http))
        assert await music.search_tracks(person_id="live", query="jazz", limit=3)
        await music.my_devices(person_id="live")


async def test_google_reads_mail_events_and_contacts() -> None:
    from datetime import UTC, datetime

    from agents.rafal.google import GoogleWorkspace

    env = needs("GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET", "LIVE_GOOGLE_REFRESH_TOKEN")
    zone = ZoneInfo("Asia/Jakarta")
    async with httpx.AsyncClient(timeout=15) as http:
        workspace = GoogleWorkspace(http=http, tokens=RefreshOnly(GOOGLE, env, "GOOGLE", http))
        await workspace.read_messages(person_id="live", query="newer_than:2d", limit=3, zone=zone)
        await workspace.list_events(
            person_id="live", time_min=datetime.now(UTC), time_max=None, query="", limit=3, zone=zone
        )
        await workspace.list_contacts(person_id="live", limit=3, zone=zone)
