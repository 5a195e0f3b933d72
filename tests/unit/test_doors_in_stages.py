"""Call doors built in stages (web/doors.py `LaterDoors`, app/voice.py VoiceLater): a
speaker's call goes on as soon as the first stage's doors exist, while a browser call
still waits for its own door, and a browser door that fails answers 503 without touching
the others. `import voice` leaves the browser's WebRTC stack unloaded: that is what the
first stage saves (docs/scaling.md#cold-start)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import httpx
from fastapi import APIRouter, FastAPI

from web.doors import BROWSER_DOOR_PREFIX, DoorsStarting, LaterDoors, add_doors


def _door(path: str) -> APIRouter:
    router = APIRouter()

    @router.post(path)
    async def answer() -> dict[str, str]:
        return {"door": path}

    return router


def _staged_app(
    calls: asyncio.Event, browser: asyncio.Event, opened: set[str], wanted: asyncio.Event | None = None
) -> FastAPI:
    app = FastAPI()
    app.add_middleware(
        DoorsStarting,
        ready=calls,
        open_=lambda: "calls" in opened,
        wait_s=30.0,
        later=[LaterDoors(BROWSER_DOOR_PREFIX, browser, lambda: "browser" in opened, wanted)],
    )
    return app


async def test_a_speaker_call_goes_on_with_the_first_stage_and_a_browser_call_waits_for_its_own() -> None:
    calls, browser = asyncio.Event(), asyncio.Event()
    opened: set[str] = set()
    wanted = asyncio.Event()
    app = _staged_app(calls, browser, opened, wanted)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        speaker = asyncio.create_task(client.post("/v1/voice/speaker-test"))
        await asyncio.sleep(0.05)
        assert not wanted.is_set(), "a speaker's call does not ask for the browser's door"
        offer = asyncio.create_task(client.post("/v1/voice/webrtc/offer"))
        await asyncio.sleep(0.05)
        assert not speaker.done() and not offer.done(), "both wait while nothing is built"
        assert wanted.is_set(), "a browser's offer asks for its door (its loading need not wait for calls to end)"
        add_doors(app, [_door("/v1/voice/speaker-test")], [])
        opened.add("calls")
        calls.set()
        answered = await asyncio.wait_for(speaker, 5)
        assert answered.status_code == 200 and answered.json() == {"door": "/v1/voice/speaker-test"}
        await asyncio.sleep(0.05)
        assert not offer.done(), "the browser's call waits for the browser's door"
        add_doors(app, [_door("/v1/voice/webrtc/offer")], [])
        opened.add("browser")
        browser.set()
        answered = await asyncio.wait_for(offer, 5)
        assert answered.status_code == 200 and answered.json() == {"door": "/v1/voice/webrtc/offer"}


async def test_a_browser_door_that_fails_answers_retry_later_and_the_speaker_door_still_serves() -> None:
    calls, browser = asyncio.Event(), asyncio.Event()
    opened = {"calls"}
    app = _staged_app(calls, browser, opened)
    add_doors(app, [_door("/v1/voice/speaker-test")], [])
    calls.set()
    browser.set()  # the browser's stage ended without its door
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        offer = await client.post("/v1/voice/webrtc/offer")
        speaker = await client.post("/v1/voice/speaker-test")
    assert offer.status_code == 503 and offer.json()["type"] == "voice_starting"
    assert offer.headers["content-type"] == "application/problem+json"
    assert speaker.status_code == 200


def test_importing_voice_leaves_the_browsers_webrtc_stack_for_later() -> None:
    probe = (
        "import json, sys, voice; before = 'aiortc' in sys.modules;"
        " import voice.webrtc; print(json.dumps([before, 'aiortc' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, True]
