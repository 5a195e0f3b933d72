"""Isolation, proven from the OpenAPI document: every route a person may call that takes an
id in its path, a cursor in its query or an id in its body is tried as a second person
holding the first person's ids. A path id is 404; a cursor or a body id reaches only the
second person's own data; nothing the first person owns ever appears in an answer. A new
route is covered without editing this test; a new kind of body id fails it until listed."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import App
from tests.fakes.servers import serve_in_process

# Routes that are not a person's: the operator's and the scheduler's (their own tests
# prove their keys), and the call page's static files.
NOT_A_PERSONS = ("/v1/admin/", "/v1/reminders/{note_id}/deliver", "/call")
# Query parameters that page or pick among a person's own data: A's values are tried.
CURSORS = {"before", "after", "limit", "date", "past_limit"}
# Body fields that name something: what B sends in them (A's value), by name.
BODY_IDS = {"client_id", "pc_id", "user_id", "account_id"}


async def first_persons_world(app: App, headers: dict[str, str]) -> dict[str, Any]:
    """A person with a thread, runs, a wallet, a pending note: their ids and a secret marker."""
    said = await app.say(headers, "remind me in 2 hours to water the orchid", client_id="orchid-1")
    assert said.status_code == 200, said.text
    body = said.json()
    me = (await app.client.get("/v1/me", headers=headers)).json()
    notes = (await app.client.get("/v1/reminders", headers=headers)).json()["upcoming"]
    entries = (await app.client.get("/v1/wallet/entries", headers=headers)).json()
    assert notes, "the first person has a pending note"
    return {
        "person_id": me["id"],
        "ids": [
            me["id"],
            *(n["id"] for n in notes),
            *(m["id"] for m in body["messages"]),
            *(r["id"] for r in body["runs"]),
        ],
        "seqs": [m["seq"] for m in body["messages"]],
        "note_ids": [n["id"] for n in notes],
        "entries": entries,
        "markers": ["orchid", me["id"], *(n["id"] for n in notes)],
    }


def operations(app: App) -> list[tuple[str, str, dict[str, Any]]]:
    document = app.app.openapi()
    found = []
    for path, item in document["paths"].items():
        if path.startswith(NOT_A_PERSONS):
            continue
        for method, operation in item.items():
            found.append((method.upper(), path, operation))
    return found


def body_fields(document: dict[str, Any], operation: dict[str, Any]) -> set[str]:
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if not content:
        return set()
    ref = content["schema"].get("$ref", "")
    schema = document["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else content["schema"]
    return set(schema.get("properties", {}))


def assert_nothing_of(first: dict[str, Any], response: httpx.Response, label: str) -> None:
    for marker in first["markers"]:
        assert marker not in response.text, f"{label} answered the first person's {marker!r}: {response.text[:300]}"


async def assert_stream_is_their_own(
    app: App, first: dict[str, Any], second: dict[str, str], path: str, cursors: list[str]
) -> None:
    """A stream never ends: read it up to its first keep-alive (everything after the
    cursor has been sent by then) for each of the first person's cursors."""
    async with serve_in_process(app.app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        for name in cursors:
            for value in (0, *first["seqs"]):
                await read_until_keep_alive(client, first, second, path, {name: value})


async def read_until_keep_alive(
    client: httpx.AsyncClient, first: dict[str, Any], second: dict[str, str], path: str, params: dict[str, Any]
) -> None:
    text = ""
    async with client.stream("GET", path, headers=second, params=params) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_text():
            text += chunk
            if ": keep-alive" in text:
                break
    for marker in first["markers"]:
        assert marker not in text, f"GET {path}?{params} streamed the first person's {marker!r}"


async def test_every_id_or_cursor_route_as_a_second_person_is_404_or_their_own(app: App) -> None:
    first_headers = await app.sign_in("Budi")
    first = await first_persons_world(app, first_headers)
    second = await app.sign_in("Sari")
    document = app.app.openapi()
    tried: list[str] = []
    for method, path, operation in operations(app):
        parameters = operation.get("parameters", [])
        in_path = [p["name"] for p in parameters if p["in"] == "path"]
        in_query = [p["name"] for p in parameters if p["in"] == "query" and p["name"] in CURSORS]
        in_body = {f for f in body_fields(document, operation) if f.endswith("_id")}
        assert in_body <= BODY_IDS, f"{method} {path} takes {in_body - BODY_IDS}: list what a second person sends"
        if not (in_path or in_query or in_body):
            continue
        if "text/event-stream" in operation.get("responses", {}).get("200", {}).get("content", {}):
            await assert_stream_is_their_own(app, first, second, path, in_query)
            tried.append(f"{method} {path}")
            continue
        label = f"{method} {path}"
        tried.append(label)
        if in_path:
            for value in first["ids"]:
                url = path
                for name in in_path:
                    url = url.replace("{" + name + "}", value)
                response = await app.client.request(method, url, headers=second, json={})
                assert response.status_code in (404, 422), f"{label} with {value}: {response.status_code}"
                # A 404 may name what was asked for; nothing else of the first person's may appear.
                for marker in first["markers"]:
                    assert marker not in response.text.replace(value, ""), f"{label} with {value}: {response.text}"
        for name in in_query:
            for value in (*first["seqs"], 0, 1, max(first["seqs"]) + 1):
                params = {name: value} if name != "date" else {name: "2026-01-01"}
                response = await app.client.request(method, path, headers=second, params=params)
                assert response.status_code < 500, f"{label}?{name}={value}"
                assert_nothing_of(first, response, label)
        if in_body:
            body = {
                "text": "orchid?",
                "client_id": "orchid-1",
                "pc_id": "pc-of-the-first",
                "user_id": first["person_id"],
            }
            response = await app.client.request(method, path, headers=second, json=body)
            assert response.status_code < 500, label
            # The second person's own message may say "orchid?"; nothing else of the first's appears.
            for marker in first["markers"][1:]:
                assert marker not in response.text, f"{label} answered the first person's {marker!r}"
            if path == "/v1/messages" and response.status_code == 200:
                assert response.json()["messages"][0]["text"] == "orchid?", "the idempotency key is per person"
    # And the first person still sees all of theirs, unchanged by the second's attempts.
    notes = (await app.client.get("/v1/reminders", headers=first_headers)).json()["upcoming"]
    assert [n["id"] for n in notes] == first["note_ids"]
    assert {"DELETE /v1/reminders/{note_id}", "GET /v1/messages", "POST /v1/messages"} <= set(tried), tried


# Routes no person's token opens (a speaker asking to pair, its poll, Twilio's signed
# webhook): their own tests prove what they take.
NOBODYS = (
    "/v1/devices/pairing",
    "/v1/voice/phone/incoming",
    "/healthz",
    "/readyz",
    "/v1/auth/local",
    "/v1/auth/methods",
)


async def test_a_paired_speakers_device_token_reaches_no_route_of_its_person(app: App) -> None:
    """A device token is good at the speaker socket only: as a device, every route of the
    document, holding its own person's ids, is 401 and answers nothing of theirs."""
    headers = await app.sign_in("Budi")
    first = await first_persons_world(app, headers)
    pairing = (await app.client.post("/v1/devices/pairing")).json()
    assert (await app.client.post("/v1/devices/pair", json={"code": pairing["code"]}, headers=headers)).is_success
    polled = (await app.client.post("/v1/devices/pairing/poll", json={"poll_secret": pairing["poll_secret"]})).json()
    device = {"Authorization": f"Bearer {polled['device_token']}"}
    tried = []
    for method, path, operation in operations(app):
        if path.startswith(NOBODYS):
            continue
        in_path = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
        values = first["ids"] if in_path else [""]
        for value in values:
            url = path
            for name in in_path:
                url = url.replace("{" + name + "}", value)
            response = await app.client.request(method, url, headers=device, json={})
            label = f"{method} {url}"
            assert response.status_code in (401, 404), f"{label}: {response.status_code} {response.text[:200]}"
            assert_nothing_of(first, response, label)
        tried.append(f"{method} {path}")
    assert {"GET /v1/messages", "GET /v1/devices", "DELETE /v1/devices/{device_id}", "POST /v1/tickets"} <= set(tried)
