"""The `MusicPlayer` port's contract, run against the sandbox and against the Spotify
adapter talking to an in-process fake of the Spotify Web API (with real links and
token refresh)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from agents.integrations.hints import InputInvalid, NotFound, PremiumRequired, RateLimited
from agents.yori.music import MusicPlayer
from agents.yori.sandbox import SandboxMusic
from agents.yori.spotify import SpotifyMusic
from tests.fakes.linked import client_for, linked_tokens
from tests.fakes.vendors import FakeSpotify


@pytest.fixture(params=["sandbox", "spotify"])
async def music(request: pytest.FixtureRequest, pool: asyncpg.Pool) -> AsyncIterator[MusicPlayer]:
    if request.param == "sandbox":
        yield SandboxMusic(pool)
        return
    fake = FakeSpotify()
    async with client_for(fake) as http:
        yield SpotifyMusic(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=False))
    assert fake.violations == []  # every call and answer as the vendor's reference has it


async def test_search_then_play_plays_that_track(music: MusicPlayer) -> None:
    tracks = await music.search_tracks(person_id="usr_1", query="jazz", limit=5)
    assert len(tracks) >= 2
    assert all(t.uri.startswith("spotify:track:") and t.name and t.artists for t in tracks)
    await music.play(person_id="usr_1", uri=tracks[1].uri, context_uri=None, device_id=None)
    state = await music.now_playing(person_id="usr_1")
    assert state.playing
    assert state.track is not None and state.track.id == tracks[1].id
    assert state.device is not None and state.device.is_active


async def test_pause_resume_next_previous(music: MusicPlayer) -> None:
    first = (await music.search_tracks(person_id="usr_1", query="jazz", limit=5))[0]
    await music.play(person_id="usr_1", uri=first.uri, context_uri=None, device_id=None)
    await music.pause(person_id="usr_1")
    assert not (await music.now_playing(person_id="usr_1")).playing
    await music.play(person_id="usr_1", uri=None, context_uri=None, device_id=None)
    assert (await music.now_playing(person_id="usr_1")).playing
    await music.skip_next(person_id="usr_1")
    after = (await music.now_playing(person_id="usr_1")).track
    assert after is not None and after.id != first.id
    await music.skip_previous(person_id="usr_1")
    back = (await music.now_playing(person_id="usr_1")).track
    assert back is not None and back.id == first.id


async def test_volume_is_set_on_the_active_device_and_checked(music: MusicPlayer) -> None:
    await music.set_volume(person_id="usr_1", percent=30)
    assert [d.volume for d in await music.my_devices(person_id="usr_1") if d.is_active] == [30]
    for wrong in (-1, 101):
        with pytest.raises(InputInvalid):
            await music.set_volume(person_id="usr_1", percent=wrong)
    assert [d.volume for d in await music.my_devices(person_id="usr_1") if d.is_active] == [30]


async def test_playlists_play_as_a_context(music: MusicPlayer) -> None:
    playlists = await music.my_playlists(person_id="usr_1")
    assert playlists and all(p.uri.startswith("spotify:playlist:") for p in playlists)
    tracks = await music.playlist_tracks(person_id="usr_1", playlist_id=playlists[0].id)
    assert tracks
    await music.play(person_id="usr_1", uri=tracks[-1].uri, context_uri=playlists[0].uri, device_id=None)
    state = await music.now_playing(person_id="usr_1")
    assert state.context_uri == playlists[0].uri
    assert state.track is not None and state.track.id == tracks[-1].id


async def test_transfer_playback_moves_to_another_device(music: MusicPlayer) -> None:
    devices = await music.my_devices(person_id="usr_1")
    other = next(d for d in devices if not d.is_active)
    await music.transfer_playback(person_id="usr_1", device_id=other.id, play=False)
    assert [d.id for d in await music.my_devices(person_id="usr_1") if d.is_active] == [other.id]


async def test_unknown_things_are_refused(music: MusicPlayer) -> None:
    with pytest.raises((NotFound, InputInvalid)):
        await music.play(person_id="usr_1", uri="spotify:track:nope", context_uri=None, device_id=None)
    with pytest.raises(NotFound):
        await music.play(person_id="usr_1", uri=None, context_uri=None, device_id="no-such-device")
    with pytest.raises(NotFound):
        await music.playlist_tracks(person_id="usr_1", playlist_id="no-such-playlist")


async def test_players_are_per_person(music: MusicPlayer) -> None:
    first = (await music.search_tracks(person_id="usr_1", query="jazz", limit=5))[0]
    await music.play(person_id="usr_1", uri=first.uri, context_uri=None, device_id=None)
    assert not (await music.now_playing(person_id="usr_2")).playing


async def test_spotify_errors_become_hints(pool: asyncpg.Pool) -> None:
    from agents.integrations.hints import NotLinked

    fake = FakeSpotify()
    async with client_for(fake) as http:
        music = SpotifyMusic(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=False))
        fake.free_accounts.add("usr_1")
        with pytest.raises(PremiumRequired):
            await music.pause(person_id="usr_1")
        fake.busy = True
        with pytest.raises(RateLimited):
            await music.search_tracks(person_id="usr_1", query="jazz", limit=3)
        with pytest.raises(NotLinked):
            await music.now_playing(person_id="usr_3")
