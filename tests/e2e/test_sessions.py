"""Sessions end when the person signs out, on every instance and every door; doors opened by
URL take a single-use ticket; no credential reaches the server's log, the access log's
query strings included; local sign-in refuses a public bind (docs/http.md#authentication)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from app.server import running
from chat import Tickets
from settings import Settings
from tests.conftest import App
from tests.e2e.test_speaker import START

PROBLEM = "application/problem+json"


def bearer(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


async def speaker_answer(url: str, headers: dict[str, str] | None = None) -> tuple[dict[str, object], int | None]:
    """The first event the speaker socket answers a `start` with, and how it closed (None: open)."""
    async with connect(url, additional_headers=headers or {}) as ws:
        await ws.send(json.dumps(START))
        first = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if first["type"] == "ready":
            await ws.send(json.dumps({"type": "hangup"}))
            return first, None
        with contextlib.suppress(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
        return first, ws.close_code


@contextlib.asynccontextmanager
async def logged_server(app: App, capture: logging.Handler | None = None) -> AsyncIterator[str]:
    """The app under a real uvicorn that writes its access log, as `avagenc serve` does;
    `capture` also hears uvicorn's own loggers (which do not propagate to the root)."""
    config = uvicorn.Config(app.app, host="127.0.0.1", port=0, log_level="info", access_log=True, lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    uvicorn_loggers = [logging.getLogger(name) for name in ("uvicorn.access", "uvicorn.error")]
    if capture is not None:
        for logger in uvicorn_loggers:
            logger.addHandler(capture)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        if capture is not None:
            for logger in uvicorn_loggers:
                logger.removeHandler(capture)


async def test_a_signed_out_session_is_refused_everywhere_and_on_every_instance(app: App, settings: Settings) -> None:
    headers = await app.sign_in()
    other_session = await app.sign_in()  # the same person on another device
    assert (await app.client.get("/v1/me", headers=headers)).status_code == 200
    signed_out = await app.client.post("/v1/auth/sign-out", headers=headers)
    assert signed_out.status_code == 204
    for path in ("/v1/me", "/v1/messages", "/v1/events"):
        refused = await app.client.get(path, headers=headers)
        assert refused.status_code == 401, path
        assert refused.headers["content-type"] == PROBLEM
    assert (await app.client.get("/v1/events", params={"access_token": bearer(headers)})).status_code == 401
    assert (await app.client.post("/v1/auth/sign-out", headers=headers)).status_code == 401
    assert (await app.client.get("/v1/me", headers=other_session)).status_code == 200
    async with running(settings.model_copy(update={"voice_preload": False})) as (_, second_app):
        second = httpx.AsyncClient(transport=httpx.ASGITransport(app=second_app), base_url="http://test")
        async with second:
            assert (await second.get("/v1/me", headers=headers)).status_code == 401
            assert (await second.get("/v1/me", headers=other_session)).status_code == 200
    async with logged_server(app) as url:
        ws = url.replace("http://", "ws://") + "/v1/voice/speaker"
        event, code = await speaker_answer(ws, {"Authorization": headers["Authorization"]})
        assert (event["code"], code) == ("unauthorized", 4401)


async def test_a_ticket_opens_live_events_or_the_speaker_once(app: App) -> None:
    headers = await app.sign_in()
    tickets = [(await app.client.post("/v1/tickets", headers=headers)).json() for _ in range(2)]
    assert tickets[0]["expires_in_s"] == 60
    async with logged_server(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        async with client.stream("GET", "/v1/events", params={"ticket": tickets[0]["ticket"]}) as stream:
            assert stream.status_code == 200
        again = await client.get("/v1/events", params={"ticket": tickets[0]["ticket"]})
        assert again.status_code == 401
        assert again.json()["type"] == "unauthorized"
        ws = url.replace("http://", "ws://") + "/v1/voice/speaker"
        ready, _ = await speaker_answer(f"{ws}?ticket={tickets[1]['ticket']}")
        assert ready["type"] == "ready"
        await asyncio.sleep(0.5)  # the call lets go of its slot
        used, code = await speaker_answer(f"{ws}?ticket={tickets[1]['ticket']}")
        assert (used["code"], code) == ("unauthorized", 4401)
    # An expired ticket is refused, and a ticket is not a bearer token.
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    expired = await Tickets(app.services.pool, ttl_s=0).issue(me)
    assert (await app.client.get("/v1/events", params={"ticket": expired})).status_code == 401
    assert (
        await app.client.get("/v1/me", headers={"Authorization": f"Bearer {tickets[1]['ticket']}"})
    ).status_code == 401


async def test_no_credential_this_test_issues_reaches_the_log(app: App, caplog: pytest.LogCaptureFixture) -> None:
    issued: list[str] = []
    caplog.set_level(logging.DEBUG)
    async with logged_server(app, caplog.handler) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        for name in ("Budi", "Sari"):
            token = (await client.post("/v1/auth/local", json={"name": name})).json()["token"]
            issued.append(token)
            auth = {"Authorization": f"Bearer {token}"}
            async with client.stream("GET", "/v1/events", params={"access_token": token}) as stream:
                assert stream.status_code == 200
            ticket = (await client.post("/v1/tickets", headers=auth)).json()["ticket"]
            issued.append(ticket)
            async with client.stream("GET", f"/v1/events?ticket={ticket}") as stream:
                assert stream.status_code == 200
            ws = url.replace("http://", "ws://") + "/v1/voice/speaker"
            await speaker_answer(f"{ws}?token={token}")
            await asyncio.sleep(0.5)
            assert (await client.post("/v1/messages", json={"text": "hello"}, headers=auth)).status_code == 200
            assert (await client.post("/v1/auth/sign-out", headers=auth)).status_code == 204
            await client.get("/v1/events", params={"access_token": token})  # refused, and logged as refused
        # A paired speaker: its poll secret and device token, the latter also in a URL.
        owner_token = (await client.post("/v1/auth/local", json={"name": "Dewi"})).json()["token"]
        owner = {"Authorization": f"Bearer {owner_token}"}
        issued.append(owner_token)
        pairing = (await client.post("/v1/devices/pairing")).json()
        issued += [pairing["poll_secret"], pairing["code"], pairing["code"].replace("-", "")]
        assert (await client.post("/v1/devices/pair", json={"code": pairing["code"]}, headers=owner)).is_success
        polled = await client.post("/v1/devices/pairing/poll", json={"poll_secret": pairing["poll_secret"]})
        device_token = polled.json()["device_token"]
        issued.append(device_token)
        ws = url.replace("http://", "ws://") + "/v1/voice/speaker"
        await speaker_answer(f"{ws}?token={device_token}")
    # Everything the server process logged; the test's own clients (httpx, websockets) log
    # the URLs they were given, which is the client's business, not the server's log.
    clients = ("httpx", "httpcore", "websockets.client")
    text = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records if not r.name.startswith(clients))
    assert "GET /v1/events?access_token=REDACTED" in text, "the access log was captured"
    for secret in issued:
        assert secret not in text
        assert secret.rsplit(".", 1)[-1] not in text  # nor the signature alone


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "avagenc.example"])
def test_local_sign_in_on_a_public_bind_stops_startup_naming_the_setting(host: str, settings: Settings) -> None:
    env = {**os.environ, "DATABASE_URL": settings.database_url or "", "AVAGENC_HOME": str(settings.avagenc_home)}
    env.pop("LOCAL_SIGN_IN_ON_PUBLIC_BIND", None)
    result = subprocess.run(
        [sys.executable, "-m", "cli", "serve", "--host", host, "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: setting LOCAL_SIGN_IN_ON_PUBLIC_BIND:")
    assert (
        settings.model_copy(update={"host": host, "local_sign_in_on_public_bind": True}).public_local_sign_in() is None
    )
    for loopback in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert settings.model_copy(update={"host": loopback}).public_local_sign_in() is None


async def test_a_call_token_opens_the_phone_door_once_and_a_persons_ticket_never(app: App) -> None:
    from tests.e2e.test_phone import closed_with, dialled, phone_call

    headers = await app.sign_in()
    dialling = await dialled(app)
    async with logged_server(app) as url:
        door = url.replace("http://", "ws://") + "/v1/voice/phone"
        async with phone_call(door, dialling.parameters):
            async with asyncio.timeout(20):  # the call is live once it holds the person's slot
                while len(app.services.voice.registry) == 0:
                    await asyncio.sleep(0.05)
        async with asyncio.timeout(20):
            while len(app.services.voice.registry) != 0:
                await asyncio.sleep(0.05)
        async with phone_call(door, dialling.parameters) as (ws, _, _):
            assert await closed_with(ws) == 4401
        # A ticket from POST /v1/tickets opens the events and the speaker, never the phone.
        ticket = (await app.client.post("/v1/tickets", headers=headers)).json()["ticket"]
        for parameters in ({"call_token": ticket}, {"ticket": ticket}):
            async with phone_call(door, parameters) as (ws, _, _):
                assert await closed_with(ws) == 4401
