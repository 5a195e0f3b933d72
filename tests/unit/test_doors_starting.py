"""Call doors that arrive after the app serves (web/doors.py): a call placed while they are
being built waits for them instead of meeting a 404, text never waits, and a door that
never comes answers 503 `voice_starting` (close 1013 on a socket), never 500. Their loading
waits for no request to be in flight for a quiet spell, or for a call (`Traffic`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
from fastapi import APIRouter, FastAPI
from fastapi.responses import StreamingResponse

from web.doors import DoorsStarting, Traffic, add_doors


def _app(ready: asyncio.Event, routers: list[APIRouter], *, wait_s: float = 30.0) -> FastAPI:
    app = FastAPI()

    @app.get("/v1/me")
    async def me() -> dict[str, str]:
        return {"id": "usr_1"}

    app.add_middleware(DoorsStarting, ready=ready, open_=lambda: bool(routers), wait_s=wait_s)
    return app


def _door() -> APIRouter:
    router = APIRouter()

    @router.post("/v1/voice/webrtc/offer")
    async def offer() -> dict[str, str]:
        return {"pc_id": "pc_1"}

    return router


async def test_a_call_waits_for_its_door_and_text_does_not() -> None:
    ready = asyncio.Event()
    routers: list[APIRouter] = []
    app = _app(ready, routers)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        assert (await client.get("/v1/me")).status_code == 200  # the app already serves
        call = asyncio.create_task(client.post("/v1/voice/webrtc/offer"))
        await asyncio.sleep(0.05)
        assert not call.done(), "the call waits for its door"
        assert (await client.get("/v1/me")).status_code == 200, "text does not wait"
        routers.append(_door())
        add_doors(app, routers, [])
        ready.set()
        answer = await call
        assert answer.status_code == 200 and answer.json() == {"pc_id": "pc_1"}


async def test_a_door_that_never_comes_answers_retry_later() -> None:
    ready: asyncio.Event = asyncio.Event()
    ready.set()  # loading ended without doors (it failed)
    app = _app(ready, [], wait_s=0.01)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        answer = await client.post("/v1/voice/webrtc/offer")
    assert answer.status_code == 503
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["type"] == "voice_starting" and "retry-after" in answer.headers


def _busy_app(traffic: Traffic, gate: asyncio.Event) -> FastAPI:
    """An app whose `/v1/slow` is answered once `gate` opens and whose `/v1/stream` is an
    answer that goes on until it does (a live-event stream), its doors not yet there."""
    app = FastAPI()

    @app.get("/v1/slow")
    async def slow() -> dict[str, str]:
        await gate.wait()
        return {"ok": "yes"}

    @app.get("/v1/stream")
    async def stream() -> StreamingResponse:
        async def events() -> AsyncIterator[bytes]:
            yield b": open\n\n"
            await gate.wait()

        return StreamingResponse(events(), media_type="text/event-stream")

    app.add_middleware(DoorsStarting, ready=asyncio.Event(), open_=lambda: False, wait_s=30.0, traffic=traffic)
    return app


@dataclass
class _InFlight:
    traffic: Traffic
    gate: asyncio.Event
    client: httpx.AsyncClient
    request: asyncio.Task[httpx.Response]


@asynccontextmanager
async def _in_flight(path: str) -> AsyncIterator[_InFlight]:
    """A GET of `path` on a new `_busy_app`, sent and given a moment to begin; its answer
    waits for its `gate`."""
    traffic, gate = Traffic(), asyncio.Event()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_busy_app(traffic, gate)), base_url="http://t") as c:
        request = asyncio.create_task(c.get(path))
        await asyncio.sleep(0.02)
        yield _InFlight(traffic, gate, c, request)


async def test_the_loading_waits_while_a_request_is_answered_then_a_quiet_spell() -> None:
    async with _in_flight("/v1/slow") as busy:
        waiting = asyncio.create_task(busy.traffic.quiet(0.05, at_most_s=30.0))
        await asyncio.sleep(0.3)
        assert not waiting.done(), "a request in flight holds the loading back past the spell"
        busy.gate.set()
        assert (await busy.request).status_code == 200
        assert await asyncio.wait_for(waiting, 5) == "the server is quiet"
    assert not busy.traffic.watching


async def test_a_live_event_stream_counts_only_until_it_opens() -> None:
    async with _in_flight("/v1/stream") as busy:  # (this transport reads it whole: done once it ends)
        assert await asyncio.wait_for(busy.traffic.quiet(0.05, at_most_s=30.0), 5) == "the server is quiet"
        assert not busy.request.done(), "the stream is still open"
        busy.gate.set()
        assert (await busy.request).status_code == 200


async def test_a_call_begins_the_loading_at_once_and_the_wait_is_bounded() -> None:
    async with _in_flight("/v1/slow") as busy:
        waiting = asyncio.create_task(busy.traffic.quiet(0.05, at_most_s=30.0))
        await asyncio.sleep(0.1)
        call = asyncio.create_task(busy.client.post("/v1/voice/webrtc/offer"))
        assert await asyncio.wait_for(waiting, 5) == "a call came"
        assert not busy.request.done()
        call.cancel()
        busy.gate.set()
        await busy.request
    async with _in_flight("/v1/slow") as busy:
        assert await asyncio.wait_for(busy.traffic.quiet(0.05, at_most_s=0.2), 5) == "no quiet within 0.2 s"
        busy.gate.set()
        await busy.request
