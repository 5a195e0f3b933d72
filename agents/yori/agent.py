"""Yori, the music specialist, as the room knows it: one declaration (agents/specialist.py).

Yori acts on a `MusicPlayer`: every person's sandbox player, or their Spotify account
once they link it and this server holds a Spotify app's credentials.
"""

from __future__ import annotations

import asyncpg
from pydantic import SecretStr

from agents.capabilities import Capability, words
from agents.integrations.oauth import Provider
from agents.offline.skillset import SkillSet
from agents.roster import AgentSpec
from agents.specialist import LiveParts, Port, Specialist, Vendor, VendorSettings
from agents.yori.music import MusicPlayer
from agents.yori.offline import claims, music_turn, wants_music
from agents.yori.sandbox import SandboxMusic
from agents.yori.spotify import SpotifyMusic
from agents.yori.tools import yori_tools

SPOTIFY = Provider(
    "spotify",
    "Spotify",
    "https://accounts.spotify.com/authorize",
    "https://accounts.spotify.com/api/token",
    None,  # Spotify has no revoke endpoint: disconnecting forgets the token
    (
        "user-read-playback-state",
        "user-modify-playback-state",
        "user-read-currently-playing",
        "playlist-read-private",
    ),
    basic_auth=True,
    extra_authorize={"show_dialog": "true"},
)


class SpotifySettings(VendorSettings):
    """A Spotify app's client id and secret (its redirect URI: OAUTH_REDIRECT_BASE_URL/spotify/callback)."""

    spotify_client_id: str | None = None
    spotify_client_secret: SecretStr | None = None

    def client(self) -> tuple[str, str] | None:
        if self.spotify_client_id and self.spotify_client_secret is not None:
            return self.spotify_client_id, self.spotify_client_secret.get_secret_value()
        return None


def _sandbox(pool: asyncpg.Pool) -> MusicPlayer:
    return SandboxMusic(pool)


def _live(parts: LiveParts) -> MusicPlayer | None:
    return SpotifyMusic(http=parts.http, tokens=parts.tokens) if parts.tokens is not None else None


SPECIALIST: Specialist[MusicPlayer] = Specialist(
    agent=AgentSpec("yori", "Yori", "specialist", "music", "Music specialist (Spotify). Acts only in the present."),
    capabilities=(
        Capability(
            "music",
            words(r"\b(plays?|pauses?|skips?|search(es)? tracks|sets? the volume|now playing)\b"),
            frozenset({"play", "pause", "search_tracks", "now_playing", "next_track", "skip", "set_volume"}),
            "play your music",
            "muterin musik",
        ),
    ),
    port=Port(
        kind="music",
        sandbox=_sandbox,
        live=_live,
        vendor=Vendor("spotify", "Spotify", oauth=SPOTIFY),
        settings=SpotifySettings,
    ),
    tools=lambda choose, context, _pending: yori_tools(choose, person_id=context.person_id),
    offline=SkillSet(
        claims=claims,
        skills=(music_turn,),
        not_yet=(
            "I can't play or check music yet: no music service is connected here.",
            "Maaf, aku belum bisa muterin atau ngecek musik: belum ada layanan musik yang tersambung di sini.",
        ),
        owns=wants_music,
        precedence=10,  # "play jazz in the living room" is music, unless a device is named
    ),
)
