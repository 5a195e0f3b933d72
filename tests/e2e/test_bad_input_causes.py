"""Each cause of a 500 that generated input once found, refused at the edge with a clear
4xx problem+json and nothing saved: NUL and lone surrogates in text, names and ids; a
`time-zone` header naming a tzdata folder; dates and cursors beyond what PostgreSQL
holds. A refused request never changes the person's remembered time zone."""

from __future__ import annotations

import pytest
from pydantic import SecretStr
from starlette.requests import Request

from settings import Settings
from tests.conftest import App
from tests.e2e.test_bad_input import assert_problem, thread_of
from web import on_unexpected

ADMIN_KEY = "admin-" + "k" * 32
INT64_PAST = str(2**63)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"admin_api_key": SecretStr(ADMIN_KEY)})


@pytest.mark.parametrize(
    "content",
    [b'{"text": "hi\\u0000there"}', b'{"text": "half a pair \\ud800"}', b'{"text": "\\udc00 reversed"}'],
    ids=["nul", "high-surrogate", "low-surrogate"],
)
async def test_text_no_thread_can_keep_is_refused_and_nothing_is_written(app: App, content: bytes) -> None:
    headers = await app.sign_in()
    response = await app.client.post(
        "/v1/messages", content=content, headers={**headers, "content-type": "application/json"}
    )
    assert_problem(response, 422, "text_invalid")
    assert await thread_of(app, headers) == []


@pytest.mark.parametrize("name", ['"Bu\\u0000di"', '"Budi \\ud83d"'], ids=["nul", "surrogate"])
async def test_a_sign_in_name_no_database_can_keep_is_refused(app: App, name: str) -> None:
    response = await app.client.post(
        "/v1/auth/local", content=f'{{"name": {name}}}'.encode(), headers={"content-type": "application/json"}
    )
    assert_problem(response, 422, "validation_failed")
    assert await app.services.pool.fetchval("SELECT count(*) FROM people") == 0


@pytest.mark.parametrize("user_id", ['"usr_\\u0000"', '"usr_\\ud800"', '"usr x"'], ids=["nul", "surrogate", "space"])
async def test_a_top_up_for_an_id_no_person_can_have_is_refused(app: App, user_id: str) -> None:
    body = f'{{"user_id": {user_id}, "amount_micros": 1000, "ref": "r1"}}'.encode()
    response = await app.client.post(
        "/v1/admin/topups",
        content=body,
        headers={"Authorization": f"Bearer {ADMIN_KEY}", "content-type": "application/json"},
    )
    assert_problem(response, 422, "validation_failed")
    assert await app.services.pool.fetchval("SELECT count(*) FROM transactions WHERE type = 'topup'") == 0


@pytest.mark.parametrize("zone", ["Asia", "Etc", "America/", "Asia/../Asia/Jakarta", "posixrules/x"])
async def test_a_time_zone_header_naming_a_folder_is_refused(app: App, zone: str) -> None:
    headers = {**await app.sign_in(), "time-zone": zone}
    assert_problem(await app.say(headers, "hi"), 400, "time_zone_invalid")
    assert_problem(await app.client.get("/v1/wallet/usage", headers=headers), 400, "time_zone_invalid")
    assert await thread_of(app, headers) == []


async def test_a_refused_request_does_not_save_the_time_zone(app: App) -> None:
    headers = await app.sign_in(time_zone="Asia/Jakarta")
    assert (await app.say(headers, "hi")).status_code == 200
    moved = {**headers, "time-zone": "Europe/Berlin"}
    assert_problem(await app.say(moved, "   "), 422, "message_blank")
    assert_problem(await app.client.post("/v1/messages", json={"txt": "x"}, headers=moved), 422, "validation_failed")
    bad_day = await app.client.get("/v1/wallet/usage", params={"date": "9999-12-31"}, headers=moved)
    assert_problem(bad_day, 422, "date_invalid")
    assert (await app.client.get("/v1/me", headers=headers)).json()["time_zone"] == "Asia/Jakarta"
    # A request that succeeds does remember it.
    assert (await app.say(moved, "hello again")).status_code == 200
    assert (await app.client.get("/v1/me", headers=headers)).json()["time_zone"] == "Europe/Berlin"


@pytest.mark.parametrize("day", ["9999-12-31", "0001-01-01", "9000-13-01"])
async def test_a_usage_day_beyond_the_calendar_is_refused(app: App, day: str) -> None:
    headers = await app.sign_in()
    response = await app.client.get("/v1/wallet/usage", params={"date": day}, headers=headers)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    ("path", "param"),
    [("/v1/messages", "before"), ("/v1/messages", "after"), ("/v1/wallet/entries", "before")],
)
async def test_cursors_above_int64_are_refused(app: App, path: str, param: str) -> None:
    headers = await app.sign_in()
    response = await app.client.get(path, params={param: INT64_PAST}, headers=headers)
    assert_problem(response, 422, "validation_failed")
    at_most = await app.client.get(path, params={param: str(2**63 - 1)}, headers=headers)
    assert at_most.status_code == 200


async def test_an_unexpected_error_says_the_connection_will_close() -> None:
    request = Request({"type": "http", "method": "GET", "path": "/x", "headers": [], "query_string": b""})
    response = await on_unexpected(request, RuntimeError("boom"))
    assert response.status_code == 500
    assert response.headers["connection"] == "close"
    assert b"boom" not in response.body


@pytest.mark.parametrize(
    "query", ["access_token=%00", "access_token=%ff%fe", "access_token=a.b.c", "after=" + INT64_PAST]
)
async def test_the_event_stream_refuses_bad_tokens_and_cursors_before_it_starts(app: App, query: str) -> None:
    response = await app.client.get(f"/v1/events?{query}")
    assert response.status_code in (401, 422)
    assert response.headers["content-type"] == "application/problem+json"


async def test_webrtc_signalling_refuses_text_no_peer_connection_can_take(app: App) -> None:
    headers = await app.sign_in()
    offer = b'{"sdp": "v=0\\r\\nm=audio 9 UDP/TLS/RTP/SAVPF 111\\u0000\\r\\n", "type": "offer"}'
    patch = b'{"pc_id": "pc\\ud800", "candidates": []}'
    for method, body in (("POST", offer), ("PATCH", patch)):
        response = await app.client.request(
            method, "/v1/voice/webrtc/offer", content=body, headers={**headers, "content-type": "application/json"}
        )
        assert_problem(response, 422, "validation_failed")
    assert len(app.services.voice.registry) == 0
