"""A Twilio Media Streams caller for phone tests: the messages Twilio sends (`connected`,
`start`, `media`, `stop`), μ-law at 8 kHz streamed in real time, and a recorder that
decodes what the server sends back."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipecat.audio.utils import create_stream_resampler, pcm_to_ulaw, ulaw_to_pcm
from websockets.asyncio.client import ClientConnection

from tests.fakes.speech import FRAME_S

RATE = 8_000
STREAM_SID = "MZ00000000000000000000000000000001"
CALL_SID = "CA00000000000000000000000000000001"
ACCOUNT_SID = "AC00000000000000000000000000000001"


async def ulaw_8k(pcm: bytes, rate: int = 16_000) -> bytes:
    """PCM16 at `rate` as Twilio carries it: μ-law, 8 kHz."""
    ulaw: bytes = await pcm_to_ulaw(pcm, rate, RATE, create_stream_resampler())
    return ulaw


async def pcm_from_ulaw(ulaw: bytes) -> bytes:
    pcm: bytes = await ulaw_to_pcm(ulaw, RATE, RATE, create_stream_resampler())
    return pcm


def connected() -> str:
    return json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"})


def start(parameters: dict[str, str] | None = None, *, media_format: dict[str, Any] | None = None) -> str:
    return json.dumps(
        {
            "event": "start",
            "sequenceNumber": "1",
            "streamSid": STREAM_SID,
            "start": {
                "accountSid": ACCOUNT_SID,
                "streamSid": STREAM_SID,
                "callSid": CALL_SID,
                "tracks": ["inbound"],
                "mediaFormat": media_format or {"encoding": "audio/x-mulaw", "sampleRate": RATE, "channels": 1},
                "customParameters": parameters or {},
            },
        }
    )


def stop() -> str:
    return json.dumps(
        {
            "event": "stop",
            "sequenceNumber": "9999",
            "streamSid": STREAM_SID,
            "stop": {"accountSid": ACCOUNT_SID, "callSid": CALL_SID},
        }
    )


@dataclass
class Caller:
    """Streams `media` events as Twilio does: one per 20 ms, numbered, in real time."""

    ws: ClientConnection
    sequence: int = 1
    chunk: int = 0

    async def send(self, ulaw: bytes) -> None:
        step = int(RATE * FRAME_S)  # one μ-law byte per sample
        for offset in range(0, len(ulaw), step):
            self.sequence += 1
            self.chunk += 1
            media = {
                "track": "inbound",
                "chunk": str(self.chunk),
                "timestamp": str(self.chunk * 20),
                "payload": base64.b64encode(ulaw[offset : offset + step]).decode(),
            }
            await self.ws.send(
                json.dumps(
                    {"event": "media", "sequenceNumber": str(self.sequence), "media": media, "streamSid": STREAM_SID}
                )
            )
            await asyncio.sleep(FRAME_S)


@dataclass
class Heard:
    """Every event the server sent, in order."""

    events: list[dict[str, Any]] = field(default_factory=list)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    @property
    def ulaw(self) -> bytes:
        return b"".join(base64.b64decode(e["media"]["payload"]) for e in self.of("media"))


async def listen(ws: ClientConnection, heard: Heard) -> None:
    async for message in ws:
        assert isinstance(message, str), "Twilio Media Streams carry text frames only"
        heard.events.append(json.loads(message))


async def wait_for(heard: Heard, predicate: Callable[[Heard], bool], *, timeout_s: float = 30.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate(heard):
            await asyncio.sleep(0.05)


class FakeTwilioMessages:
    """Twilio's Messages API as `chat.twilio_sms` uses it (docs/http.md#phones), stateful:
    `POST /2010-04-01/Accounts/{sid}/Messages.json` with HTTP basic auth (the account SID
    and auth token) and form fields `To`, `From`, `Body` answers 201 with the message
    resource and keeps the message in `inbox`; wrong credentials are 401 (Twilio's error
    20003), a `To` that is no E.164 number is 400 (error 21211). An ASGI app: serve it, or
    hand it to httpx as a transport."""

    def __init__(self, account_sid: str, auth_token: str) -> None:
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.inbox: dict[str, list[str]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
        from urllib.parse import parse_qs

        from starlette.requests import Request
        from starlette.responses import JSONResponse

        request = Request(scope, receive)
        expected = "Basic " + base64.b64encode(f"{self.account_sid}:{self.auth_token}".encode()).decode()
        path = f"/2010-04-01/Accounts/{self.account_sid}/Messages.json"
        if request.method != "POST" or request.url.path != path:
            response = JSONResponse({"code": 20404, "message": "The requested resource was not found"}, 404)
        elif request.headers.get("authorization") != expected:
            response = JSONResponse({"code": 20003, "message": "Authentication Error"}, 401)
        else:
            form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
            to = form.get("To", "")
            if not (to.startswith("+") and to[1:].isdigit()):
                response = JSONResponse({"code": 21211, "message": f"Invalid 'To' Phone Number: {to}"}, 400)
            else:
                self.inbox.setdefault(to, []).append(form.get("Body", ""))
                sid = f"SM{len(self.inbox[to]):032d}"
                response = JSONResponse(
                    {"sid": sid, "to": to, "from": form.get("From"), "body": form.get("Body"), "status": "queued"}, 201
                )
        await response(scope, receive, send)
