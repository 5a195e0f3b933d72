"""Call doors that arrive after the app serves (web/doors.py): a call placed while they are
being built waits for them instead of meeting a 404, text never waits, and a door that
never comes answers 503 `voice_starting` (close 1013 on a socket), never 500."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import APIRouter, FastAPI

from web.doors import DoorsStarting, add_doors


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
