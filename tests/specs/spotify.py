"""Our reading of the Spotify Web API reference, for the calls `SpotifyMusic` and the OAuth
client make: restated in our own words and shapes, not copied.

Sources, read on 2026-12-02:
- Spotify's OpenAPI document (https://developer.spotify.com/reference/web-api/open-api-schema.yaml),
  as republished in github.com/sonallux/spotify-web-api (official-spotify-open-api.yml at
  commit a3369587, 2026-08-21): paths, parameters, bounds, bodies, response objects,
  per-operation statuses (401, 403, 429), and which paths and fields are deprecated.
- https://developer.spotify.com/documentation/web-api/concepts/api-calls: the response
  statuses and the error object; https://developer.spotify.com/documentation/web-api/concepts/rate-limits:
  a 429 carries `Retry-After` in seconds.
- The player error reasons (`PREMIUM_REQUIRED`, `NO_ACTIVE_DEVICE`, ...) from the Web API
  reference's player error object; they are not in the OpenAPI document.
- https://developer.spotify.com/documentation/web-api/tutorials/refreshing-tokens and
  .../code-flow: the token endpoint's form, Basic client authentication and answer.
"""

from __future__ import annotations

from tests.specs.checker import Choice, Deprecated, Endpoint, Fields, Many, Maybe, Number, OneOf, Param, Spec

API = "api.spotify.com"
READ_PLAYBACK, MODIFY_PLAYBACK = "user-read-playback-state", "user-modify-playback-state"

# Search answers at most 10 items per type (the reference lowered it from 50).
SEARCH_LIMIT_MAX = 10
PAGE_LIMIT_MAX = 50
VOLUME_MIN, VOLUME_MAX = 0, 100

_ARTIST = Fields({"id": str, "name": str, "uri": str, "type": Choice.of("artist")}, frozenset({"name"}))
TRACK = Fields(
    {
        "id": str,
        "name": str,
        "uri": str,
        "type": Choice.of("track"),
        "duration_ms": int,
        "artists": Many(_ARTIST),
        "album": Fields({"id": str, "name": str, "uri": str}),
    },
    frozenset({"id", "name", "uri", "type"}),
)


def _page(item: Fields) -> Fields:
    return Fields(
        {
            "href": str,
            "items": Many(item),
            "limit": int,
            "next": Maybe(str),
            "offset": int,
            "previous": Maybe(str),
            "total": int,
        },
        frozenset({"href", "items", "limit", "next", "offset", "previous", "total"}),
    )


_PLAYLIST = Fields(
    {
        "id": str,
        "name": str,
        "description": Maybe(str),
        "uri": str,
        "type": Choice.of("playlist"),
        "items": Fields({"href": str, "total": int}),
        "tracks": Deprecated("items"),
    },
    frozenset({"id", "name", "uri"}),
)
_PLAYLIST_ITEM = Fields(
    {"added_at": Maybe(str), "is_local": bool, "item": Maybe(TRACK), "track": Deprecated("item")},
    frozenset({"item"}),
)
DEVICE = Fields(
    {
        "id": Maybe(str),
        "name": str,
        "type": str,
        "is_active": bool,
        "is_private_session": bool,
        "is_restricted": bool,
        "volume_percent": Maybe(Number(VOLUME_MIN, VOLUME_MAX)),
        "supports_volume": bool,
    },
    frozenset({"id", "name", "type", "is_active"}),
)
_PLAYBACK = Fields(
    {
        "device": DEVICE,
        "is_playing": bool,
        "progress_ms": Maybe(int),
        "item": Maybe(TRACK),
        "context": Maybe(Fields({"type": str, "href": str, "uri": str})),
        "timestamp": int,
        "shuffle_state": bool,
        "repeat_state": Choice.of("off", "track", "context"),
        "currently_playing_type": Choice.of("track", "episode", "ad", "unknown"),
    },
    frozenset({"device", "is_playing"}),
)

_DEVICE_ID = {"device_id": Param(str)}
_MARKET = Param(str)

# The reasons a player call may give with its error (the player error object).
PLAYER_REASONS = frozenset(
    {
        "NO_PREV_TRACK",
        "NO_NEXT_TRACK",
        "NO_SPECIFIC_TRACK",
        "ALREADY_PAUSED",
        "NOT_PAUSED",
        "NOT_PLAYING_LOCALLY",
        "NOT_PLAYING_TRACK",
        "NOT_PLAYING_CONTEXT",
        "ENDLESS_CONTEXT",
        "CONTEXT_DISALLOW",
        "ALREADY_PLAYING",
        "RATE_LIMITED",
        "REMOTE_CONTROL_DISALLOW",
        "DEVICE_NOT_CONTROLLABLE",
        "VOLUME_CONTROL_DISALLOW",
        "NO_ACTIVE_DEVICE",
        "PREMIUM_REQUIRED",
        "UNKNOWN",
    }
)

_TOKEN_ANSWER = Fields(
    {"access_token": str, "token_type": Choice.of("Bearer"), "scope": str, "expires_in": int, "refresh_token": str},
    frozenset({"access_token", "token_type", "expires_in"}),
)

SPOTIFY = Spec(
    vendor="Spotify",
    sources=(
        "https://developer.spotify.com/reference/web-api/open-api-schema.yaml",
        "https://developer.spotify.com/documentation/web-api/concepts/api-calls",
        "https://developer.spotify.com/documentation/web-api/concepts/rate-limits",
        "https://developer.spotify.com/documentation/web-api/tutorials/refreshing-tokens",
    ),
    read_on="2026-12-02",
    endpoints=(
        Endpoint(
            "search",
            "GET",
            API,
            "/v1/search",
            query={
                "q": Param(str, required=True),
                "type": Param(
                    str,
                    choices=frozenset({"album", "artist", "playlist", "track", "show", "episode", "audiobook"}),
                    listed=True,
                    required=True,
                ),
                "market": _MARKET,
                "limit": Param(int, low=0, high=SEARCH_LIMIT_MAX),
                "offset": Param(int, low=0, high=1000),
                "include_external": Param(str, choices=frozenset({"audio"})),
            },
            answers={200: Fields({"tracks": _page(TRACK)})},
        ),
        Endpoint(
            "get-a-list-of-current-users-playlists",
            "GET",
            API,
            "/v1/me/playlists",
            query={"limit": Param(int, low=0, high=PAGE_LIMIT_MAX), "offset": Param(int, low=0, high=100_000)},
            answers={200: _page(_PLAYLIST)},
            scopes=("playlist-read-private",),
        ),
        Endpoint(
            "get-playlists-items",
            "GET",
            API,
            "/v1/playlists/{playlist_id}/items",
            query={
                "market": _MARKET,
                "fields": Param(str),
                "limit": Param(int, low=0, high=PAGE_LIMIT_MAX),
                "offset": Param(int, low=0),
                "additional_types": Param(str, choices=frozenset({"track", "episode"}), listed=True),
            },
            answers={200: _page(_PLAYLIST_ITEM)},
            scopes=("playlist-read-private",),
        ),
        Endpoint(
            "get-playlists-tracks",
            "GET",
            API,
            "/v1/playlists/{playlist_id}/tracks",
            deprecated="GET /v1/playlists/{playlist_id}/items",
        ),
        Endpoint(
            "get-information-about-the-users-current-playback",
            "GET",
            API,
            "/v1/me/player",
            query={"market": _MARKET, "additional_types": Param(str)},
            answers={200: _PLAYBACK, 204: None},
            scopes=(READ_PLAYBACK,),
        ),
        Endpoint(
            "get-a-users-available-devices",
            "GET",
            API,
            "/v1/me/player/devices",
            answers={200: Fields({"devices": Many(DEVICE)}, frozenset({"devices"}))},
            scopes=(READ_PLAYBACK,),
        ),
        Endpoint(
            "start-a-users-playback",
            "PUT",
            API,
            "/v1/me/player/play",
            query=_DEVICE_ID,
            body=Maybe(
                Fields(
                    {
                        "context_uri": str,
                        "uris": Many(str, items_min=1),
                        "offset": Fields({"position": Number(0), "uri": str}),
                        "position_ms": Number(0),
                    }
                )
            ),
            answers={204: None},
            scopes=(MODIFY_PLAYBACK,),
        ),
        Endpoint(
            "transfer-a-users-playback",
            "PUT",
            API,
            "/v1/me/player",
            # Only one device id is supported; more is a 400.
            body=Fields({"device_ids": Many(str, items_min=1, items_max=1), "play": bool}, frozenset({"device_ids"})),
            answers={204: None},
            scopes=(MODIFY_PLAYBACK,),
        ),
        Endpoint("pause-a-users-playback", "PUT", API, "/v1/me/player/pause", query=_DEVICE_ID, answers={204: None}),
        Endpoint(
            "skip-users-playback-to-next-track",
            "POST",
            API,
            "/v1/me/player/next",
            query=_DEVICE_ID,
            answers={204: None},
        ),
        Endpoint(
            "skip-users-playback-to-previous-track",
            "POST",
            API,
            "/v1/me/player/previous",
            query=_DEVICE_ID,
            answers={204: None},
        ),
        Endpoint(
            "set-volume-for-users-playback",
            "PUT",
            API,
            "/v1/me/player/volume",
            query={"volume_percent": Param(int, low=VOLUME_MIN, high=VOLUME_MAX, required=True), **_DEVICE_ID},
            answers={204: None},
            scopes=(MODIFY_PLAYBACK,),
        ),
        Endpoint(
            "token",
            "POST",
            "accounts.spotify.com",
            "/api/token",
            form={
                "grant_type": Param(str, choices=frozenset({"authorization_code", "refresh_token"}), required=True),
                "code": Param(str),
                "redirect_uri": Param(str),
                "refresh_token": Param(str),
            },
            headers=frozenset({"authorization"}),  # the client's id and secret, as Basic
            answers={200: _TOKEN_ANSWER},
        ),
    ),
    # 401, 403 and 429 per operation in the OpenAPI document; 400, 404, 500, 502 and 503 on
    # the api-calls page for every call.
    error_statuses=frozenset({400, 401, 403, 404, 429, 500, 502, 503}),
    # The API answers the error object; the token endpoint answers OAuth's error form.
    error_body=OneOf(
        (
            Fields(
                {
                    "error": Fields(
                        {"status": Number(400, 599), "message": str, "reason": Choice(PLAYER_REASONS)},
                        frozenset({"status", "message"}),
                    )
                },
                frozenset({"error"}),
            ),
            Fields({"error": str, "error_description": str}, frozenset({"error"})),
        )
    ),
    error_headers={429: frozenset({"retry-after"})},
)
