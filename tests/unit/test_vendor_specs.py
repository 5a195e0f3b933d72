"""The spec checker (tests/specs/) refuses what the vendors' references do not allow: the
three misreadings the adapters once shared with their fakes among them, so a fake that
drifted back to them would fail the contract suites."""

from __future__ import annotations

import json
from datetime import date

import httpx
import pytest

from agents.integrations.hints import rate_limited, retry_after_s, wait_words
from agents.yori.music import SEARCH_LIMIT_MAX
from agents.yori.tools import SPECS
from tests.specs.checker import Checker, Spec
from tests.specs.google import GOOGLE
from tests.specs.spotify import SEARCH_LIMIT_MAX as SPOTIFY_SEARCH_LIMIT_MAX
from tests.specs.spotify import SPOTIFY
from tests.specs.tuya import TUYA

SPOTIFY_API = "https://api.spotify.com/v1"
_SIGNED = {"client_id": "c", "sign": "s", "t": "1", "nonce": "n", "sign_method": "HMAC-SHA256", "access_token": "a"}


def _asked(checker: Checker, method: str, url: str, **kwargs: object) -> list[str]:
    return checker.request(httpx.Request(method, url, **kwargs))  # type: ignore[arg-type]


def _answered(checker: Checker, request: httpx.Request, response: httpx.Response) -> list[str]:
    checker.request(request)
    return checker.response(request, response)


def test_the_deprecated_playlist_tracks_path_is_refused() -> None:
    wrong = _asked(Checker(SPOTIFY), "GET", f"{SPOTIFY_API}/playlists/abc/tracks?limit=50")
    assert any("deprecated, use GET /v1/playlists/{playlist_id}/items" in w for w in wrong)
    assert _asked(Checker(SPOTIFY), "GET", f"{SPOTIFY_API}/playlists/abc/items?limit=50") == []


@pytest.mark.parametrize(("limit", "allowed"), [(1, True), (10, True), (11, False), (20, False), (-1, False)])
def test_search_takes_at_most_ten(limit: int, allowed: bool) -> None:
    wrong = _asked(Checker(SPOTIFY), "GET", f"{SPOTIFY_API}/search?q=jazz&type=track&limit={limit}")
    assert (wrong == []) is allowed, wrong


def test_the_music_port_and_the_tool_offer_no_more_than_spotify_answers() -> None:
    assert SEARCH_LIMIT_MAX == SPOTIFY_SEARCH_LIMIT_MAX == 10
    search = next(s for s in SPECS if s.name == "search_tracks")
    assert search.parameters["properties"]["limit"]["maximum"] == SPOTIFY_SEARCH_LIMIT_MAX


def test_deprecated_and_undocumented_answer_fields_are_refused() -> None:
    request = httpx.Request("GET", f"{SPOTIFY_API}/me/playlists?limit=50")
    page = {"href": "h", "limit": 50, "next": None, "offset": 0, "previous": None, "total": 1}
    playlist = {"id": "p", "name": "P", "uri": "spotify:playlist:p"}
    old = httpx.Response(200, json={**page, "items": [{**playlist, "tracks": {"total": 3}}]})
    assert any("deprecated, use items" in w for w in _answered(Checker(SPOTIFY), request, old))
    made_up = httpx.Response(200, json={**page, "items": [{**playlist, "mood": "happy"}]})
    assert any("mood: not in the reference" in w for w in _answered(Checker(SPOTIFY), request, made_up))
    missing = httpx.Response(200, json={"items": [playlist]})
    assert any("total: required but missing" in w for w in _answered(Checker(SPOTIFY), request, missing))


def test_a_429_without_retry_after_and_an_undocumented_status_are_refused() -> None:
    request = httpx.Request("GET", f"{SPOTIFY_API}/me/player/devices")
    error = {"error": {"status": 429, "message": "slow down"}}
    assert "retry-after" in str(_answered(Checker(SPOTIFY), request, httpx.Response(429, json=error)))
    with_wait = httpx.Response(429, json=error, headers={"Retry-After": "5"})
    assert _answered(Checker(SPOTIFY), request, with_wait) == []
    assert "418 is not documented" in str(_answered(Checker(SPOTIFY), request, httpx.Response(418)))


@pytest.mark.parametrize(
    ("q", "allowed"),
    [
        ("in:inbox after:1764633600 from:sari", True),
        ('subject:"dinner plans" -is:unread', True),
        ("newer_than:3d", True),
        ("newer_than:2w", False),  # Gmail documents d, m and y only
        ("after:yesterday", False),
        ("sender:sari", False),  # not an operator: Gmail would search for the text
    ],
)
def test_gmail_queries_use_only_documented_operators(q: str, allowed: bool) -> None:
    url = httpx.URL("https://gmail.googleapis.com/gmail/v1/users/me/messages", params={"q": q, "maxResults": 10})
    wrong = _asked(Checker(GOOGLE), "GET", str(url))
    assert (wrong == []) is allowed, wrong


@pytest.mark.parametrize(
    ("params", "allowed"),
    [
        ({"personFields": "names,emailAddresses", "pageSize": 100}, True),
        ({"personFields": "names", "pageSize": 2001}, False),
        ({"pageSize": 10}, False),  # personFields is required
        ({"personFields": "names,shoeSize"}, False),
    ],
)
def test_people_connections_parameters(params: dict[str, object], allowed: bool) -> None:
    url = httpx.URL("https://people.googleapis.com/v1/people/me/connections", params=params)
    assert (_asked(Checker(GOOGLE), "GET", str(url)) == []) is allowed


def test_an_empty_tuya_command_list_is_refused() -> None:
    url = "https://openapi.tuyaus.com/v1.0/devices/d1/commands"
    empty = _asked(Checker(TUYA), "POST", url, content=json.dumps({"commands": []}).encode(), headers=_SIGNED)
    assert any("fewer than 1 items" in w for w in empty)
    one = {"commands": [{"code": "switch_led", "value": True}]}
    assert _asked(Checker(TUYA), "POST", url, content=json.dumps(one).encode(), headers=_SIGNED) == []
    unsigned = _asked(Checker(TUYA), "POST", url, content=json.dumps(one).encode())
    assert "header sign: required but missing" in str(unsigned)


def test_tuya_failures_carry_only_documented_codes() -> None:
    request = httpx.Request("GET", "https://openapi.tuyaus.com/v1.0/devices/d1/status", headers=_SIGNED)
    known = httpx.Response(200, json={"success": False, "code": 1110, "msg": "concurrent request over limit", "t": 1})
    assert _answered(Checker(TUYA), request, known) == []
    unknown = httpx.Response(200, json={"success": False, "code": 40000309, "msg": "?", "t": 1})
    assert _answered(Checker(TUYA), request, unknown) != []


@pytest.mark.parametrize(
    ("header", "words"),
    [
        (None, "in a minute"),
        ("1", "in 1 second"),
        ("30", "in 30 seconds"),
        ("90", "in 90 seconds"),
        ("91", "in 2 minutes"),
        ("150", "in 3 minutes"),
        ("Wed, 21 Oct 2026 07:28:00 GMT", "in a minute"),  # a date is not read as seconds
    ],
)
def test_retry_after_is_said_in_whole_seconds_or_minutes_never_shorter(header: str | None, words: str) -> None:
    assert wait_words(retry_after_s(header)) == words
    error = rate_limited("Spotify", retry_after_s=retry_after_s(header))
    assert str(error) == f"Spotify is asking us to slow down; try again {words}."
    assert error.retry_after_s == retry_after_s(header)


@pytest.mark.parametrize("spec", [SPOTIFY, GOOGLE, TUYA], ids=lambda s: s.vendor)
def test_each_spec_names_its_sources_and_when_they_were_read(spec: Spec) -> None:
    assert spec.sources and all(s.startswith("https://") for s in spec.sources)
    assert date.fromisoformat(spec.read_on)
    assert len({e.name for e in spec.endpoints}) == len(spec.endpoints)
