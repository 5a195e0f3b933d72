"""One call per person holds across server processes: two `avagenc serve` processes on one
database, a call open on the first, and the second refuses the same person's call with
4409 while still taking someone else's; once the first call ends, the second takes it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from settings import Settings
from tests.fakes.servers import serve_subprocess

START = {"type": "start", "sample_rate": 16000, "encoding": "pcm_s16le", "channels": 1}


async def _token(base_url: str, name: str) -> str:
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(f"{base_url}/v1/auth/local", json={"name": name})
        token: str = response.json()["token"]
        return token


@contextlib.asynccontextmanager
async def _call(base_url: str, token: str) -> AsyncIterator[tuple[ClientConnection, dict[str, object]]]:
    url = base_url.replace("http://", "ws://") + "/v1/voice/speaker"
    # `avagenc serve` builds the call doors after /readyz; the handshake waits for them
    # (web/doors.py), longer than websockets' 10 s on a busy machine.
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=60) as ws:
        await ws.send(json.dumps(START))
        yield ws, json.loads(await ws.recv())


async def _refused(ws: ClientConnection) -> int | None:
    with contextlib.suppress(ConnectionClosed, TimeoutError):
        async with asyncio.timeout(10):
            await ws.wait_closed()
    return ws.close_code


async def test_a_second_process_refuses_a_second_call_for_the_same_person(settings: Settings) -> None:
    assert settings.database_url and settings.session_secret
    env = {
        "DATABASE_URL": settings.database_url,
        "SESSION_SECRET": settings.session_secret.get_secret_value(),
        "AVAGENC_HOME": str(settings.avagenc_home),
        "VOICE_PRELOAD": "false",
    }
    with serve_subprocess(env) as a_url, serve_subprocess(env) as b_url:
        budi, sari = await _token(a_url, "Budi"), await _token(a_url, "Sari")
        async with _call(a_url, budi) as (_, first):
            assert first["type"] == "ready"
            async with _call(b_url, budi) as (ws, second):
                assert second == {"type": "error", "code": "call_in_progress", "message": "You are already on a call."}
                assert await _refused(ws) == 4409
            async with _call(b_url, sari) as (_, other):
                assert other["type"] == "ready"  # only the same person is refused
        await asyncio.sleep(0.5)  # the first call's end reaches its server
        async with _call(b_url, budi) as (_, again):
            assert again["type"] == "ready"
