"""Hostile frames at the voice WebSocket doors: JSON nested or sized beyond the limits is
a 1008 or 1009 with the error event (docs/sockets.md#close-codes), never a `RecursionError` and a 1006; a phone
`start` naming a tzdata folder as its zone is a clean refusal; and generated frames of
every shape (at the speaker door as the first frame or during a call, at the phone door
in place of `start`) only ever close the socket with a code the protocol names."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.conftest import App
from tests.e2e.test_phone import dialled
from tests.e2e.test_speaker import START, token_for
from tests.fakes import twilio
from tests.fakes.servers import serve_in_process

DEEP = "[" * 100_000 + "]" * 100_000  # past the frame limit too: both refusals apply
NESTED = json.dumps({"type": "start", "x": json.loads("[" * 500 + "]" * 500)})  # small, deep
PROTOCOL_CLOSES = {1003, 1008, 1009}
FIRST_FRAME_EXAMPLES = 150
IN_CALL_EXAMPLES = 25


@pytest.fixture
async def ws_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app.app) as url:
        yield url.replace("http://", "ws://")


def until_closed(ws: ClientConnection) -> tuple[list[Any], int | None]:
    """Everything the server sends until it closes, and the close code."""
    received: list[Any] = []
    try:
        while True:
            message = ws.recv(timeout=10)
            received.append(json.loads(message) if isinstance(message, str) else message)
    except ConnectionClosed:
        pass
    return received, ws.close_code


def refused(url: str, frames: Sequence[str | bytes]) -> tuple[list[Any], int | None]:
    with connect(url, max_size=2**20, open_timeout=10) as ws:
        try:
            for frame in frames:
                ws.send(frame)
        except ConnectionClosed:
            pass
        return until_closed(ws)


@pytest.mark.parametrize(
    ("frame", "close", "code"), [(NESTED, 1008, "protocol_violation"), (DEEP, 1009, "frame_too_large")]
)
async def test_deeply_nested_json_is_refused_at_the_speaker_and_phone_doors(
    app: App, ws_url: str, frame: str, close: int, code: str
) -> None:
    token = await token_for(app)
    speaker = f"{ws_url}/v1/voice/speaker?token={token}"
    for url, frames in ((speaker, [frame]), (f"{ws_url}/v1/voice/phone", [twilio.connected(), frame])):
        received, closed_with = await asyncio.to_thread(refused, url, frames)
        assert closed_with == close, url
        assert received[-1]["type"] == "error" and received[-1]["code"] == code, url
    # And during a call: the call ends with the same refusal.
    received, closed_with = await asyncio.to_thread(refused, speaker, [json.dumps(START), frame])
    assert received[0]["type"] == "ready"
    assert (received[-1]["code"], closed_with) == (code, close)
    assert await app.services.voice.registry.emptied(timeout_s=5)


@pytest.mark.parametrize("zone", ["Asia", "Etc", "Mars/Base"])
async def test_a_phone_start_naming_no_zone_is_refused_cleanly(app: App, ws_url: str, zone: str) -> None:
    dialling = await dialled(app)
    frames: list[str | bytes] = [twilio.connected(), twilio.start({**dialling.parameters, "time_zone": zone})]
    received, closed_with = await asyncio.to_thread(refused, f"{ws_url}/v1/voice/phone", frames)
    assert closed_with == 1008
    assert received[-1]["type"] == "error" and received[-1]["code"] == "time_zone_invalid"
    assert len(app.services.voice.registry) == 0


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
_events = st.fixed_dictionaries(
    {"type": st.sampled_from(["start", "hangup", "ready", "media", "x"])},
    optional={"sample_rate": _json_values | st.sampled_from([16000, 8000]), "time_zone": _json_values},
).map(json.dumps)
_nesting = st.integers(min_value=1, max_value=40_000).map(lambda n: "[" * n + "]" * n)
frames = st.one_of(_events, _json_values.map(json.dumps), _nesting, st.text(max_size=300), st.binary(max_size=300))


def fuzz_first_frame(url: str) -> int:
    made = 0

    @hypothesis_settings(
        max_examples=FIRST_FRAME_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(frame=frames)
    def check(frame: str | bytes) -> None:
        nonlocal made
        made += 1
        with connect(url, max_size=2**20, open_timeout=10) as ws:
            ws.send(frame)
            first = ws.recv(timeout=10)
            event = json.loads(first)
            if event["type"] == "ready":  # the frame was a valid start after all
                ws.send(json.dumps({"type": "hangup"}))
                _, code = until_closed(ws)
                assert code in {1000, *PROTOCOL_CLOSES}
                return
            assert event["type"] == "error" and isinstance(event["code"], str)
            _, code = until_closed(ws)
            assert code in PROTOCOL_CLOSES, (frame, event, code)

    check()
    return made


def fuzz_in_call(url: str, calls_live: Callable[[], int]) -> int:
    made = 0

    @hypothesis_settings(
        max_examples=IN_CALL_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(sent=st.lists(frames, min_size=1, max_size=4))
    def check(sent: list[str | bytes]) -> None:
        nonlocal made
        made += 1
        deadline = time.monotonic() + 10
        while calls_live() and time.monotonic() < deadline:  # the last call's slot frees just after its close
            time.sleep(0.02)
        with connect(url, max_size=2**20, open_timeout=10) as ws:
            ws.send(json.dumps(START))
            assert json.loads(ws.recv(timeout=10))["type"] == "ready"
            try:
                for frame in sent:
                    ws.send(frame)
                ws.send(json.dumps({"type": "hangup"}))
            except ConnectionClosed:
                pass
            received, code = until_closed(ws)
            errors = [e for e in received if isinstance(e, dict) and e.get("type") == "error"]
            assert code in {1000, *PROTOCOL_CLOSES}, (sent, received, code)
            assert (code == 1000) == (not errors)

    check()
    return made


def fuzz_phone_stream_start(url: str) -> int:
    made = 0

    @hypothesis_settings(
        max_examples=FIRST_FRAME_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(frame=frames | _events.map(lambda e: e.replace('"type"', '"event"')))
    def check(frame: str | bytes) -> None:
        nonlocal made
        made += 1
        received, code = refused(url, [twilio.connected(), frame])
        # A frame that happens to be a well-formed start still carries no token: 4401.
        assert code in {*PROTOCOL_CLOSES, 4401}, (frame, received, code)
        assert received and received[-1]["type"] == "error"

    check()
    return made


async def test_generated_frames_at_the_phone_door_close_only_with_protocol_codes(app: App, ws_url: str) -> None:
    assert await asyncio.to_thread(fuzz_phone_stream_start, f"{ws_url}/v1/voice/phone") == FIRST_FRAME_EXAMPLES
    assert len(app.services.voice.registry) == 0


async def test_generated_frames_at_the_speaker_door_close_only_with_protocol_codes(app: App, ws_url: str) -> None:
    token = await token_for(app)
    url = f"{ws_url}/v1/voice/speaker?token={token}"
    assert await asyncio.to_thread(fuzz_first_frame, url) == FIRST_FRAME_EXAMPLES
    registry = app.services.voice.registry
    assert await asyncio.to_thread(fuzz_in_call, url, lambda: len(registry)) == IN_CALL_EXAMPLES
    assert await app.services.voice.registry.emptied(timeout_s=10)
    assert await app.services.pool.fetchval("SELECT count(*) FROM messages") == 0
