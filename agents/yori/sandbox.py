"""`SandboxMusic`: a simulated music service per person, kept in PostgreSQL.

Every person gets the same small library on first use (jazz, pop, lo-fi, rock,
classical and Indonesian pop), three playlists, two devices (a phone, active, and a
living-room speaker) and a paused player. It checks what Spotify checks (known uris,
known devices, a volume between 0 and 100, an active device for every player command)
and answers with the same hints, so Yori's whole flow can be seen working offline and
survives restarts.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from agents.integrations.hints import InputInvalid, NoActiveDevice, NotFound
from agents.yori.music import (
    SEARCH_LIMIT_MAX,
    VOLUME_MAX,
    VOLUME_MIN,
    NowPlaying,
    PlaybackDevice,
    Playlist,
    Track,
    playlist_id_of,
    track_id_of,
)

# (id, name, artists, album, genre, duration in seconds)
_TRACKS: tuple[tuple[str, str, tuple[str, ...], str, str, int], ...] = (
    ("sbxjazz01", "Take Five", ("The Dave Brubeck Quartet",), "Time Out", "jazz", 324),
    ("sbxjazz02", "So What", ("Miles Davis",), "Kind of Blue", "jazz", 562),
    ("sbxjazz03", "Autumn Leaves", ("Cannonball Adderley",), "Somethin' Else", "jazz", 660),
    ("sbxjazz04", "Blue in Green", ("Miles Davis",), "Kind of Blue", "jazz", 337),
    ("sbxpop001", "Sunday Morning Drive", ("The Sandbox Band",), "Weekend", "pop", 214),
    ("sbxpop002", "Golden Hour Walk", ("Lila Moon",), "Evenings", "pop", 198),
    ("sbxlofi01", "Rainy Window", ("Quiet Desk",), "Study Beats", "lofi", 152),
    ("sbxlofi02", "Late Night Notes", ("Quiet Desk",), "Study Beats", "lofi", 167),
    ("sbxrock01", "Highway Lights", ("Static Kings",), "Overdrive", "rock", 241),
    ("sbxrock02", "Paper Thunder", ("Static Kings",), "Overdrive", "rock", 229),
    ("sbxclas01", "Clair de Lune", ("Claude Debussy",), "Suite bergamasque", "classical", 300),
    ("sbxclas02", "Gymnopedie No. 1", ("Erik Satie",), "Gymnopedies", "classical", 205),
    ("sbxindo01", "Senja di Jakarta", ("Rumah Kaca",), "Kota", "indonesian pop", 231),
    ("sbxindo02", "Hujan Bulan Juni", ("Rumah Kaca",), "Kota", "indonesian pop", 244),
)
_PLAYLISTS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("sbxplist01", "Jazz Evenings", "Slow jazz for the end of the day", ("sbxjazz04", "sbxjazz01", "sbxjazz03")),
    ("sbxplist02", "Focus", "Lo-fi and piano to work to", ("sbxlofi01", "sbxclas02", "sbxlofi02", "sbxclas01")),
    ("sbxplist03", "Road Trip", "Loud and bright", ("sbxrock01", "sbxpop001", "sbxrock02", "sbxindo01")),
)
_DEVICES: tuple[tuple[str, str, str, int], ...] = (
    ("sbx-phone", "Phone", "Smartphone", 50),
    ("sbx-speaker-living", "Living room speaker", "Speaker", 40),
)

_SEEDED_SQL = "SELECT EXISTS (SELECT 1 FROM sandbox_music_players WHERE person_id = $1)"
_SEED_PLAYER_SQL = """
INSERT INTO sandbox_music_players (person_id, device_id) VALUES ($1, 'sbx-phone')
ON CONFLICT DO NOTHING RETURNING person_id
"""
_SEED_TRACKS_SQL = """
INSERT INTO sandbox_music_tracks (person_id, track_id, name, artists, album, genre, duration_ms)
SELECT $1, t.id, t.name, t.artists, t.album, t.genre, t.duration_ms
FROM jsonb_to_recordset($2::jsonb)
    AS t(id TEXT, name TEXT, artists TEXT[], album TEXT, genre TEXT, duration_ms INTEGER)
"""
_SEED_PLAYLISTS_SQL = """
INSERT INTO sandbox_music_playlists (person_id, playlist_id, name, description, track_ids)
SELECT $1, p.id, p.name, p.description, p.track_ids
FROM jsonb_to_recordset($2::jsonb) AS p(id TEXT, name TEXT, description TEXT, track_ids TEXT[])
"""
_SEED_DEVICES_SQL = """
INSERT INTO sandbox_music_devices (person_id, device_id, name, type, volume)
SELECT $1, d.id, d.name, d.type, d.volume
FROM jsonb_to_recordset($2::jsonb) AS d(id TEXT, name TEXT, type TEXT, volume INTEGER)
"""
_TRACK_COLUMNS = "track_id, name, artists, album, genre, duration_ms"
_SEARCH_SQL = f"""
SELECT {_TRACK_COLUMNS} FROM sandbox_music_tracks
WHERE person_id = $1 AND (
    SELECT bool_and(
        name ILIKE '%' || w || '%' OR album ILIKE '%' || w || '%' OR genre ILIKE '%' || w || '%'
        OR array_to_string(artists, ' ') ILIKE '%' || w || '%')
    FROM unnest($2::text[]) AS w)
ORDER BY genre, name LIMIT $3
"""
_TRACKS_BY_ID_SQL = f"""
SELECT {_TRACK_COLUMNS} FROM sandbox_music_tracks WHERE person_id = $1 AND track_id = ANY($2::text[])
"""
_GENRE_SQL = "SELECT track_id FROM sandbox_music_tracks WHERE person_id = $1 AND genre = $2 ORDER BY name"
_PLAYLISTS_SQL = """
SELECT playlist_id, name, description, track_ids FROM sandbox_music_playlists WHERE person_id = $1 ORDER BY name
"""
_PLAYLIST_SQL = """
SELECT track_ids FROM sandbox_music_playlists WHERE person_id = $1 AND playlist_id = $2
"""
_DEVICES_SQL = """
SELECT device_id, name, type, volume, muted_from FROM sandbox_music_devices WHERE person_id = $1 ORDER BY name
"""
_PLAYER_SQL = """
SELECT device_id, is_playing, queue, position, context_uri, updated_at FROM sandbox_music_players
WHERE person_id = $1 FOR UPDATE
"""
_SET_PLAYER_SQL = """
UPDATE sandbox_music_players
SET device_id = $2, is_playing = $3, queue = $4, position = $5, context_uri = $6, updated_at = now()
WHERE person_id = $1
"""
# Going silent keeps the volume it had (unless already silent); any other volume forgets it.
_SET_VOLUME_SQL = """
UPDATE sandbox_music_devices
SET muted_from = CASE WHEN $3 = 0 THEN COALESCE(NULLIF(volume, 0), muted_from) END, volume = $3
WHERE person_id = $1 AND device_id = $2
"""

Conn = Any  # an asyncpg connection (or pool proxy) inside one transaction


def _track(row: asyncpg.Record) -> Track:
    return Track(
        id=row["track_id"],
        name=row["name"],
        artists=tuple(row["artists"]),
        uri=f"spotify:track:{row['track_id']}",
        album=row["album"],
        duration_ms=row["duration_ms"],
    )


def _no_device() -> NoActiveDevice:
    return NoActiveDevice("No device is active. Call my_devices and play again with one of their ids.")


class SandboxMusic:
    """A per-person simulated music service; a real, stateful twin of the Spotify adapter."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def _seed(self, person_id: str) -> None:
        # Read first: nearly every call finds the music seeded, and the read is one round
        # trip where the seeding transaction is three and a write (as Zee's home, which
        # seeds on a miss). The transaction still decides a race between two first calls.
        if await self._pool.fetchval(_SEEDED_SQL, person_id):
            return
        async with self._pool.acquire() as conn, conn.transaction():
            if await conn.fetchval(_SEED_PLAYER_SQL, person_id) is None:
                return  # seeded before
            tracks = [
                {"id": i, "name": n, "artists": list(a), "album": al, "genre": g, "duration_ms": s * 1000}
                for i, n, a, al, g, s in _TRACKS
            ]
            playlists = [{"id": i, "name": n, "description": d, "track_ids": list(t)} for i, n, d, t in _PLAYLISTS]
            devices = [{"id": i, "name": n, "type": t, "volume": v} for i, n, t, v in _DEVICES]
            await conn.execute(_SEED_TRACKS_SQL, person_id, tracks)
            await conn.execute(_SEED_PLAYLISTS_SQL, person_id, playlists)
            await conn.execute(_SEED_DEVICES_SQL, person_id, devices)

    async def search_tracks(self, *, person_id: str, query: str, limit: int) -> list[Track]:
        words = query.split()[:8]
        if not words:
            raise InputInvalid("Give a search query: a track, an artist, an album or a genre.")
        await self._seed(person_id)
        rows = await self._pool.fetch(_SEARCH_SQL, person_id, words, max(1, min(limit, SEARCH_LIMIT_MAX)))
        return [_track(r) for r in rows]

    async def my_playlists(self, *, person_id: str) -> list[Playlist]:
        await self._seed(person_id)
        rows = await self._pool.fetch(_PLAYLISTS_SQL, person_id)
        return [
            Playlist(
                r["playlist_id"],
                r["name"],
                r["description"],
                len(r["track_ids"]),
                f"spotify:playlist:{r['playlist_id']}",
            )
            for r in rows
        ]

    async def playlist_tracks(self, *, person_id: str, playlist_id: str) -> list[Track]:
        await self._seed(person_id)
        ids = await self._pool.fetchval(_PLAYLIST_SQL, person_id, playlist_id_of(playlist_id) or playlist_id)
        if ids is None:
            raise NotFound(f"There is no playlist {playlist_id!r}; take the id from my_playlists.")
        return await self._tracks(self._pool, person_id, list(ids))

    async def _tracks(self, conn: Conn, person_id: str, ids: list[str]) -> list[Track]:
        by_id = {r["track_id"]: _track(r) for r in await conn.fetch(_TRACKS_BY_ID_SQL, person_id, ids)}
        return [by_id[i] for i in ids if i in by_id]

    async def now_playing(self, *, person_id: str) -> NowPlaying:
        await self._seed(person_id)
        async with self._pool.acquire() as conn, conn.transaction():
            player = await conn.fetchrow(_PLAYER_SQL, person_id)
            assert player is not None
            devices = {d.id: d for d in await self._devices(conn, person_id)}
            queue = list(player["queue"])
            tracks = await self._tracks(conn, person_id, queue[player["position"] : player["position"] + 1])
        return NowPlaying(
            playing=bool(player["is_playing"]),
            track=tracks[0] if tracks else None,
            device=devices.get(player["device_id"]) if player["device_id"] else None,
            progress_ms=0,
            context_uri=player["context_uri"],
        )

    async def _devices(self, conn: Conn, person_id: str) -> list[PlaybackDevice]:
        active = await conn.fetchval("SELECT device_id FROM sandbox_music_players WHERE person_id = $1", person_id)
        rows = await conn.fetch(_DEVICES_SQL, person_id)
        return [
            PlaybackDevice(r["device_id"], r["name"], r["type"], r["device_id"] == active, r["volume"], r["muted_from"])
            for r in rows
        ]

    async def my_devices(self, *, person_id: str) -> list[PlaybackDevice]:
        await self._seed(person_id)
        return await self._devices(self._pool, person_id)

    async def play(self, *, person_id: str, uri: str | None, context_uri: str | None, device_id: str | None) -> None:
        await self._seed(person_id)
        async with self._pool.acquire() as conn, conn.transaction():
            player = await conn.fetchrow(_PLAYER_SQL, person_id)
            assert player is not None
            device = await self._device(conn, person_id, device_id) if device_id else player["device_id"]
            if device is None:
                raise _no_device()
            queue, position, context = list(player["queue"]), player["position"], player["context_uri"]
            if uri and playlist_id_of(uri) and not context_uri:
                uri, context_uri = None, uri
            if context_uri:
                queue, position, context = await self._context_queue(conn, person_id, context_uri, uri)
            elif uri:
                queue, position, context = await self._track_queue(conn, person_id, uri), 0, None
            elif not queue:
                raise InputInvalid("Nothing is loaded to resume; search for something and play its uri.")
            await conn.execute(_SET_PLAYER_SQL, person_id, device, True, queue, position, context)

    async def _device(self, conn: Conn, person_id: str, device_id: str) -> str:
        if not any(d.id == device_id for d in await self._devices(conn, person_id)):
            raise NotFound(f"There is no device {device_id!r}; take the id from my_devices.")
        return device_id

    async def _track_queue(self, conn: Conn, person_id: str, uri: str) -> list[str]:
        """A single track plays on into the rest of its genre, the way a radio would."""
        ident = track_id_of(uri)
        rows = await conn.fetch(_TRACKS_BY_ID_SQL, person_id, [ident]) if ident else []
        if not rows:
            raise NotFound(f"{uri!r} is not a track uri from search_tracks or playlist_tracks; never guess one.")
        rest = [i for i in await conn.fetch(_GENRE_SQL, person_id, rows[0]["genre"]) if i["track_id"] != ident]
        return [ident, *(r["track_id"] for r in rest)]

    async def _context_queue(
        self, conn: Conn, person_id: str, context_uri: str, uri: str | None
    ) -> tuple[list[str], int, str]:
        ident = playlist_id_of(context_uri)
        ids = await conn.fetchval(_PLAYLIST_SQL, person_id, ident) if ident else None
        if ids is None:
            raise NotFound(f"{context_uri!r} is not a playlist uri from my_playlists.")
        queue = list(ids)
        position = 0
        if uri:
            track = track_id_of(uri)
            if track not in queue:
                raise NotFound(f"{uri!r} is not in that playlist; take it from playlist_tracks.")
            position = queue.index(track)
        return queue, position, context_uri

    async def _player_command(self, person_id: str, *, step: int = 0, playing: bool | None = None) -> None:
        await self._seed(person_id)
        async with self._pool.acquire() as conn, conn.transaction():
            player = await conn.fetchrow(_PLAYER_SQL, person_id)
            assert player is not None
            if player["device_id"] is None:
                raise _no_device()
            queue, position = list(player["queue"]), player["position"]
            if step and not queue:
                raise InputInvalid("Nothing is playing to skip; play something first.")
            if step:
                position = (position + step) % len(queue) if step > 0 else max(0, position + step)
            is_playing = player["is_playing"] if playing is None else playing
            await conn.execute(
                _SET_PLAYER_SQL, person_id, player["device_id"], is_playing, queue, position, player["context_uri"]
            )

    async def pause(self, *, person_id: str) -> None:
        await self._player_command(person_id, playing=False)

    async def skip_next(self, *, person_id: str) -> None:
        await self._player_command(person_id, step=1, playing=True)

    async def skip_previous(self, *, person_id: str) -> None:
        await self._player_command(person_id, step=-1, playing=True)

    async def set_volume(self, *, person_id: str, percent: int) -> None:
        if isinstance(percent, bool) or not isinstance(percent, int) or not VOLUME_MIN <= percent <= VOLUME_MAX:
            raise InputInvalid(f"The volume is a whole number from {VOLUME_MIN} to {VOLUME_MAX}, not {percent!r}.")
        await self._seed(person_id)
        async with self._pool.acquire() as conn, conn.transaction():
            player = await conn.fetchrow(_PLAYER_SQL, person_id)
            assert player is not None
            if player["device_id"] is None:
                raise _no_device()
            await conn.execute(_SET_VOLUME_SQL, person_id, player["device_id"], percent)

    async def transfer_playback(self, *, person_id: str, device_id: str, play: bool) -> None:
        await self._seed(person_id)
        async with self._pool.acquire() as conn, conn.transaction():
            player = await conn.fetchrow(_PLAYER_SQL, person_id)
            assert player is not None
            await self._device(conn, person_id, device_id)
            is_playing = bool(player["is_playing"]) or play
            await conn.execute(
                _SET_PLAYER_SQL,
                person_id,
                device_id,
                is_playing,
                list(player["queue"]),
                player["position"],
                player["context_uri"],
            )
