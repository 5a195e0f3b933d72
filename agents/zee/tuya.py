"""`TuyaHome`: the `SmartHome` port on the Tuya Cloud OpenAPI, over httpx.

Every request is signed the way Tuya documents it (HMAC-SHA256, upper-case hex):

    stringToSign = METHOD \\n SHA256(body) \\n signed headers ("name:value\\n" each) \\n URL
    sign = HMAC-SHA256(client_id [+ access_token] + t + nonce + stringToSign, secret)

where URL is the path and its query parameters sorted by name, and the access token is
left out only for the token calls themselves. The project's access token is cached and
renewed (by its refresh token, else afresh) shortly before it expires, or at once when
Tuya says it is no longer valid. A person reaches only devices of their own linked app
account: every status read and command first checks the device is in their list, since
a project's credentials could otherwise reach any device of the project.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import httpx

from agents.errors import ToolError
from agents.integrations.hints import not_linked, rate_limited, unavailable
from agents.zee.home import Command, CommandInvalid, Device, DeviceNotFound

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_EARLY_S = 60
# Tuya's documented codes, grouped by what they mean for the person (docs/integrations.md).
# An access token that is invalid or expired: renewed, and the call retried once.
_TOKEN_CODES = frozenset({1010, 1011, 1012})
# A request missing or misstating a parameter ("param is empty", "params range invalid",
# "param is null", "commands issue error", "param is illegal"), or a command or value the
# device does not support: the model's input, never worth retrying as is.
_INPUT_CODES = frozenset({1100, 1101, 1102, 1103, 1109})
_COMMAND_CODES = frozenset({2008, 2009})
_DENIED_CODES = frozenset({1106})
# "concurrent request over limit" and "requests too frequent": Tuya's rate limits.
_RATE_CODES = frozenset({1110, 1199})
_GANG = re.compile(r"^switch_\d+$")
_GANGED_MAX = 20  # channel names are fetched for at most this many multi-gang devices per listing

# (person id) -> the Tuya uid of their linked app account, or None
UidOf = Callable[[str], Awaitable[str | None]]


def canonical_url(path: str, query: Mapping[str, Any] | None = None) -> str:
    if not query:
        return path
    return path + "?" + "&".join(f"{k}={query[k]}" for k in sorted(query))


def string_to_sign(method: str, url: str, body: bytes = b"", headers: Mapping[str, str] | None = None) -> str:
    signed = "".join(f"{k}:{v}\n" for k, v in (headers or {}).items())
    return f"{method.upper()}\n{hashlib.sha256(body).hexdigest()}\n{signed}\n{url}"


def sign(
    *,
    client_id: str,
    secret: str,
    t: str,
    nonce: str,
    method: str,
    url: str,
    body: bytes = b"",
    access_token: str = "",
    headers: Mapping[str, str] | None = None,
) -> str:
    message = client_id + access_token + t + nonce + string_to_sign(method, url, body, headers)
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest().upper()


class TuyaHome:
    """The live smart home: the person's devices on their linked Tuya app account."""

    def __init__(
        self,
        *,
        http: httpx.AsyncClient,
        base_url: str,
        client_id: str,
        secret: str,
        uid_of: UidOf,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._http = http
        self._base_url = base_url.rstrip("/")
        self._client_id = client_id
        self._secret = secret
        self._uid_of = uid_of
        self._clock_ms = clock_ms
        self._token: tuple[str, str, float] | None = None  # access, refresh, renew-after (monotonic)

    async def _send(
        self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None, token: str = ""
    ) -> dict[str, Any]:
        url = canonical_url(path, query)
        raw = json.dumps(body, separators=(",", ":")).encode() if body is not None else b""
        t, nonce = str(self._clock_ms()), secrets.token_hex(16)
        headers = {
            "client_id": self._client_id,
            "t": t,
            "nonce": nonce,
            "sign_method": "HMAC-SHA256",
            "sign": sign(
                client_id=self._client_id,
                secret=self._secret,
                t=t,
                nonce=nonce,
                method=method,
                url=url,
                body=raw,
                access_token=token,
            ),
            "Content-Type": "application/json",
        }
        if token:
            headers["access_token"] = token
        try:
            response = await self._http.request(method, self._base_url + url, content=raw or None, headers=headers)
        except httpx.HTTPError as exc:
            raise unavailable("Tuya") from exc
        if response.status_code == 429:
            raise rate_limited("Tuya")
        if response.status_code != 200:
            raise unavailable("Tuya")
        payload: dict[str, Any] = response.json()
        return payload

    async def _access_token(self, *, renew: bool = False) -> str:
        if self._token is not None and not renew and self._token[2] > time.monotonic():
            return self._token[0]
        payload: dict[str, Any] = {}
        if self._token is not None:
            payload = await self._send("GET", f"/v1.0/token/{self._token[1]}")
        if not payload.get("success"):
            payload = await self._send("GET", "/v1.0/token", query={"grant_type": 1})
        if not payload.get("success"):
            raise unavailable("Tuya")
        result = payload["result"]
        expires = time.monotonic() + max(0, int(result.get("expire_time", 7200)) - _EARLY_S)
        self._token = (str(result["access_token"]), str(result.get("refresh_token", "")), expires)
        return self._token[0]

    async def _call(self, method: str, path: str, *, body: Any = None) -> Any:
        """A business call with the access token, renewed and retried once if Tuya refuses it."""
        for attempt in range(2):
            payload = await self._send(method, path, body=body, token=await self._access_token(renew=attempt > 0))
            if payload.get("success"):
                return payload.get("result")
            code = int(payload.get("code", 0))
            if code in _TOKEN_CODES and attempt == 0:
                continue
            if code in _RATE_CODES:
                raise rate_limited("Tuya")
            if code in _INPUT_CODES:
                raise CommandInvalid(f"Tuya refused the request as incomplete: {str(payload.get('msg', ''))[:200]}")
            if code in _COMMAND_CODES:
                raise CommandInvalid(f"Tuya refused the command: {str(payload.get('msg', ''))[:200]}")
            if code in _DENIED_CODES:
                raise DeviceNotFound("That device isn't on the person's Tuya account; check the id with list_devices.")
            raise unavailable("Tuya")
        raise unavailable("Tuya")

    async def _uid(self, person_id: str) -> str:
        uid = await self._uid_of(person_id)
        if uid is None:
            raise not_linked("Tuya")
        return uid

    async def list_devices(self, *, person_id: str) -> list[Device]:
        result = await self._call("GET", f"/v1.0/users/{await self._uid(person_id)}/devices")
        devices = [d for d in (result if isinstance(result, list) else []) if isinstance(d, dict) and "id" in d]
        multi = [d for d in devices if sum(1 for s in d.get("status", []) if _GANG.match(str(s.get("code")))) > 1]
        names: dict[str, dict[str, str]] = {}
        if multi:
            async with asyncio.TaskGroup() as group:
                tasks = {
                    str(d["id"]): group.create_task(self._channel_names(str(d["id"]))) for d in multi[:_GANGED_MAX]
                }
            names = {ident: task.result() for ident, task in tasks.items()}
        return [
            Device(
                id=str(d["id"]),
                name=str(d.get("name", "")),
                category=str(d.get("category", "")),
                online=bool(d.get("online", False)),
                status={s["code"]: s.get("value") for s in d.get("status", []) if "code" in s},
                channel_names=names.get(str(d["id"]), {}),
            )
            for d in devices
        ]

    async def _channel_names(self, device_id: str) -> dict[str, str]:
        """A multi-gang device's channel names ("switch_1" -> "Fan"); none if Tuya has none to give."""
        try:
            result = await self._call("GET", f"/v1.0/devices/{device_id}/multiple-names")
        except ToolError:
            return {}  # names are a help, not a reason to fail the listing
        return {
            str(n["identifier"]): str(n.get("name", ""))
            for n in (result if isinstance(result, list) else [])
            if isinstance(n, dict) and n.get("identifier") and n.get("identifier") != "main"
        }

    async def _owned(self, person_id: str, device_id: str) -> None:
        if not any(d.id == device_id for d in await self.list_devices(person_id=person_id)):
            raise DeviceNotFound(f"There is no device {device_id!r} on the person's Tuya account; check list_devices.")

    async def device_status(self, *, person_id: str, device_id: str) -> dict[str, Any]:
        await self._owned(person_id, device_id)
        result = await self._call("GET", f"/v1.0/devices/{device_id}/status")
        return {s["code"]: s.get("value") for s in (result or []) if isinstance(s, dict) and "code" in s}

    async def send_commands(self, *, person_id: str, device_id: str, commands: Sequence[Command]) -> None:
        if not commands:
            raise CommandInvalid("Send at least one command.")
        await self._owned(person_id, device_id)
        body = {"commands": [{"code": c.code, "value": c.value} for c in commands]}
        await self._call("POST", f"/v1.0/devices/{device_id}/commands", body=body)
