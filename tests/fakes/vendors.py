"""In-process fakes of the vendor APIs the live adapters talk to, for `httpx.MockTransport`.

Each keeps state per account and answers with the shapes the vendor documents (Spotify
Web API, Gmail/Calendar/People, Tuya OpenAPI, and the OAuth token endpoints), including
their error bodies (`NO_ACTIVE_DEVICE`, `invalid_grant`, Tuya's `success: false`). The
Tuya fake checks every request's signature; the OAuth fakes check client credentials.
They are small on purpose: just enough of each API for the contract suites.

Each fake is held to our restatement of its vendor's reference (tests/specs/): every
request it receives and every answer it gives is checked, and what the reference does not
allow collects in `violations`, which the contract suites require to be empty. Where the
vendor refuses a request (a search limit over 10, a deprecated path, an empty command
list, an unknown Gmail operator), the fake refuses it the same way.
"""

from __future__ import annotations

import base64
import hmac
import itertools
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import message_from_bytes
from typing import Any
from urllib.parse import parse_qs

import httpx

from agents.zee.tuya import canonical_url, sign
from tests.specs.checker import Checker
from tests.specs.google import GMAIL_OPERATORS, GOOGLE
from tests.specs.spotify import SEARCH_LIMIT_MAX, SPOTIFY
from tests.specs.tuya import ERROR_CODES, TUYA

_ids = itertools.count(1)


def _json(status: int, body: Any) -> httpx.Response:
    return httpx.Response(status, json=body)


def _form(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


@dataclass
class FakeOAuth:
    """A provider's token and revoke endpoints: refresh tokens map to accounts."""

    client_id: str
    client_secret: str
    basic_auth: bool
    codes: dict[str, str] = field(default_factory=dict)  # code -> account
    refresh: dict[str, str] = field(default_factory=dict)  # refresh token -> account
    access: dict[str, str] = field(default_factory=dict)  # access token -> account
    revoked: list[str] = field(default_factory=list)
    scope: str = ""
    rotate: bool = False  # hand out a new refresh token on every refresh (Spotify may)
    retry_after_s: int | None = None  # answer the token endpoint with 429 and this wait

    def grant_code(self, account: str) -> str:
        code = f"code-{account}-{next(_ids)}"
        self.codes[code] = account
        return code

    def link(self, account: str) -> str:
        token = f"rt-{account}-{next(_ids)}"
        self.refresh[token] = account
        return token

    def _client_ok(self, request: httpx.Request, form: dict[str, str]) -> bool:
        if self.basic_auth:
            expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
            return bool(request.headers.get("authorization") == f"Basic {expected}")
        return form.get("client_id") == self.client_id and form.get("client_secret") == self.client_secret

    def token(self, request: httpx.Request) -> httpx.Response:
        form = _form(request)
        if self.retry_after_s is not None:
            return httpx.Response(
                429, headers={"Retry-After": str(self.retry_after_s)}, json={"error": "rate_limit_exceeded"}
            )
        if not self._client_ok(request, form):
            return _json(401, {"error": "invalid_client"})
        if form.get("grant_type") == "authorization_code":
            account = self.codes.pop(form.get("code", ""), None)
            if account is None:
                return _json(400, {"error": "invalid_grant", "error_description": "Bad Request"})
            refresh = self.link(account)
        elif form.get("grant_type") == "refresh_token":
            refresh = form.get("refresh_token", "")
            account = self.refresh.get(refresh)
            if account is None:
                return _json(400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
        else:
            return _json(400, {"error": "unsupported_grant_type"})
        access = f"at-{account}-{next(_ids)}"
        self.access[access] = account
        body = {"access_token": access, "token_type": "Bearer", "expires_in": 3600, "scope": self.scope}
        if form.get("grant_type") == "authorization_code":
            body["refresh_token"] = refresh
        elif self.rotate:
            del self.refresh[refresh]
            body["refresh_token"] = self.link(account)
        return _json(200, body)

    def revoke(self, request: httpx.Request) -> httpx.Response:
        token = _form(request).get("token", "")
        if self.refresh.pop(token, None) is None:
            return _json(400, {"error": "invalid_token"})
        self.revoked.append(token)
        return _json(200, {})

    def account_of(self, request: httpx.Request) -> str | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return self.access.get(token) if scheme == "Bearer" else None


# --- Spotify -------------------------------------------------------------------------

_SPOTIFY_TRACKS = [
    ("fk1", "Take Five", "The Dave Brubeck Quartet", "jazz"),
    ("fk2", "So What", "Miles Davis", "jazz"),
    ("fk3", "Blue in Green", "Miles Davis", "jazz"),
    ("fk4", "Golden Hour", "JVKE", "pop"),
    ("fk5", "Clair de Lune", "Claude Debussy", "classical"),
]


def _sp_track(t: tuple[str, str, str, str]) -> dict[str, Any]:
    return {
        "id": t[0],
        "name": t[1],
        "uri": f"spotify:track:{t[0]}",
        "type": "track",
        "duration_ms": 200000,
        "artists": [{"name": t[2]}],
        "album": {"name": f"{t[3]} album"},
    }


def _page(request: httpx.Request, items: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    """Spotify's paging object around the first `limit` items."""
    return {
        "href": str(request.url),
        "items": items[:limit],
        "limit": limit,
        "next": None,
        "offset": 0,
        "previous": None,
        "total": len(items),
    }


@dataclass
class _Player:
    devices: list[dict[str, Any]]
    active: str | None = "fkdev-phone"
    playing: bool = False
    queue: list[str] = field(default_factory=list)
    position: int = 0
    context: str | None = None


class FakeSpotify:
    def __init__(self) -> None:
        self.oauth = FakeOAuth(
            "spotify-client",
            "spotify-secret",
            basic_auth=True,
            scope="user-read-playback-state user-modify-playback-state "
            "user-read-currently-playing playlist-read-private",
        )
        self.players: dict[str, _Player] = {}
        self.free_accounts: set[str] = set()
        self.busy = False  # answer every API call with 429, as Spotify does when rate limiting
        self.retry_after_s = 30  # the wait a 429 names
        self.failing: int | None = None  # answer every API call with this status, for the error tests
        self.checker = Checker(SPOTIFY)
        self.handler = self.checker.holding(self._answer)

    @property
    def violations(self) -> list[str]:
        return self.checker.violations

    def _player(self, account: str) -> _Player:
        return self.players.setdefault(
            account,
            _Player(
                devices=[
                    {"id": "fkdev-phone", "name": "Pixel", "type": "Smartphone", "volume_percent": 50},
                    {"id": "fkdev-speaker", "name": "Kitchen", "type": "Speaker", "volume_percent": 30},
                ]
            ),
        )

    @staticmethod
    def _error(status: int, message: str, reason: str | None = None) -> httpx.Response:
        body: dict[str, Any] = {"status": status, "message": message}
        if reason:
            body["reason"] = reason
        return _json(status, {"error": body})

    def _answer(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == "accounts.spotify.com":
            return self.oauth.token(request)
        account = self.oauth.account_of(request)
        if account is None:
            return self._error(401, "The access token expired")
        if self.busy:
            return httpx.Response(
                429,
                headers={"Retry-After": str(self.retry_after_s)},
                json={"error": {"status": 429, "message": "API rate limit exceeded"}},
            )
        if self.failing is not None:
            return self._error(self.failing, "Failing on purpose")
        path, method, p = request.url.path.removeprefix("/v1"), request.method, self._player(account)
        params = request.url.params
        if path == "/search":
            limit = int(params.get("limit", 5))
            if not 0 <= limit <= SEARCH_LIMIT_MAX or not params.get("q"):
                return self._error(400, "Invalid limit" if params.get("q") else "No search query")
            words = params.get("q", "").lower().split()
            found = [_sp_track(t) for t in _SPOTIFY_TRACKS if all(w in " ".join(t).lower() for w in words)]
            return _json(200, {"tracks": _page(request, found, limit)})
        if path == "/me/playlists":
            playlists = [
                {
                    "id": ident,
                    "name": name,
                    "description": "",
                    "uri": f"spotify:playlist:{ident}",
                    "type": "playlist",
                    "items": {"href": f"https://api.spotify.com/v1/playlists/{ident}/items", "total": total},
                }
                for ident, name, total in (("fkpl1", "Late Jazz", 3), ("fkpl2", "Someone Else's Mix", 2))
            ]
            return _json(200, _page(request, playlists, int(params.get("limit", 20))))
        if path == "/playlists/fkpl1/items":
            items = [
                {"added_at": "2026-01-01T00:00:00Z", "is_local": False, "item": _sp_track(t)}
                for t in _SPOTIFY_TRACKS[:3]
            ]
            return _json(200, _page(request, items, int(params.get("limit", 20))))
        if re.fullmatch(r"/playlists/[^/]+/tracks", path) or path == "/playlists/fkpl2/items":
            # The deprecated path answers 403 for apps in development mode; the items of a
            # playlist the person only follows answer 403 (the reference says so).
            return self._error(403, "Forbidden")
        if path.startswith("/playlists/"):
            return self._error(404, "Resource not found")
        if path == "/me/player/devices":
            return _json(200, {"devices": [{**d, "is_active": d["id"] == p.active} for d in p.devices]})
        if path == "/me/player" and method == "GET":
            if not p.queue:
                return httpx.Response(204)
            track = next(t for t in _SPOTIFY_TRACKS if t[0] == p.queue[p.position])
            device = next((d for d in p.devices if d["id"] == p.active), None)
            return _json(
                200,
                {
                    "is_playing": p.playing,
                    "progress_ms": 1000,
                    "item": _sp_track(track),
                    "device": {**device, "is_active": True} if device else None,
                    "context": {"uri": p.context} if p.context else None,
                },
            )
        if account in self.free_accounts:
            return self._error(403, "Player command failed: Premium required", "PREMIUM_REQUIRED")
        return self._command(request, path, p)

    def _command(self, request: httpx.Request, path: str, p: _Player) -> httpx.Response:
        device_id = request.url.params.get("device_id")
        if device_id is not None:
            if all(d["id"] != device_id for d in p.devices):
                return self._error(404, "Device not found")
            p.active = device_id
        if path == "/me/player" and request.method == "PUT":
            body = json.loads(request.content)
            if all(d["id"] != body["device_ids"][0] for d in p.devices):
                return self._error(404, "Device not found")
            p.active, p.playing = body["device_ids"][0], p.playing or bool(body.get("play"))
            return httpx.Response(204)
        if p.active is None:
            return self._error(404, "Player command failed: No active device found", "NO_ACTIVE_DEVICE")
        if path == "/me/player/play":
            body = json.loads(request.content) if request.content else {}
            ids = [t[0] for t in _SPOTIFY_TRACKS]
            if "context_uri" in body:
                contexts = {"spotify:playlist:fkpl1": ids[:3], "spotify:playlist:fkpl2": ids[3:5]}
                if body["context_uri"] not in contexts:
                    return self._error(404, "Context not found")
                p.queue, p.context = contexts[body["context_uri"]], body["context_uri"]
                offset = (body.get("offset") or {}).get("uri", "")
                p.position = p.queue.index(offset.rsplit(":", 1)[-1]) if offset else 0
            elif "uris" in body:
                ident = body["uris"][0].rsplit(":", 1)[-1]
                if not body["uris"][0].startswith("spotify:track:") or ident not in ids:
                    return self._error(400, "Invalid track uri")
                p.queue, p.position, p.context = [ident, *(i for i in ids if i != ident)], 0, None
            elif not p.queue:
                return self._error(404, "Player command failed: Nothing to play")
            p.playing = True
        elif path == "/me/player/pause":
            p.playing = False
        elif path in ("/me/player/next", "/me/player/previous"):
            if not p.queue:
                return self._error(404, "Player command failed: Nothing playing")
            step = 1 if path.endswith("next") else -1
            p.position, p.playing = (p.position + step) % len(p.queue) if step > 0 else max(0, p.position - 1), True
        elif path == "/me/player/volume":
            volume = int(request.url.params["volume_percent"])
            if not 0 <= volume <= 100:
                return self._error(400, "Invalid volume")
            next(d for d in p.devices if d["id"] == p.active)["volume_percent"] = volume
        else:
            return self._error(404, "Service not found")
        return httpx.Response(204)


# --- Google --------------------------------------------------------------------------


@dataclass
class _Workspace:
    mail: list[dict[str, Any]]
    events: list[dict[str, Any]] = field(default_factory=list)
    contacts: list[dict[str, Any]] = field(default_factory=list)


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


class FakeGoogle:
    def __init__(self) -> None:
        self.oauth = FakeOAuth(
            "google-client",
            "google-secret",
            basic_auth=False,
            scope=" ".join(
                (
                    "https://www.googleapis.com/auth/gmail.readonly",
                    "https://www.googleapis.com/auth/gmail.send",
                    "https://www.googleapis.com/auth/calendar.events",
                    "https://www.googleapis.com/auth/contacts",
                )
            ),
        )
        self.accounts: dict[str, _Workspace] = {}
        self.failing: tuple[int, str] | None = None  # answer every API call with (status, reason)
        self.checker = Checker(GOOGLE)
        self.handler = self.checker.holding(self._answer)

    @property
    def violations(self) -> list[str]:
        return self.checker.violations

    def _account(self, account: str) -> _Workspace:
        if account not in self.accounts:
            now = datetime.now(UTC)
            # Mail across days: an adapter that dropped a date filter would list the old mail.
            self.accounts[account] = _Workspace(
                mail=[
                    self._message(
                        "Sari Wulandari <sari@example.com>",
                        "me@example.com",
                        "Dinner this week?",
                        "Free on Friday?",
                        now - timedelta(minutes=1),
                        ["INBOX", "UNREAD"],
                    ),
                    self._message(
                        "Sari Wulandari <sari@example.com>",
                        "me@example.com",
                        "Photos from the weekend",
                        "Here they are.",
                        now - timedelta(days=2),
                        ["INBOX"],
                    ),
                    self._message(
                        "Billing <billing@example.com>",
                        "me@example.com",
                        "Your invoice",
                        "Paid, thank you.",
                        now - timedelta(days=9),
                        ["INBOX"],
                    ),
                ],
                contacts=[
                    {
                        "resourceName": "people/c1",
                        "names": [{"displayName": "Budi Santoso"}],
                        "emailAddresses": [{"value": "budi@example.com"}],
                    },
                    {
                        "resourceName": "people/c2",
                        "names": [{"displayName": "Sari Wulandari"}],
                        "emailAddresses": [{"value": "sari@example.com"}],
                    },
                ],
            )
        return self.accounts[account]

    @staticmethod
    def _message(sender: str, to: str, subject: str, body: str, at: datetime, labels: list[str]) -> dict[str, Any]:
        ident = f"gm{next(_ids)}"
        return {
            "id": ident,
            "threadId": ident,
            "labelIds": labels,
            "snippet": body[:100],
            "internalDate": str(int(at.timestamp() * 1000)),
            "payload": {
                "mimeType": "multipart/alternative",
                "headers": [
                    {"name": "From", "value": sender},
                    {"name": "To", "value": to},
                    {"name": "Subject", "value": subject},
                ],
                "parts": [
                    {"mimeType": "text/plain", "body": {"data": _b64(body)}},
                    {"mimeType": "text/html", "body": {"data": _b64(f"<p>{body}</p>")}},
                ],
            },
        }

    @staticmethod
    def error(status: int, message: str, reason: str | None = None) -> httpx.Response:
        """Google's error envelope (with the legacy `errors` list where a reason is given)."""
        names = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}
        error: dict[str, Any] = {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}
        if reason:
            error["errors"] = [{"domain": "usageLimits", "reason": reason, "message": message}]
        return _json(status, {"error": error})

    def _answer(self, request: httpx.Request) -> httpx.Response:
        host, path = request.url.host, request.url.path
        if host == "oauth2.googleapis.com":
            return self.oauth.revoke(request) if path == "/revoke" else self.oauth.token(request)
        if self.failing is not None:
            return self.error(self.failing[0], "Failing on purpose", self.failing[1] or None)
        account = self.oauth.account_of(request)
        if account is None:
            return _json(
                401,
                {
                    "error": {
                        "code": 401,
                        "message": "Request had invalid authentication credentials.",
                        "status": "UNAUTHENTICATED",
                    }
                },
            )
        ws = self._account(account)
        if host == "gmail.googleapis.com":
            return self._gmail(request, path.removeprefix("/gmail/v1/users/me"), ws)
        if host == "www.googleapis.com":
            return self._calendar(request, ws)
        return self._people(request, path.removeprefix("/v1"), ws)

    def _gmail(self, request: httpx.Request, path: str, ws: _Workspace) -> httpx.Response:
        if path == "/messages" and request.method == "GET":
            query = request.url.params.get("q", "")
            found = [m for m in ws.mail if self._matches(m, query)]
            found.sort(key=lambda m: -int(m["internalDate"]))
            limit = int(request.url.params.get("maxResults", 100))
            return _json(
                200,
                {
                    "messages": [{"id": m["id"], "threadId": m["threadId"]} for m in found[:limit]],
                    "resultSizeEstimate": len(found),
                },
            )
        if path == "/messages/send":
            raw = json.loads(request.content)["raw"]
            parsed = message_from_bytes(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
            body = parsed.get_payload(decode=True).decode()  # type: ignore[union-attr]
            sent = self._message(
                "me@example.com", str(parsed["To"]), str(parsed["Subject"]), body.strip(), datetime.now(UTC), ["SENT"]
            )
            ws.mail.append(sent)
            return _json(200, {"id": sent["id"], "threadId": sent["threadId"], "labelIds": ["SENT"]})
        message = next((m for m in ws.mail if path == f"/messages/{m['id']}"), None)
        return _json(200, message) if message else _json(404, {"error": {"code": 404, "message": "Not Found"}})

    @staticmethod
    def _matches(message: dict[str, Any], query: str) -> bool:
        """Gmail's reading of a query, for the terms the fake knows; like Gmail, a `word:value`
        that is not an operator is text to find (so it finds nothing here), and every
        other operator Gmail documents but the fake does not model matches nothing."""
        headers = {h["name"].lower(): h["value"].lower() for h in message["payload"]["headers"]}
        text = " ".join([*headers.values(), message["snippet"].lower()])
        seconds = int(message["internalDate"]) // 1000
        labels = set(message["labelIds"])
        for match in re.finditer(r'(-?)(?:(\w+):("[^"]*"|\S+)|"([^"]*)"|(\S+))', query):
            negated, key, value, phrase, word = match.groups()
            value = (value or "").strip('"').lower()
            if key is None:
                found = (phrase if phrase is not None else word or "").lower() in text
            elif key.lower() not in GMAIL_OPERATORS:
                found = f"{key}:{value}".lower() in text
            elif key == "in":
                found = value in ("anywhere", "all") or value.upper() in labels
            elif key == "is" and value in ("unread", "read"):
                found = ("UNREAD" in labels) == (value == "unread")
            elif key in ("from", "to", "subject"):
                found = value in headers.get(key, "")
            elif key == "after" and value.isdigit():
                found = seconds >= int(value)
            elif key == "before" and value.isdigit():
                found = seconds < int(value)
            else:
                found = False
            if found == bool(negated):
                return False
        return True

    def _calendar(self, request: httpx.Request, ws: _Workspace) -> httpx.Response:
        if request.method == "POST":
            body = json.loads(request.content)
            start, end = (datetime.fromisoformat(body[k]["dateTime"]) for k in ("start", "end"))
            if end <= start:
                return _json(400, {"error": {"code": 400, "message": "The specified time range is empty."}})
            event = {
                **body,
                "kind": "calendar#event",
                "status": "confirmed",
                "id": f"ev{next(_ids)}",
                "htmlLink": "https://calendar.google.com/event?eid=x",
            }
            ws.events.append(event)
            return _json(200, event)
        params = request.url.params
        low = datetime.fromisoformat(params["timeMin"])
        high = datetime.fromisoformat(params["timeMax"]) if "timeMax" in params else None
        found = [
            e
            for e in ws.events
            if datetime.fromisoformat(e["end"]["dateTime"]) > low
            and (high is None or datetime.fromisoformat(e["start"]["dateTime"]) < high)
            and params.get("q", "").lower() in json.dumps(e).lower()
        ]
        found.sort(key=lambda e: datetime.fromisoformat(e["start"]["dateTime"]))
        return _json(200, {"kind": "calendar#events", "items": found[: int(params.get("maxResults", 250))]})

    def _people(self, request: httpx.Request, path: str, ws: _Workspace) -> httpx.Response:
        if path == "/people:createContact":
            body = json.loads(request.content)
            person = {
                "resourceName": f"people/c{next(_ids)}",
                "names": [{"displayName": body["names"][0]["givenName"]}],
                "emailAddresses": body.get("emailAddresses", []),
                "phoneNumbers": body.get("phoneNumbers", []),
            }
            ws.contacts.append(person)
            return _json(200, person)
        size = int(request.url.params.get("pageSize", 100))
        return _json(200, {"connections": ws.contacts[:size], "totalPeople": len(ws.contacts)})


# --- Tuya ----------------------------------------------------------------------------

_TUYA_RULES: dict[str, dict[str, Any]] = {
    "dj": {"switch_led": bool, "bright_value": (10, 1000), "temp_value": (0, 1000)},
    "cl": {"percent_control": (0, 100), "control": {"open", "close", "stop"}},
    "kg": {"switch_1": bool, "switch_2": bool},
    "ms": {"lock_motor_state": bool},
}


class FakeTuya:
    CLIENT_ID, SECRET = "tuya-access-id", "tuya-access-secret"

    def __init__(self) -> None:
        self.tokens: set[str] = set()
        self.refresh_tokens: set[str] = set()
        self.devices: dict[str, list[dict[str, Any]]] = {}  # uid -> devices
        self.bad_signatures = 0
        self.failing: int | None = None  # answer every business call with this error code
        self.checker = Checker(TUYA)
        self.handler = self.checker.holding(self._answer)

    @property
    def violations(self) -> list[str]:
        return self.checker.violations

    def user(self, uid: str) -> None:
        self.devices[uid] = [
            {
                "id": f"{uid}light",
                "name": "Desk lamp",
                "category": "dj",
                "online": True,
                "status": [{"code": "switch_led", "value": False}, {"code": "bright_value", "value": 500}],
            },
            {
                "id": f"{uid}curtain",
                "name": "Curtain",
                "category": "cl",
                "online": True,
                "status": [{"code": "percent_control", "value": 100}, {"code": "control", "value": "stop"}],
            },
            {
                "id": f"{uid}door",
                "name": "Front door",
                "category": "ms",
                "online": True,
                "status": [{"code": "lock_motor_state", "value": True}],
            },
            {
                "id": f"{uid}strip",
                "name": "Desk switch",
                "category": "kg",
                "online": True,
                "status": [{"code": "switch_1", "value": False}, {"code": "switch_2", "value": False}],
            },
        ]

    def expire_tokens(self) -> None:
        self.tokens.clear()

    @staticmethod
    def _fail(code: int, msg: str) -> httpx.Response:
        return _json(200, {"success": False, "code": code, "msg": msg, "t": 1})

    @staticmethod
    def _ok(result: Any) -> httpx.Response:
        return _json(200, {"success": True, "result": result, "t": 1})

    def _answer(self, request: httpx.Request) -> httpx.Response:
        h = request.headers
        token = h.get("access_token", "")
        url = canonical_url(request.url.path, dict(request.url.params))
        expected = sign(
            client_id=self.CLIENT_ID,
            secret=self.SECRET,
            t=h.get("t", ""),
            nonce=h.get("nonce", ""),
            method=request.method,
            url=url,
            body=request.content,
            access_token=token,
        )
        if h.get("client_id") != self.CLIENT_ID or not hmac.compare_digest(h.get("sign", ""), expected):
            self.bad_signatures += 1
            return self._fail(1004, "sign invalid")
        path = request.url.path
        if path == "/v1.0/token" or path.startswith("/v1.0/token/"):
            if path != "/v1.0/token" and path.rsplit("/", 1)[-1] not in self.refresh_tokens:
                return self._fail(1012, "token status is invalid")
            access, refresh = f"tat{next(_ids)}", f"trt{next(_ids)}"
            self.tokens.add(access)
            self.refresh_tokens.add(refresh)
            return self._ok({"access_token": access, "expire_time": 7200, "refresh_token": refresh, "uid": "proj"})
        if token not in self.tokens:
            return self._fail(1010, "token is expired")
        if self.failing is not None:
            return self._fail(self.failing, ERROR_CODES[self.failing])
        if match := re.fullmatch(r"/v1.0/users/(\w+)/devices", path):
            return self._ok(self.devices.get(match.group(1), []))
        device = next(
            (d for ds in self.devices.values() for d in ds if path.startswith(f"/v1.0/devices/{d['id']}/")), None
        )
        if device is None:
            return self._fail(1106, "permission deny")
        if path.endswith("/status"):
            return self._ok(device["status"])
        if path.endswith("/multiple-names"):
            gangs = [s["code"] for s in device["status"] if s["code"].startswith("switch_")]
            names = {"switch_1": "Fan", "switch_2": "Monitor"}
            return self._ok(
                [{"identifier": "main", "name": device["name"]}]
                + [{"identifier": g, "name": names.get(g, g)} for g in gangs]
            )
        return self._command(device, json.loads(request.content))

    def _command(self, device: dict[str, Any], body: dict[str, Any]) -> httpx.Response:
        rules = _TUYA_RULES[device["category"]]
        change = {}
        if not body.get("commands"):
            return self._fail(1100, "param is empty")  # Tuya refuses an empty or missing list
        for command in body["commands"]:
            rule, value = rules.get(command.get("code")), command.get("value")
            if rule is bool:
                ok = isinstance(value, bool)
            elif isinstance(rule, tuple):
                ok = isinstance(value, int) and not isinstance(value, bool) and rule[0] <= value <= rule[1]
            else:
                ok = rule is not None and value in rule
            if not ok:
                return self._fail(2008, "command or value not support")
            change[command["code"]] = value
        if device["category"] == "cl" and change.get("control") in ("open", "close"):
            change["percent_control"] = 0 if change["control"] == "open" else 100  # the motor moves
        for status in device["status"]:
            if status["code"] in change:
                status["value"] = change[status["code"]]
        return self._ok(True)


class Vendors:
    """Google, Spotify and Tuya together, routed by host: one httpx.MockTransport for all."""

    def __init__(self) -> None:
        self.google, self.spotify, self.tuya = FakeGoogle(), FakeSpotify(), FakeTuya()

    def route(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        if host.endswith("spotify.com"):
            return self.spotify.handler(request)
        if "tuya" in host:
            return self.tuya.handler(request)
        return self.google.handler(request)
