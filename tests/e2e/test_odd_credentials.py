"""Odd credentials and odd frames through the real app: a token of any bytes, length or
encoding is a 401 problem+json over HTTP and live events and a 4401 on the speaker socket;
a malformed `start` frame closes with its documented code and an error event, never 1006;
a 405 names what the path allows; a 500 says nothing but a correlation id its log line
carries (docs/http.md#errors, docs/sockets.md#close-codes)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import urllib.parse
from collections.abc import AsyncIterator

import httpx
import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from tests.conftest import App
from tests.e2e.test_speaker import START, token_for
from tests.fakes.servers import serve_in_process

PROBLEM = "application/problem+json"
EXAMPLES = 60

# Header values as bytes: anything but the bytes HTTP itself forbids in a field value.
header_bytes = st.binary(min_size=0, max_size=600).filter(lambda b: not ({0, 10, 13} & set(b)))
token_text = st.one_of(
    st.text(max_size=400),
    st.text(alphabet=st.characters(min_codepoint=0x80), min_size=1, max_size=40),
    st.just("v1." + "é" * 10 + ".9999999999.x"),
    st.just("v1.usr_1.9999999999." + "\u00ff" * 43),
)
fuzz_settings = hypothesis_settings(
    max_examples=EXAMPLES, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


def assert_unauthorized(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["type"] == "unauthorized"


async def test_any_bearer_bytes_are_a_401_over_http_and_live_events(app: App) -> None:
    transport = httpx.ASGITransport(app=app.app)

    @fuzz_settings
    @given(raw=header_bytes, bare=st.booleans())
    @example(raw=b"v1.usr_1.9999999999.\xff\xfe" + b"A" * 41, bare=False)  # a Latin-1 MAC: once a TypeError
    def check(raw: bytes, bare: bool) -> None:
        value = raw if bare else b"Bearer " + raw

        async def probe() -> None:
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                for path in ("/v1/me", "/v1/messages", "/v1/wallet", "/v1/events"):
                    assert_unauthorized(await client.get(path, headers=[(b"authorization", value)]))

        asyncio.run_coroutine_threadsafe(probe(), loop).result(60)

    loop = asyncio.get_running_loop()
    await asyncio.to_thread(check)


async def test_any_scheduler_credential_bytes_are_refused_without_a_5xx(app: App) -> None:
    transport = httpx.ASGITransport(app=app.app)
    loop = asyncio.get_running_loop()

    @fuzz_settings
    @given(raw=header_bytes, as_signature=st.booleans())
    def check(raw: bytes, as_signature: bool) -> None:
        header = (b"x-avagenc-signature", raw) if as_signature else (b"authorization", b"Bearer " + raw)

        async def probe() -> None:
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                response = await client.post("/v1/reminders/rem_1/deliver", headers=[header])
                assert response.status_code in (401, 404), response.text
                assert response.headers["content-type"] == PROBLEM

        asyncio.run_coroutine_threadsafe(probe(), loop).result(60)

    await asyncio.to_thread(check)


async def test_any_query_token_is_a_401_on_live_events(app: App) -> None:
    transport = httpx.ASGITransport(app=app.app)
    loop = asyncio.get_running_loop()

    @fuzz_settings
    @given(token=token_text)
    def check(token: str) -> None:
        async def probe() -> None:
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                quoted = urllib.parse.quote(token.encode("utf-8", "surrogatepass"), safe="")
                response = await client.get(f"/v1/events?access_token={quoted}")
                if response.status_code == 422:  # longer than the parameter allows: refused as such
                    assert len(token) > 300 or "\x00" in token
                    return
                assert_unauthorized(response)

        asyncio.run_coroutine_threadsafe(probe(), loop).result(60)

    await asyncio.to_thread(check)


@pytest.fixture
async def ws_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app.app) as url:
        yield url.replace("http://", "ws://")


async def refusal(url: str, headers: dict[str, str], send: list[str | bytes]) -> tuple[dict[str, object], int | None]:
    async with connect(url, additional_headers=headers, max_size=2**20) as ws:
        with contextlib.suppress(ConnectionClosed):
            for item in send:
                await ws.send(item)
        event = json.loads(await asyncio.wait_for(ws.recv(), 10))
        with contextlib.suppress(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
        return event, ws.close_code


async def test_any_token_on_the_speaker_socket_closes_4401(ws_url: str) -> None:
    loop = asyncio.get_running_loop()

    @hypothesis_settings(fuzz_settings, max_examples=25)
    @given(token=token_text, in_header=st.booleans())
    def check(token: str, in_header: bool) -> None:
        async def probe() -> None:
            url = f"{ws_url}/v1/voice/speaker"
            headers: dict[str, str] = {}
            if in_header:
                # A header travels as Latin-1: what cannot be sent that way is sent as its UTF-8 bytes read as Latin-1.
                value = token.encode("utf-8", "surrogatepass").decode("latin-1")
                if any(c in value for c in "\r\n\x00"):
                    return
                headers["Authorization"] = f"Bearer {value}"
            else:
                url += "?token=" + urllib.parse.quote(token.encode("utf-8", "surrogatepass"), safe="")
            try:
                event, code = await refusal(url, headers, [json.dumps(START)])
            except InvalidHandshake:
                return  # the HTTP layer refused the upgrade itself (e.g. an unsendable header): no socket at all
            assert (event["type"], event["code"], code) == ("error", "unauthorized", 4401)

        asyncio.run_coroutine_threadsafe(probe(), loop).result(60)

    await asyncio.to_thread(check)


@pytest.mark.parametrize(
    ("first", "code", "close"),
    [
        ('{"type":"start","sample_rate":' + "9" * 5000 + "}", "bad_json", 1008),
        ('{"type":"start","sample_rate":1e999}', "unsupported_format", 1003),
        ('{"type":"start","sample_rate":NaN}', "unsupported_format", 1003),
        ('{"type":"start","sample_rate":16000,"time_zone":"Asia/\\u0000"}', "time_zone_invalid", 1008),
        ('{"type":"start","sample_rate":16000,"time_zone":"\\ud800"}', "time_zone_invalid", 1008),
        ('{"type":"start","sample_rate":16000,"channels":' + "1" * 5000 + "}", "bad_json", 1008),
        ('{"type":"start","sample_rate":16000,"encoding":{"a":[1]}}', "unsupported_format", 1003),
        ('{"type":"\\udfff"}', "protocol_violation", 1008),
        ("[" * 20 + "]" * 20, "protocol_violation", 1008),
        ('"start"', "protocol_violation", 1008),
    ],
)
async def test_a_malformed_start_frame_closes_cleanly(app: App, ws_url: str, first: str, code: str, close: int) -> None:
    token = await token_for(app)
    event, closed = await refusal(f"{ws_url}/v1/voice/speaker", {"Authorization": f"Bearer {token}"}, [first])
    assert (event["type"], event["code"], closed) == ("error", code, close)


async def test_a_405_names_the_methods_the_path_allows(app: App) -> None:
    response = await app.client.put("/v1/messages")
    assert response.status_code == 405
    assert response.headers["content-type"] == PROBLEM
    allowed = set(response.headers["allow"].replace(" ", "").split(","))
    assert {"GET", "POST"} <= allowed <= {"GET", "HEAD", "POST"}


async def test_a_500_is_generic_and_carries_the_id_its_log_line_carries(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    headers = await app.sign_in()

    async def broken(*_: object, **__: object) -> object:
        raise RuntimeError("secret internals: password=hunter2")

    app.services.threads.page = broken  # type: ignore[method-assign,assignment]
    # Starlette re-raises after answering a 500 (so servers log it); the client reads the answer.
    transport = httpx.ASGITransport(app=app.app, raise_app_exceptions=False)
    with caplog.at_level(logging.ERROR):
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            response = await client.get("/v1/messages", headers=headers)
    assert response.status_code == 500
    body = response.json()
    assert response.headers["content-type"] == PROBLEM
    assert set(body) == {"type", "title", "status", "correlation_id"}
    assert "hunter2" not in response.text
    assert body["correlation_id"].startswith("err_")
    logged = [r for r in caplog.records if body["correlation_id"] in r.getMessage()]
    assert logged and logged[0].exc_info is not None
