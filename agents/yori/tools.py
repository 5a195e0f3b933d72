"""Yori's tools, bound to one person's music account (sandbox or live) for one run.

Descriptions are written for the model. Every result says which account it came from
(`"account": "sandbox"` or `"live"`), so Yori can tell the person when it is the sandbox.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agents.integrations.accounts import Account
from agents.integrations.arguments import flag, integer, required_text, text
from agents.integrations.outside import as_data
from agents.model import ToolSpec
from agents.tools import Tool, object_schema
from agents.yori.music import SEARCH_LIMIT_MAX, VOLUME_MAX, VOLUME_MIN, MusicPlayer, PlaybackDevice, Track

Choose = Callable[[], Awaitable[Account[MusicPlayer]]]


def _track(t: Track) -> dict[str, Any]:
    # Track and artist names come from outside: data, never instructions.
    return {"id": t.id, "name": as_data(t.name), "artists": [as_data(a) for a in t.artists], "uri": t.uri}


def _device(d: PlaybackDevice) -> dict[str, Any]:
    out = {"id": d.id, "name": as_data(d.name), "type": d.type, "is_active": d.is_active, "volume": d.volume}
    if d.muted_from is not None:
        out["muted_from"] = d.muted_from  # what "unmute" brings back
    return out


class _Yori:
    """The handlers, sharing one run's account and person."""

    def __init__(self, choose: Choose, *, person_id: str) -> None:
        self.choose, self.person_id = choose, person_id

    async def search_tracks(self, args: dict[str, Any]) -> dict[str, Any]:
        query = required_text(args, "query", chars_max=200)
        limit = integer(args, "limit", low=1, high=SEARCH_LIMIT_MAX, default=5)
        account = await self.choose()
        tracks = await account.port.search_tracks(person_id=self.person_id, query=query, limit=limit)
        return {"account": account.kind, "tracks": [_track(t) for t in tracks]}

    async def my_playlists(self, _: dict[str, Any]) -> dict[str, Any]:
        account = await self.choose()
        playlists = await account.port.my_playlists(person_id=self.person_id)
        return {
            "account": account.kind,
            "playlists": [
                {
                    "id": p.id,
                    "name": as_data(p.name),
                    "description": as_data(p.description),
                    "total": p.total,
                    "uri": p.uri,
                }
                for p in playlists
            ],
        }

    async def playlist_tracks(self, args: dict[str, Any]) -> dict[str, Any]:
        playlist_id = required_text(args, "playlist_id", chars_max=200)
        account = await self.choose()
        tracks = await account.port.playlist_tracks(person_id=self.person_id, playlist_id=playlist_id)
        return {"account": account.kind, "tracks": [_track(t) for t in tracks]}

    async def now_playing(self, _: dict[str, Any]) -> dict[str, Any]:
        account = await self.choose()
        state = await account.port.now_playing(person_id=self.person_id)
        return {
            "account": account.kind,
            "playing": state.playing,
            "track": _track(state.track) if state.track else None,
            "device": _device(state.device) if state.device else None,
            "progress_ms": state.progress_ms,
            "context_uri": state.context_uri,
        }

    async def my_devices(self, _: dict[str, Any]) -> dict[str, Any]:
        account = await self.choose()
        devices = await account.port.my_devices(person_id=self.person_id)
        return {"account": account.kind, "devices": [_device(d) for d in devices]}

    async def play(self, args: dict[str, Any]) -> dict[str, Any]:
        uri = text(args, "uri", required=False, chars_max=200)
        context_uri = text(args, "context_uri", required=False, chars_max=200)
        device_id = text(args, "device_id", required=False, chars_max=200)
        account = await self.choose()
        await account.port.play(person_id=self.person_id, uri=uri, context_uri=context_uri, device_id=device_id)
        return {"account": account.kind, "ok": True}

    async def transfer_playback(self, args: dict[str, Any]) -> dict[str, Any]:
        device_id = required_text(args, "device_id", chars_max=200)
        play = flag(args, "play")
        account = await self.choose()
        await account.port.transfer_playback(person_id=self.person_id, device_id=device_id, play=play)
        return {"account": account.kind, "ok": True}

    async def _command(self, method: str) -> dict[str, Any]:
        account = await self.choose()
        await getattr(account.port, method)(person_id=self.person_id)
        return {"account": account.kind, "ok": True}

    async def pause(self, _: dict[str, Any]) -> dict[str, Any]:
        return await self._command("pause")

    async def skip_next(self, _: dict[str, Any]) -> dict[str, Any]:
        return await self._command("skip_next")

    async def skip_previous(self, _: dict[str, Any]) -> dict[str, Any]:
        return await self._command("skip_previous")

    async def set_volume(self, args: dict[str, Any]) -> dict[str, Any]:
        percent = integer(args, "percent", low=VOLUME_MIN, high=VOLUME_MAX)
        account = await self.choose()
        await account.port.set_volume(person_id=self.person_id, percent=percent)
        return {"account": account.kind, "ok": True, "percent": percent}


_NONE = object_schema({})
_STRING = {"type": "string"}
# What the model reads; each name is a method of `_Yori`.
SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search_tracks",
        'Search the music library for tracks by name, artist, album or genre (e.g. "jazz"). '
        "Returns tracks with their uri, which is what play takes. Never guess a uri.",
        object_schema(
            {"query": _STRING, "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_LIMIT_MAX}}, ("query",)
        ),
    ),
    ToolSpec("my_playlists", "List the person's playlists with their id, uri and track count.", _NONE),
    ToolSpec(
        "playlist_tracks",
        "List the tracks of one playlist, by the playlist id from my_playlists.",
        object_schema({"playlist_id": _STRING}, ("playlist_id",)),
    ),
    ToolSpec(
        "now_playing",
        "What is playing right now: the track, whether it is playing or paused, the device and its volume.",
        _NONE,
    ),
    ToolSpec("my_devices", "List the person's playback devices: id, name, type, whether active, volume.", _NONE),
    ToolSpec(
        "play",
        "Start or resume playback. uri: a track uri from search_tracks or playlist_tracks. "
        "context_uri: a playlist uri, to play the playlist (with uri: start at that track, so skipping stays "
        "in the playlist). With neither, resume what was paused. device_id: play on that device (from "
        "my_devices) when no device is active.",
        object_schema({"uri": _STRING, "context_uri": _STRING, "device_id": _STRING}),
    ),
    ToolSpec(
        "transfer_playback",
        "Move playback to another device (id from my_devices); play=true also starts it.",
        object_schema({"device_id": _STRING, "play": {"type": "boolean"}}, ("device_id",)),
    ),
    ToolSpec("pause", "Pause playback on the active device.", _NONE),
    ToolSpec("skip_next", "Skip to the next track.", _NONE),
    ToolSpec("skip_previous", "Go back to the previous track.", _NONE),
    ToolSpec(
        "set_volume",
        "Set the active device's volume, a whole number from 0 to 100.",
        object_schema({"percent": {"type": "integer", "minimum": 0, "maximum": 100}}, ("percent",)),
    ),
)


def yori_tools(choose: Choose, *, person_id: str) -> list[Tool]:
    yori = _Yori(choose, person_id=person_id)
    return [Tool(spec, getattr(yori, spec.name)) for spec in SPECS]
