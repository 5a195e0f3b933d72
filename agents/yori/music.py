"""The `MusicPlayer` port Yori acts through, and its dataclasses.

Adapters: `SandboxMusic` (a library, playlists, devices and a player per person, kept in
PostgreSQL, the default) and `SpotifyMusic` (the Spotify Web API). Uris follow Spotify's
shape (`spotify:track:<id>`, `spotify:playlist:<id>`) so one set of tool descriptions
fits both. Errors are the shared hints of `agents.integrations.hints`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

VOLUME_MIN, VOLUME_MAX = 0, 100
SEARCH_LIMIT_MAX = 10  # Spotify's search answers at most 10 per type (docs/integrations.md)


@dataclass(frozen=True, slots=True)
class Track:
    id: str
    name: str
    artists: tuple[str, ...]
    uri: str
    album: str = ""
    duration_ms: int = 0


@dataclass(frozen=True, slots=True)
class Playlist:
    id: str
    name: str
    description: str
    total: int
    uri: str


@dataclass(frozen=True, slots=True)
class PlaybackDevice:
    id: str
    name: str
    type: str
    is_active: bool
    volume: int | None
    # The volume before a mute, where the service keeps it (the sandbox does; Spotify does not).
    muted_from: int | None = None


@dataclass(frozen=True, slots=True)
class NowPlaying:
    playing: bool
    track: Track | None
    device: PlaybackDevice | None
    progress_ms: int
    context_uri: str | None


class MusicPlayer(Protocol):
    async def search_tracks(self, *, person_id: str, query: str, limit: int) -> list[Track]: ...

    async def my_playlists(self, *, person_id: str) -> list[Playlist]: ...

    async def playlist_tracks(self, *, person_id: str, playlist_id: str) -> list[Track]: ...

    async def now_playing(self, *, person_id: str) -> NowPlaying: ...

    async def my_devices(self, *, person_id: str) -> list[PlaybackDevice]: ...

    async def play(
        self, *, person_id: str, uri: str | None, context_uri: str | None, device_id: str | None
    ) -> None: ...

    async def transfer_playback(self, *, person_id: str, device_id: str, play: bool) -> None: ...

    async def pause(self, *, person_id: str) -> None: ...

    async def skip_next(self, *, person_id: str) -> None: ...

    async def skip_previous(self, *, person_id: str) -> None: ...

    async def set_volume(self, *, person_id: str, percent: int) -> None: ...


def track_id_of(uri: str) -> str | None:
    """`spotify:track:abc` -> `abc`; anything else -> None."""
    kind, _, ident = uri.removeprefix("spotify:").partition(":")
    return ident if uri.startswith("spotify:") and kind == "track" and ident else None


def playlist_id_of(uri: str) -> str | None:
    kind, _, ident = uri.removeprefix("spotify:").partition(":")
    return ident if uri.startswith("spotify:") and kind == "playlist" and ident else None
