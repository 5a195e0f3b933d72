"""The request-time limit (docs/http.md#limits): a request that has not begun its answer
within REQUEST_TIME_MAX_S answers 503 `request_timeout` problem+json with `Retry-After`;
the turn it waited for runs on and a retry with the same client_id gets it; a live-event
stream, once answering, is never cut by the limit."""

from __future__ import annotations

import asyncio

import httpx

from app.server import running
from settings import Settings
from tests.conftest import App
from tests.fakes.servers import serve_in_process
from tests.fakes.slow_serve import SlowModel

LIMIT_S = 1.0


async def test_a_request_past_the_time_limit_is_a_clear_503_and_its_turn_is_kept(settings: Settings) -> None:
    limited = settings.model_copy(update={"request_time_max_s": LIMIT_S, "voice_preload": False})
    async with running(limited, model=SlowModel(LIMIT_S * 3)) as (services, fastapi_app):
        app = App(services, fastapi_app)
        try:
            headers = await app.sign_in("Budi")
            slow = await app.say(headers, "hello there", client_id="slow-1")
            assert slow.status_code == 503, slow.text
            assert slow.headers["content-type"] == "application/problem+json"
            assert slow.json()["type"] == "request_timeout"
            assert int(slow.headers["retry-after"]) >= 1
            # The turn ran on: a retry under the same client_id waits for it and answers it once.
            retried = httpx.Response(503)
            async with asyncio.timeout(60):
                while retried.status_code == 503:
                    await asyncio.sleep(LIMIT_S)
                    retried = await app.say(headers, "hello there", client_id="slow-1")
            assert retried.status_code == 200, retried.text
            texts = [m["text"] for m in (await app.client.get("/v1/messages", headers=headers)).json()["messages"]]
            assert texts.count("hello there") == 1 and any("waiting" in t for t in texts)
            # A stream outlives the limit once it answers: keep-alives keep coming.
            async with serve_in_process(app.app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
                ticket = (await client.post("/v1/tickets", headers=headers)).json()["ticket"]
                async with client.stream("GET", "/v1/events", params={"ticket": ticket}) as stream:
                    assert stream.status_code == 200
                    seen = ""
                    async with asyncio.timeout(30):
                        async for chunk in stream.aiter_text():
                            seen += chunk
                            if seen.count(": keep-alive") >= 3:  # a keep-alive a second, past the limit
                                break
        finally:
            await app.client.aclose()
