"""The `MusicPlayer` port's contract, run against the sandbox and against the Spotify
adapter talking to an in-process fake of the Spotify Web API (with real links and
token refresh)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from agents.integrations.hints import (
    InputInvalid,
    NoActiveDevice,
    NotAllowed,
    NotFound,
    PremiumRequired,
    RateLimited,
    TokenExpired,
    VendorUnavailable,
)
from agents.yori.music import SEARCH_LIMIT_MAX, MusicPlayer
from agents.yori.sandbox import SandboxMusic
from agents.yori.spotify import SpotifyMusic
from tests.fakes.linked import client_for, linked_tokens
from tests.fakes.vendors import FakeSpotify
from tests.specs.spotify import SPOTIFY


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


async def test_the_sandbox_keeps_the_volume_from_before_a_mute(pool: asyncpg.Pool) -> None:
    # "unmute" brings that volume back (docs/agents.md); Spotify keeps none, so the sandbox only.
    music = SandboxMusic(pool)

    async def active() -> tuple[int | None, int | None]:
        (device,) = [d for d in await music.my_devices(person_id="usr_m") if d.is_active]
        return device.volume, device.muted_from

    await music.set_volume(person_id="usr_m", percent=35)
    assert await active() == (35, None)
    await music.set_volume(person_id="usr_m", percent=0)
    assert await active() == (0, 35)
    await music.set_volume(person_id="usr_m", percent=0)  # muted twice: still the volume before
    assert await active() == (0, 35)
    await music.set_volume(person_id="usr_m", percent=60)  # any other volume forgets it
    assert await active() == (60, None)


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


async def test_search_answers_at_most_ten(music: MusicPlayer) -> None:
    assert len(await music.search_tracks(person_id="usr_1", query="a", limit=50)) <= SEARCH_LIMIT_MAX


async def test_every_spotify_call_is_one_the_reference_allows(pool: asyncpg.Pool) -> None:
    fake = FakeSpotify()
    async with client_for(fake) as http:
        music = SpotifyMusic(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=False))
        tracks = await music.search_tracks(person_id="usr_1", query="jazz", limit=SEARCH_LIMIT_MAX)
        playlists = await music.my_playlists(person_id="usr_1")
        assert [p.total for p in playlists] == [3, 2], "the count comes from `items`, not the deprecated `tracks`"
        await music.playlist_tracks(person_id="usr_1", playlist_id=playlists[0].id)
        await music.now_playing(person_id="usr_1")
        devices = await music.my_devices(person_id="usr_1")
        await music.play(person_id="usr_1", uri=tracks[0].uri, context_uri=None, device_id=devices[0].id)
        await music.play(person_id="usr_1", uri=None, context_uri=playlists[0].uri, device_id=None)
        await music.now_playing(person_id="usr_1")
        await music.transfer_playback(person_id="usr_1", device_id=devices[1].id, play=True)
        await music.pause(person_id="usr_1")
        await music.skip_next(person_id="usr_1")
        await music.skip_previous(person_id="usr_1")
        await music.set_volume(person_id="usr_1", percent=40)
    assert fake.violations == []
    assert fake.checker.called == {e.name for e in SPOTIFY.endpoints if not e.deprecated}


async def test_a_playlist_the_person_only_follows_is_said_plainly_and_still_plays(pool: asyncpg.Pool) -> None:
    fake = FakeSpotify()
    async with client_for(fake) as http:
        music = SpotifyMusic(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=False))
        followed = next(p for p in await music.my_playlists(person_id="usr_1") if p.id == "fkpl2")
        with pytest.raises(NotAllowed, match="only of playlists the person made") as refused:
            await music.playlist_tracks(person_id="usr_1", playlist_id=followed.id)
        assert "try again" not in str(refused.value)
        await music.play(person_id="usr_1", uri=None, context_uri=followed.uri, device_id=None)
        assert (await music.now_playing(person_id="usr_1")).context_uri == followed.uri
    assert fake.violations == []


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (400, InputInvalid),
        (403, NotAllowed),
        (404, NotFound),
        (500, VendorUnavailable),
        (502, VendorUnavailable),
        (503, VendorUnavailable),
    ],
)
async def test_each_documented_spotify_status_becomes_its_hint(
    pool: asyncpg.Pool, status: int, hint: type[Exception]
) -> None:
    fake = FakeSpotify()
    async with client_for(fake) as http:
        music = SpotifyMusic(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=False))
        fake.failing = status
        with pytest.raises(hint):
            await music.my_devices(person_id="usr_1")
    assert fake.violations == []


@pytest.mark.parametrize(("wait_s", "words"), [(1, "in 1 second"), (30, "in 30 seconds"), (150, "in 3 minutes")])
async def test_a_429_is_said_with_the_wait_spotify_asks_for(pool: asyncpg.Pool, wait_s: int, words: str) -> None:
    fake = FakeSpotify()
    async with client_for(fake) as http:
        music = SpotifyMusic(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=False))
        fake.busy, fake.retry_after_s = True, wait_s
        with pytest.raises(RateLimited) as limited:
            await music.search_tracks(person_id="usr_1", query="jazz", limit=3)
    assert limited.value.retry_after_s == wait_s
    assert str(limited.value).endswith(f"try again {words}.")
    assert fake.violations == []


async def test_no_active_device_and_a_revoked_token_become_their_hints(pool: asyncpg.Pool) -> None:
    fake = FakeSpotify()
    async with client_for(fake) as http:
        music = SpotifyMusic(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=False))
        await music.my_devices(person_id="usr_1")
        fake.players["usr_1"].active = None
        with pytest.raises(NoActiveDevice):
            await music.pause(person_id="usr_1")
        fake.oauth.access.clear()  # every access token now answers 401; the refresh token is gone too
        fake.oauth.refresh.clear()
        with pytest.raises(TokenExpired):
            await music.now_playing(person_id="usr_1")
    assert fake.violations == []
