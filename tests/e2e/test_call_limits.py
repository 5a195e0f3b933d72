"""Call limits at the speaker door (docs/sockets.md#call-limits): a silent call is checked on, then
hung up as idle; a long call ends at its maximum duration; a full process turns the next
caller away with `server_busy` and 1013. Time is a clock the test moves by hand
(`VoiceDoors.clock`), so each limit fires exactly when the test says, however busy the
machine is.

Each test sets its limits through `limits`, which the module's `settings` fixture lays
over the suite's base settings before the app is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from settings import Settings
from tests.conftest import App
from tests.e2e.test_speaker import START, call, token_for
from tests.e2e.test_speaker_bad_input import refused
from tests.fakes.clock import ManualClock
from tests.fakes.servers import serve_in_process
from tests.fakes.speech import Heard, rms, silence, speech_pcm16, stream, wait_for


@pytest.fixture
def limits() -> dict[str, object]:
    """Overridden per test with `@pytest.mark.parametrize("limits", [...])`."""
    return {}


@pytest.fixture
def settings(settings: Settings, limits: dict[str, object]) -> Settings:
    return settings.model_copy(update=limits)


@pytest.fixture
async def base_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app.app) as url:
        yield url.replace("http://", "ws://")


async def seconds_until(heard: Heard, predicate: Callable[[Heard], bool], since: float, timeout_s: float) -> float:
    await wait_for(heard, predicate, timeout_s=timeout_s)
    return time.monotonic() - since


def hangup_index(heard: Heard) -> int:
    return next(i for i, item in enumerate(heard.items) if isinstance(item, dict) and item["type"] == "hangup")


async def closed(ws: ClientConnection) -> None:
    with contextlib.suppress(ConnectionClosed, TimeoutError):
        async with asyncio.timeout(5):
            await ws.wait_closed()


async def nothing_said_meanwhile(heard: Heard, said: int, real_s: float = 0.5) -> bool:
    """Nothing more from Ava for a moment of real time (the clock stands still)."""
    await asyncio.sleep(real_s)
    return len(heard.of("transcript", "assistant")) == said


@pytest.mark.parametrize("limits", [{"call_idle_s": 4.0}])
async def test_a_silent_call_is_checked_on_then_hung_up_as_idle(app: App, base_url: str) -> None:
    clock = ManualClock()
    app.services.voice.clock = clock
    token = await token_for(app)
    async with call(base_url, token) as (ws, heard):
        await clock.advance(1.5)
        assert await nothing_said_meanwhile(heard, 0), "no check before idle/2 = 2 s"
        await clock.advance(0.5)
        await wait_for(heard, lambda h: bool(h.of("transcript", "assistant")), timeout_s=10)
        check = heard.of("transcript", "assistant")[0]
        await wait_for(heard, lambda h: rms(h.audio) > 300, timeout_s=10)  # the check is heard
        await clock.advance(1.5)
        assert await nothing_said_meanwhile(heard, 1), "Ava's own check does not restart the silence"
        await clock.advance(0.5)
        await wait_for(heard, lambda h: bool(h.of("hangup")), timeout_s=15)
        await closed(ws)
    assert "still there" in check["text"].lower()
    goodbye = heard.of("transcript", "assistant")[1]
    assert goodbye["text"] and "#" not in goodbye["text"]
    end = hangup_index(heard)
    assert heard.items[end] == {"type": "hangup", "reason": "idle"}
    spoken_goodbye = heard.items[heard.items.index(goodbye) + 1 : end]
    assert rms(b"".join(i for i in spoken_goodbye if isinstance(i, bytes))) > 300, "the goodbye is heard, then hangup"
    assert not any(isinstance(i, bytes) for i in heard.items[end + 1 :])
    assert ws.close_code == 1000
    me = await app.services.local_tokens.verify(token)
    assert await app.services.threads.page(me, before=None, after=None, limit=10) == [], "limits write no messages"


@pytest.mark.parametrize("limits", [{"call_duration_max_s": 3.0}])
async def test_a_call_ends_at_its_maximum_duration(app: App, base_url: str) -> None:
    clock = ManualClock()
    app.services.voice.clock = clock
    token = await token_for(app)
    async with call(base_url, token) as (ws, heard):
        microphone = asyncio.create_task(stream(ws, await speech_pcm16("hmm") + silence(0.5)))
        for _ in range(5):  # the call clock looks every 0.5 s: up to 2.5 s, the call goes on
            await clock.advance(0.5)
        await asyncio.sleep(0.5)
        assert not heard.of("hangup") and not any("let you go" in t["text"] for t in heard.of("transcript"))
        await clock.advance(0.5)
        try:
            await wait_for(heard, lambda h: bool(h.of("hangup")), timeout_s=15)
        finally:
            microphone.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await microphone
        await closed(ws)
    end = hangup_index(heard)
    assert heard.items[end] == {"type": "hangup", "reason": "max_duration"}
    goodbye = heard.of("transcript", "assistant")[-1]["text"]
    assert "let you go" in goodbye
    assert rms(b"".join(i for i in heard.items[:end] if isinstance(i, bytes))) > 300
    assert ws.close_code == 1000


@pytest.mark.parametrize("limits", [{"calls_per_process_max": 1}])
async def test_a_full_process_turns_the_next_caller_away(app: App, base_url: str) -> None:
    budi, sari = await token_for(app, "Budi"), await token_for(app, "Sari")
    async with call(base_url, budi):
        error, code = await refused(f"{base_url}/v1/voice/speaker?token={sari}", send=[json.dumps(START)])
        assert (error["type"], error["code"], code) == ("error", "server_busy", 1013)
        assert error["message"]
        assert len(app.services.voice.registry) == 1
    # Budi's call is over; the slot is free again and Sari gets through.
    async with asyncio.timeout(5):
        while len(app.services.voice.registry):
            await asyncio.sleep(0.05)
    async with call(base_url, sari):
        pass
