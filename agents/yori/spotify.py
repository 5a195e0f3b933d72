"""`SpotifyMusic`: the `MusicPlayer` port on the Spotify Web API, over httpx.

Tokens come from the person's link (refreshed by `AccessTokens`); Spotify's error
reasons become the agents' hints: `PREMIUM_REQUIRED`, `NO_ACTIVE_DEVICE`, 429 rate
limits (with the wait Spotify asks for), a playlist the person only follows, and revoked
tokens. Responses are read defensively: a missing field is an empty value, never a crash.
The calls, their limits and what each error becomes are in docs/integrations.md.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from agents.errors import ToolError
from agents.integrations.hints import InputInvalid, NoActiveDevice, NotAllowed, PremiumRequired
from agents.integrations.vendor import BearerApi, TokenSource, error_body
from agents.yori.music import (
    SEARCH_LIMIT_MAX,
    VOLUME_MAX,
    VOLUME_MIN,
    NowPlaying,
    PlaybackDevice,
    Playlist,
    Track,
    playlist_id_of,
)

API_URL = "https://api.spotify.com/v1"
PAGE_LIMIT_MAX = 50  # Spotify's most items per page for playlists and their items
_PLAYLIST_ITEMS = re.compile(r"/playlists/[^/]+/items$")


def _refine(response: httpx.Response) -> ToolError | None:
    reason = str(error_body(response).get("reason", ""))
    if reason == "PREMIUM_REQUIRED" or (response.status_code == 403 and "premium" in response.text.lower()):
        return PremiumRequired("Playback control needs Spotify Premium; do not retry or work around it.")
    if reason == "NO_ACTIVE_DEVICE":
        return NoActiveDevice("No device is active. Call my_devices and play again with one of their ids.")
    if response.status_code == 403 and _PLAYLIST_ITEMS.search(response.request.url.path):
        # Spotify lists the items only of playlists the person owns or collaborates on.
        return NotAllowed(
            "Spotify shows the tracks only of playlists the person made or collaborates on, not ones they follow, "
            "though it can still play the whole playlist; do not retry playlist_tracks, call play with the "
            "playlist's uri as context_uri."
        )
    return None


def _track(item: dict[str, Any]) -> Track:
    return Track(
        id=str(item.get("id", "")),
        name=str(item.get("name", "")),
        artists=tuple(str(a.get("name", "")) for a in item.get("artists", []) if isinstance(a, dict)),
        uri=str(item.get("uri", "")),
        album=str((item.get("album") or {}).get("name", "")),
        duration_ms=int(item.get("duration_ms", 0) or 0),
    )


def _device(d: dict[str, Any]) -> PlaybackDevice:
    volume = d.get("volume_percent")
    return PlaybackDevice(
        id=str(d.get("id", "")),
        name=str(d.get("name", "")),
        type=str(d.get("type", "")),
        is_active=bool(d.get("is_active", False)),
        volume=int(volume) if isinstance(volume, int) else None,
    )


class SpotifyMusic:
    def __init__(self, *, http: httpx.AsyncClient, tokens: TokenSource, base_url: str = API_URL) -> None:
        self._api = BearerApi(http=http, base_url=base_url, tokens=tokens, service="Spotify", refine=_refine)

    async def _get(self, path: str, person_id: str, **params: Any) -> dict[str, Any]:
        response = await self._api.request("GET", path, person_id=person_id, params=params or None)
        if response.status_code == 204 or not response.content:
            return {}
        body: dict[str, Any] = response.json()
        return body

    async def search_tracks(self, *, person_id: str, query: str, limit: int) -> list[Track]:
        if not query.strip():
            raise InputInvalid("Give a search query: a track, an artist, an album or a genre.")
        body = await self._get("/search", person_id, q=query, type="track", limit=max(1, min(limit, SEARCH_LIMIT_MAX)))
        return [_track(t) for t in (body.get("tracks") or {}).get("items", []) if isinstance(t, dict)]

    async def my_playlists(self, *, person_id: str) -> list[Playlist]:
        body = await self._get("/me/playlists", person_id, limit=PAGE_LIMIT_MAX)
        return [
            Playlist(
                id=str(p.get("id", "")),
                name=str(p.get("name", "")),
                description=str(p.get("description") or ""),
                total=int(((p.get("items") or p.get("tracks") or {}).get("total", 0)) or 0),
                uri=str(p.get("uri", "")),
            )
            for p in body.get("items", [])
            if isinstance(p, dict)
        ]

    async def playlist_tracks(self, *, person_id: str, playlist_id: str) -> list[Track]:
        ident = playlist_id_of(playlist_id) or playlist_id
        # `/items` and each entry's `item`: the names Spotify's reference keeps; `/tracks` and
        # `track` are deprecated there (docs/integrations.md).
        body = await self._get(f"/playlists/{ident}/items", person_id, limit=PAGE_LIMIT_MAX)
        items = [i.get("item") or i.get("track") for i in body.get("items", []) if isinstance(i, dict)]
        return [_track(t) for t in items if isinstance(t, dict) and t.get("type", "track") == "track"]

    async def now_playing(self, *, person_id: str) -> NowPlaying:
        body = await self._get("/me/player", person_id)
        item, device, context = body.get("item"), body.get("device"), body.get("context")
        return NowPlaying(
            playing=bool(body.get("is_playing", False)),
            track=_track(item) if isinstance(item, dict) else None,
            device=_device(device) if isinstance(device, dict) else None,
            progress_ms=int(body.get("progress_ms") or 0),
            context_uri=str(context.get("uri")) if isinstance(context, dict) and context.get("uri") else None,
        )

    async def my_devices(self, *, person_id: str) -> list[PlaybackDevice]:
        body = await self._get("/me/player/devices", person_id)
        return [_device(d) for d in body.get("devices", []) if isinstance(d, dict)]

    async def play(self, *, person_id: str, uri: str | None, context_uri: str | None, device_id: str | None) -> None:
        body: dict[str, Any] = {}
        if context_uri:
            body["context_uri"] = context_uri
            if uri:
                body["offset"] = {"uri": uri}
        elif uri:
            body["uris"] = [uri]
        params = {"device_id": device_id} if device_id else None
        await self._api.request("PUT", "/me/player/play", person_id=person_id, params=params, json=body or None)

    async def transfer_playback(self, *, person_id: str, device_id: str, play: bool) -> None:
        await self._api.request(
            "PUT", "/me/player", person_id=person_id, json={"device_ids": [device_id], "play": play}
        )

    async def pause(self, *, person_id: str) -> None:
        await self._api.request("PUT", "/me/player/pause", person_id=person_id)

    async def skip_next(self, *, person_id: str) -> None:
        await self._api.request("POST", "/me/player/next", person_id=person_id)

    async def skip_previous(self, *, person_id: str) -> None:
        await self._api.request("POST", "/me/player/previous", person_id=person_id)

    async def set_volume(self, *, person_id: str, percent: int) -> None:
        if isinstance(percent, bool) or not isinstance(percent, int) or not VOLUME_MIN <= percent <= VOLUME_MAX:
            raise InputInvalid(f"The volume is a whole number from {VOLUME_MIN} to {VOLUME_MAX}, not {percent!r}.")
        await self._api.request("PUT", "/me/player/volume", person_id=person_id, params={"volume_percent": percent})
