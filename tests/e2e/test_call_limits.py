"""Call limits at the speaker door (SPEC §9.1, §9.2), with limits small enough to watch:
a silent call is checked on, then hung up as idle; a long call ends at its maximum
duration; a full process turns the next caller away with `server_busy` and 1013.

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
from tests.fakes.servers import serve_in_process
from tests.fakes.speech import Heard, rms, silence, stream, wait_for


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


@pytest.mark.parametrize("limits", [{"call_idle_s": 4.0}])
async def test_a_silent_call_is_checked_on_then_hung_up_as_idle(app: App, base_url: str) -> None:
    token = await token_for(app)
    async with call(base_url, token) as (ws, heard):
        started = time.monotonic()
        microphone = asyncio.create_task(stream(ws, silence(10.0)))  # an open, silent line
        try:
            checked_s = await seconds_until(heard, lambda h: bool(h.of("transcript", "assistant")), started, 10)
            goodbye_s = await seconds_until(heard, lambda h: len(h.of("transcript", "assistant")) > 1, started, 12)
            hangup_s = await seconds_until(heard, lambda h: bool(h.of("hangup")), started, 15)
        finally:
            microphone.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await microphone
        await closed(ws)
    assert 1.5 <= checked_s <= 3.5, f"the check comes after idle/2 = 2 s, not {checked_s:.1f} s"
    check, goodbye = heard.of("transcript", "assistant")
    assert "still there" in check["text"].lower()
    spoken_check = heard.items[heard.items.index(check) + 1 : heard.items.index(goodbye)]
    assert rms(b"".join(i for i in spoken_check if isinstance(i, bytes))) > 300, "the check is heard"
    # Hung up once 4 s passed without the person: the goodbye is spoken, then `hangup`.
    assert 3.9 <= goodbye_s <= 6.0, f"the goodbye comes at idle = 4 s, not {goodbye_s:.1f} s"
    assert goodbye_s < hangup_s <= 10.0, f"hung up at {hangup_s:.1f} s"
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
    token = await token_for(app)
    async with call(base_url, token) as (ws, heard):
        started = time.monotonic()
        microphone = asyncio.create_task(stream(ws, silence(10.0)))
        try:
            hangup_s = await seconds_until(heard, lambda h: bool(h.of("hangup")), started, 15)
        finally:
            microphone.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await microphone
        await closed(ws)
    assert 3.0 <= hangup_s <= 12.0, f"hung up at {hangup_s:.1f} s"
    end = hangup_index(heard)
    assert heard.items[end] == {"type": "hangup", "reason": "max_duration"}
    assert [e["text"] for e in heard.of("transcript", "assistant")], "a goodbye is spoken first"
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
