"""Bad input at the text door: a clear problem+json 4xx, nothing written, the server
keeps serving."""

from __future__ import annotations

import pytest

from tests.conftest import App

PROBLEM = "application/problem+json"


async def thread_of(app: App, headers: dict[str, str]) -> list[dict[str, object]]:
    response = await app.client.get("/v1/messages", headers=headers)
    assert response.status_code == 200
    messages: list[dict[str, object]] = response.json()["messages"]
    return messages


def assert_problem(response: object, status: int, type_: str) -> None:
    import httpx

    assert isinstance(response, httpx.Response)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["type"] == type_
    assert body["status"] == status
    assert body["title"]


@pytest.mark.parametrize(
    ("content", "status", "type_"),
    [
        (b"{not json", 400, "json_invalid"),
        (b'{"text": 42}', 422, "validation_failed"),
        (b'{"text": ["a"]}', 422, "validation_failed"),
        (b"{}", 422, "validation_failed"),
        (b'{"text": "hi", "extra": 1}', 422, "validation_failed"),
        (b'{"text": "hi", "client_id": ""}', 422, "validation_failed"),
        (b'{"text": "hi", "client_id": "has spaces"}', 422, "validation_failed"),
        (b'"just a string"', 422, "validation_failed"),
        (b'{"text": "   \\u200b "}', 422, "message_blank"),
    ],
)
async def test_malformed_messages_are_refused(app: App, content: bytes, status: int, type_: str) -> None:
    headers = await app.sign_in()
    response = await app.client.post(
        "/v1/messages", content=content, headers={**headers, "content-type": "application/json"}
    )
    assert_problem(response, status, type_)
    assert await thread_of(app, headers) == []


async def test_text_over_4000_characters_is_refused(app: App) -> None:
    headers = await app.sign_in()
    assert_problem(await app.say(headers, "x" * 4001), 422, "message_too_long")
    assert (await app.say(headers, "x" * 4000)).status_code == 200


async def test_a_body_over_64_kib_is_refused(app: App) -> None:
    headers = await app.sign_in()
    response = await app.client.post(
        "/v1/messages",
        content=b'{"text": "' + b"a" * 70_000 + b'"}',
        headers={**headers, "content-type": "application/json"},
    )
    assert_problem(response, 413, "body_too_large")
    assert await thread_of(app, headers) == []


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "", "x" * 100])
async def test_an_invalid_time_zone_is_refused(app: App, zone: str) -> None:
    headers = await app.sign_in()
    response = await app.say({**headers, "time-zone": zone}, "hi")
    assert_problem(response, 400, "time_zone_invalid")
    assert await thread_of(app, headers) == []


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Basic abc", "Bearer nonsense", "Bearer v1.usr_x.9999999999.forged", "Bearer " + "a" * 500],
)
async def test_missing_or_bad_tokens_are_refused(app: App, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    for response in (
        await app.client.post("/v1/messages", json={"text": "hi"}, headers=headers),
        await app.client.get("/v1/messages", headers=headers),
        await app.client.get("/v1/me", headers=headers),
    ):
        assert_problem(response, 401, "unauthorized")


async def test_an_expired_token_is_refused(app: App) -> None:
    headers = await app.sign_in()
    me = (await app.client.get("/v1/me", headers=headers)).json()
    old = app.services.local_tokens.issue(me["id"], now=0)
    assert_problem(await app.client.get("/v1/me", headers={"Authorization": f"Bearer {old}"}), 401, "unauthorized")


@pytest.mark.parametrize(
    ("params", "status"), [({"limit": 0}, 422), ({"limit": 201}, 422), ({"before": -1}, 422), ({"limit": "ten"}, 422)]
)
async def test_bad_paging_is_refused(app: App, params: dict[str, int | str], status: int) -> None:
    headers = await app.sign_in()
    response = await app.client.get("/v1/messages", headers=headers, params=params)
    assert_problem(response, status, "validation_failed")


async def test_sign_in_needs_a_name(app: App) -> None:
    for body in ({}, {"name": ""}, {"name": "   "}, {"name": 7}, {"name": "x" * 101}):
        assert_problem(await app.client.post("/v1/auth/local", json=body), 422, "validation_failed")


async def test_unknown_paths_and_methods_are_problems(app: App) -> None:
    assert_problem(await app.client.get("/v1/nothing-here"), 404, "not_found")
    assert_problem(await app.client.delete("/v1/messages"), 405, "method_not_allowed")


async def test_the_server_keeps_serving_after_bad_input(app: App) -> None:
    headers = await app.sign_in()
    await app.client.post("/v1/messages", content=b"\xff\xfe", headers={**headers, "content-type": "application/json"})
    assert (await app.say(headers, "hi")).status_code == 200
    assert (await app.client.get("/healthz")).json() == {"status": "ok"}
    assert (await app.client.get("/readyz")).json() == {"status": "ready"}
    spec = (await app.client.get("/openapi.json")).json()
    assert "/v1/messages" in spec["paths"]
