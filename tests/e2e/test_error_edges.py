"""One error vocabulary, every door: each domain error type (chat's, the ledger's,
voice's) walked through the HTTP API, the speaker and phone WebSockets and WebRTC
signalling, answering with the status or close code its edge's table names, and with
a sentence Ava can say on a live call."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

import app.server  # noqa: F401  # every domain module loaded, so every error class is known
from chat import ChatError, Person
from ledger import InsufficientBalance, LedgerError, RefConflict, Transaction
from tests.conftest import App
from tests.e2e.test_phone import dialled
from tests.e2e.test_speaker import START, token_for
from tests.fakes import twilio
from tests.fakes.servers import serve_in_process
from voice import VoiceError
from voice.edge import CLOSE_CODES, notice_for
from web import HTTP_STATUS

OFFER_SDP = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"


def _subclasses(base: type[Exception]) -> Iterator[type[Exception]]:
    for cls in base.__subclasses__():
        yield cls
        yield from _subclasses(cls)


def domain_errors() -> list[Exception]:
    """One instance of every domain error class there is."""
    made: list[Exception] = []
    for base in (ChatError, LedgerError, VoiceError):
        for cls in [base, *_subclasses(base)]:
            if cls is InsufficientBalance:
                made.append(cls("The wallet is empty.", balance_micros=0))
            elif cls is RefConflict:
                earlier = Transaction(1, "topup", "ref", (), {}, datetime.now(UTC))
                made.append(cls("That ref was used.", existing=earlier))
            else:
                made.append(cls(f"{cls.__name__} happened."))
    return made


ERRORS = [e for e in domain_errors() if type(e) not in (ChatError, LedgerError, VoiceError)]
IDS = [type(e).__name__ for e in ERRORS]


def expected_http(exc: Exception) -> tuple[int, str]:
    status, _ = HTTP_STATUS[exc.type]  # type: ignore[attr-defined]
    return (500, "internal_error") if status >= 500 and status != 503 else (status, exc.type)  # type: ignore[attr-defined]


def test_every_domain_error_has_a_type_an_http_status_and_a_spoken_notice() -> None:
    types = [e.type for e in ERRORS]  # type: ignore[attr-defined]
    assert len(ERRORS) >= 25
    assert len(types) == len(set(types)), "each error class has its own type"
    for exc in ERRORS:
        assert exc.type in HTTP_STATUS, f"{type(exc).__name__} has no HTTP status at the edge"  # type: ignore[attr-defined]
        notice, reason = notice_for(exc)
        assert notice.text and "#" not in notice.text
        assert (reason == "wallet_empty") == isinstance(exc, InsufficientBalance)
        assert notice.end_call == isinstance(exc, InsufficientBalance)
    assert set(CLOSE_CODES) <= set(types)


@pytest.fixture
async def base_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app.app) as url:
        yield url


def raising(exc: Exception) -> Any:
    async def guard(_person: Person) -> None:
        raise exc

    return guard


@pytest.mark.parametrize("exc", ERRORS, ids=IDS)
async def test_http_and_webrtc_offer_answer_with_the_table_status(
    app: App, exc: Exception, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = await app.sign_in()
    status, type_ = expected_http(exc)

    async def post(*_args: object, **_kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(app.services.turns, "post", post)
    monkeypatch.setattr(app.services.voice, "guard", raising(exc))
    for response in (
        await app.say(headers, "hello"),
        await app.client.post("/v1/voice/webrtc/offer", json={"sdp": OFFER_SDP, "type": "offer"}, headers=headers),
    ):
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["type"] == type_
    assert len(app.services.voice.registry) == 0


async def refused(url: str, first: list[str]) -> tuple[dict[str, Any], int | None]:
    async with connect(url, max_size=2**20) as ws:
        with contextlib.suppress(ConnectionClosed):
            for frame in first:
                await ws.send(frame)
        event = json.loads(await asyncio.wait_for(ws.recv(), 10))
        with contextlib.suppress(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
        return event, ws.close_code


async def test_speaker_and_phone_doors_send_the_error_event_and_the_table_close_code(
    app: App, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await token_for(app)
    ws_url = base_url.replace("http://", "ws://")
    for exc in ERRORS:
        monkeypatch.setattr(app.services.voice, "guard", raising(exc))
        close = CLOSE_CODES.get(exc.type, 1008)  # type: ignore[attr-defined]
        for url, first in (
            (f"{ws_url}/v1/voice/speaker?token={token}", [json.dumps(START)]),
            (f"{ws_url}/v1/voice/phone", [twilio.connected(), twilio.start((await dialled(app)).parameters)]),
        ):
            event, code = await refused(url, first)
            assert event == {"type": "error", "code": exc.type, "message": str(exc)}, url  # type: ignore[attr-defined]
            assert code == close, (url, exc)
    assert len(app.services.voice.registry) == 0
    assert await app.services.pool.fetchval("SELECT count(*) FROM messages") == 0


async def test_the_document_lists_every_error_status_as_problem_json(app: App) -> None:
    spec = (await app.client.get("/openapi.json")).json()
    errors = 0
    offenders: list[tuple[str, str, str]] = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if not status.startswith(("4", "5")):
                    continue
                errors += 1
                bad = set(response.get("content", {})) != {"application/problem+json"}
                offenders += [(method, path, status)] if bad else []
            # Routes no person's token opens: operations, sign-in, the operator's key, a
            # speaker asking to pair, and Twilio's signed webhook (403 for a bad signature).
            needs_auth = path not in (
                "/healthz",
                "/readyz",
                "/v1/auth/local",
                "/v1/auth/methods",
                "/v1/admin/topups",
                "/v1/devices/pairing",
                "/v1/voice/phone/incoming",
            )
            assert not needs_auth or "401" in operation["responses"], (method, path)
    assert offenders == [], "error statuses documented as something other than problem+json"
    assert errors >= 30
    assert "503" in spec["paths"]["/readyz"]["get"]["responses"]
