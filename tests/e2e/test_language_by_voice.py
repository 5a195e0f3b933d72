"""A person's language is learned from what they write, and their calls are heard and
answered in it: an Indonesian-speaking person's call uses the multilingual Whisper base
forced to Indonesian. (Which voice speaks each sentence of the answer, by the answer's
language, is tested on the TTS itself in tests/integration/test_neural_voice.py.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from pipecat.audio.utils import create_stream_resampler
from websockets.asyncio.client import connect

from tests.conftest import App
from tests.fakes.servers import serve_in_process
from tests.fakes.speech import Heard, listen, rms, silence, stream, wait_for
from voice.engines.espeak import synthesize

START = {"type": "start", "sample_rate": 16000, "encoding": "pcm_s16le", "channels": 1, "time_zone": "Asia/Jakarta"}


@pytest.fixture
async def base_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app.app) as url:
        yield url.replace("http://", "ws://")


async def _language(app: App, headers: dict[str, str]) -> str:
    me = await app.services.people.get(await app.services.local_tokens.verify(headers["Authorization"][7:]))
    assert me is not None
    return me.language


async def test_the_language_follows_what_the_person_writes(app: App) -> None:
    headers = await app.sign_in("Sari")
    assert await _language(app, headers) == "en"
    assert (await app.say(headers, "tolong nyalakan lampu kamar tidur")).status_code == 200
    assert await _language(app, headers) == "id"
    assert (await app.say(headers, "ok")).status_code == 200  # too short to tell: unchanged
    assert await _language(app, headers) == "id"
    assert (await app.say(headers, "please turn off the bedroom light")).status_code == 200
    assert await _language(app, headers) == "en"


async def test_an_indonesian_speakers_call_is_heard_and_answered_in_indonesian(app: App, base_url: str) -> None:
    headers = await app.sign_in("Sari")
    assert (await app.say(headers, "tolong nyalakan lampu kamar tidur")).status_code == 200
    pcm, rate = await synthesize("tolong matikan semua lampu", voice="id")
    resampler = create_stream_resampler()
    speech = await resampler.resample(pcm, rate, 16_000) + await resampler.flush()

    async with connect(
        f"{base_url}/v1/voice/speaker", additional_headers={"Authorization": headers["Authorization"]}
    ) as ws:
        await ws.send(json.dumps(START))
        assert json.loads(await ws.recv())["type"] == "ready"
        heard = Heard()
        listener = asyncio.create_task(listen(ws, heard))
        await stream(ws, silence(0.3) + speech + silence(1.0))
        await wait_for(heard, lambda h: h.of("transcript", "assistant") and len(h.audio) > 16_000, timeout_s=60)
        listener.cancel()

    said = heard.of("transcript", "user")[0]["text"].lower()
    assert "matikan" in said or "semua" in said, said  # heard as Indonesian, not as English or Thai
    assert rms(heard.audio) > 300
