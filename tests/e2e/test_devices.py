"""Paired speakers end to end (docs/http.md#devices, docs/sockets.md#authentication): a
speaker asks for a pairing and shows its code, the person approves it, the speaker's poll
gets a device token of its own that opens the speaker door and nothing else; the person
lists devices and revokes one, after which its live call ends with `hangup` and 4401 (on
this instance or another) and its token is refused; bad codes change nothing."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from app.server import running
from chat import Devices
from settings import Settings
from tests.conftest import App
from tests.e2e.test_sessions import speaker_answer
from tests.e2e.test_speaker import START
from tests.fakes import twilio
from tests.fakes.servers import serve_in_process

PROBLEM = "application/problem+json"
DEVICES_MAX = 2
PAIRINGS_MAX = 6
WRONG_CODES_MAX = 3


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "devices_per_person_max": DEVICES_MAX,
            "pairings_per_address_max": PAIRINGS_MAX,
            "pairing_window_s": 3600,
            "pairing_wrong_codes_max": WRONG_CODES_MAX,
            "voice_preload": False,
        }
    )


def client_from(app: App, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app.app, client=(address, 40_000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


def assert_problem(response: httpx.Response, status: int, type_: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["type"] == type_


_speakers = itertools.count(1)


async def paired_speaker(app: App, person: dict[str, str], name: str = "Kitchen speaker") -> tuple[str, dict[str, Any]]:
    """A speaker (at an address of its own) paired the whole way through: its device token and the device."""
    async with client_from(app, f"192.0.2.{next(_speakers)}") as speaker:
        pairing = (await speaker.post("/v1/devices/pairing", json={"name": name})).json()
        approved = await app.client.post("/v1/devices/pair", json={"code": pairing["code"]}, headers=person)
        assert approved.status_code == 201, approved.text
        polled = (await speaker.post("/v1/devices/pairing/poll", json={"poll_secret": pairing["poll_secret"]})).json()
    assert polled["status"] == "paired"
    return polled["device_token"], polled["device"]


async def ws_url(app: App, stack: contextlib.AsyncExitStack) -> str:
    url = await stack.enter_async_context(serve_in_process(app.app))
    return url.replace("http://", "ws://")


async def test_a_speaker_pairs_by_code_and_its_token_opens_only_the_speaker_door(app: App) -> None:
    person = await app.sign_in("Budi")
    speaker = app.client  # the speaker has no person's token: it sends none
    pairing = await speaker.post("/v1/devices/pairing", json={"name": "Kitchen speaker"})
    assert pairing.status_code == 200, pairing.text
    shown = pairing.json()
    assert len(shown["code"]) == 9 and shown["code"][4] == "-"
    assert shown["expires_in_s"] == 600 and shown["interval_s"] >= 1
    pending = await speaker.post("/v1/devices/pairing/poll", json={"poll_secret": shown["poll_secret"]})
    assert pending.json() == {
        "status": "pending",
        "interval_s": shown["interval_s"],
        "device_token": None,
        "device": None,
    }
    # The person types the code as they read it: lower case, a space instead of the hyphen.
    typed = shown["code"].lower().replace("-", " ")
    approved = await app.client.post("/v1/devices/pair", json={"code": typed}, headers=person)
    assert approved.status_code == 201, approved.text
    device = approved.json()
    assert device["name"] == "Kitchen speaker" and device["id"].startswith("dev_") and not device["paired"]
    # The code is used: approving it again (this person or another) pairs nothing more.
    again = await app.client.post("/v1/devices/pair", json={"code": shown["code"]}, headers=await app.sign_in("Sari"))
    assert_problem(again, 400, "pairing_code_invalid")
    polled = (await speaker.post("/v1/devices/pairing/poll", json={"poll_secret": shown["poll_secret"]})).json()
    assert polled["status"] == "paired" and polled["device"]["id"] == device["id"] and polled["device"]["paired"]
    token = polled["device_token"]
    assert token.startswith("dvt_")
    # The token is handed out once; the poll secret is spent.
    replay = await speaker.post("/v1/devices/pairing/poll", json={"poll_secret": shown["poll_secret"]})
    assert_problem(replay, 401, "unauthorized")
    # Stored hashed: no column of the database holds the token, the code or the secret.
    dump = await app.services.pool.fetchval(
        "SELECT coalesce((SELECT string_agg(d::text, ' ') FROM devices d), '')"
        " || coalesce((SELECT string_agg(p::text, ' ') FROM device_pairings p), '')"
    )
    assert dump and token not in dump and shown["poll_secret"] not in dump
    listed = (await app.client.get("/v1/devices", headers=person)).json()["devices"]
    assert [(d["id"], d["paired"]) for d in listed] == [(device["id"], True)]
    assert (await app.client.get("/v1/devices", headers=await app.sign_in("Sari"))).json() == {"devices": []}

    # A device token is not a person's: every HTTP route refuses it.
    as_device = {"Authorization": f"Bearer {token}"}
    for method, path in (
        ("GET", "/v1/me"),
        ("GET", "/v1/messages"),
        ("GET", "/v1/wallet"),
        ("GET", "/v1/devices"),
        ("POST", "/v1/tickets"),
        ("GET", "/v1/knowledge"),
        ("GET", "/v1/reminders"),
    ):
        assert_problem(await app.client.request(method, path, headers=as_device), 401, "unauthorized")
    assert_problem(await app.client.get("/v1/events", params={"access_token": token}), 401, "unauthorized")
    async with contextlib.AsyncExitStack() as stack:
        base = await ws_url(app, stack)
        ready, _ = await speaker_answer(f"{base}/v1/voice/speaker", as_device)
        assert ready["type"] == "ready"
        await asyncio.sleep(0.5)  # the call lets go of its slot
        # The phone door does not take it either.
        async with connect(f"{base}/v1/voice/phone") as phone:
            await phone.send(twilio.connected())
            await phone.send(twilio.start({"token": token}))
            refused = json.loads(await asyncio.wait_for(phone.recv(), 10))
            with contextlib.suppress(ConnectionClosed):
                await asyncio.wait_for(phone.recv(), 5)
        assert (refused["code"], phone.close_code) == ("unauthorized", 4401)
    seen = (await app.client.get("/v1/devices", headers=person)).json()["devices"][0]
    assert seen["last_seen_at"] is not None


async def test_bad_codes_change_nothing_and_are_limited(app: App, settings: Settings) -> None:
    person = await app.sign_in("Budi")
    async with client_from(app, "198.51.100.4") as speaker:
        shown = (await speaker.post("/v1/devices/pairing")).json()
    for code in ("", "x" * 33):
        assert_problem(
            await app.client.post("/v1/devices/pair", json={"code": code}, headers=person), 422, "validation_failed"
        )
    # Malformed (a look-alike letter no code uses) and wrong codes are 400, counted against the person.
    for code in ("ABCD-EFG0", "ZZZZ-ZZZZ", "2222 2222"):
        answer = await app.client.post("/v1/devices/pair", json={"code": code}, headers=person)
        assert_problem(answer, 400, "pairing_code_invalid")
    # Past the wrong codes allowed, even the right code waits: guessing cannot go on.
    limited = await app.client.post("/v1/devices/pair", json={"code": shown["code"]}, headers=person)
    assert_problem(limited, 429, "rate_limited")
    assert int(limited.headers["retry-after"]) >= 1
    assert await app.services.pool.fetchval("SELECT count(*) FROM devices") == 0
    # Another person may still approve it; an expired pairing is refused like a wrong one.
    other = await app.sign_in("Sari")
    assert (await app.client.post("/v1/devices/pair", json={"code": shown["code"]}, headers=other)).status_code == 201
    assert app.services.devices is not None
    short = Devices(app.services.pool, pairing_ttl_s=0, devices_per_person_max=DEVICES_MAX)
    expired = await short.start_pairing("Old speaker")
    answer = await app.client.post("/v1/devices/pair", json={"code": expired.shown}, headers=other)
    assert_problem(answer, 400, "pairing_code_invalid")
    assert_problem(
        await app.client.post("/v1/devices/pairing/poll", json={"poll_secret": expired.poll_secret}),
        401,
        "unauthorized",
    )
    for secret in ("dps_nothing", "x" * 300, "é", "dps_" + "\u0000"):
        answer = await app.client.post("/v1/devices/pairing/poll", json={"poll_secret": secret})
        assert answer.status_code == 401, (secret, answer.text)
    # Pairing attempts per address: a flood of pairings from one address stops at the count.
    async with client_from(app, "203.0.113.9") as flood:
        answers = [await flood.post("/v1/devices/pairing") for _ in range(PAIRINGS_MAX + 4)]
    assert [a.status_code for a in answers[:PAIRINGS_MAX]] == [200] * PAIRINGS_MAX
    for answer in answers[PAIRINGS_MAX:]:
        assert_problem(answer, 429, "rate_limited")


def wrong_tail(code: str, n: int) -> str:
    """The code with its first group kept and its second changed (differently for each `n`)."""
    alphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
    plain = code.replace("-", "")
    return plain[:4] + "".join(alphabet[(alphabet.index(c) + n + 1) % len(alphabet)] for c in plain[4:])


async def test_a_code_guessed_at_too_often_is_burnt_even_for_the_right_code(app: App) -> None:
    """Wrong codes whose first group names a waiting speaker count against that pairing,
    whoever types them and from wherever: after PAIRING_WRONG_CODES_MAX of them even the
    right code pairs nothing, and the speaker is told to start again."""
    async with client_from(app, "198.51.100.7") as speaker:
        shown = (await speaker.post("/v1/devices/pairing", json={"name": "Hall speaker"})).json()
        # Each wrong guess from another person at another address: no person's or address's
        # own limit is reached, only the pairing's.
        for n in range(WRONG_CODES_MAX):
            guesser = await app.sign_in(f"Guesser {n}")
            async with client_from(app, f"198.51.100.{20 + n}") as elsewhere:
                answer = await elsewhere.post(
                    "/v1/devices/pair", json={"code": wrong_tail(shown["code"], n)}, headers=guesser
                )
            assert_problem(answer, 400, "pairing_code_invalid")  # said as for a code no speaker shows
            if n == 0:  # a wrong guess alone leaves the speaker waiting
                polled = await speaker.post("/v1/devices/pairing/poll", json={"poll_secret": shown["poll_secret"]})
                assert polled.json()["status"] == "pending"
        owner = await app.sign_in("Budi")
        async with client_from(app, "198.51.100.50") as owners:
            burnt = await owners.post("/v1/devices/pair", json={"code": shown["code"]}, headers=owner)
        assert_problem(burnt, 400, "pairing_code_burnt")
        assert "start pairing again" in burnt.json()["detail"]
        assert await app.services.pool.fetchval("SELECT count(*) FROM devices") == 0
        # The speaker's poll says so: it starts again, and a fresh code pairs at once.
        told = await speaker.post("/v1/devices/pairing/poll", json={"poll_secret": shown["poll_secret"]})
        assert_problem(told, 401, "unauthorized")
        assert "wrong codes" in told.json()["detail"]
        fresh = (await speaker.post("/v1/devices/pairing", json={"name": "Hall speaker"})).json()
        async with client_from(app, "198.51.100.50") as owners:
            paired = await owners.post("/v1/devices/pair", json={"code": fresh["code"]}, headers=owner)
        assert paired.status_code == 201, paired.text
    listed = (await app.client.get("/v1/devices", headers=owner)).json()["devices"]
    assert [d["name"] for d in listed] == ["Hall speaker"]


async def test_a_person_has_at_most_the_configured_devices(app: App) -> None:
    person = await app.sign_in("Budi")
    for n in range(DEVICES_MAX):
        await paired_speaker(app, person, f"Speaker {n}")
    async with client_from(app, "192.0.2.200") as speaker:
        pairing = (await speaker.post("/v1/devices/pairing")).json()
    over = await app.client.post("/v1/devices/pair", json={"code": pairing["code"]}, headers=person)
    assert_problem(over, 409, "too_many_devices")
    # The refused code is still waiting: once a device is removed, it pairs.
    first = (await app.client.get("/v1/devices", headers=person)).json()["devices"][0]
    assert (await app.client.delete(f"/v1/devices/{first['id']}", headers=person)).status_code == 204
    assert (
        await app.client.post("/v1/devices/pair", json={"code": pairing["code"]}, headers=person)
    ).status_code == 201


async def read_until_closed(ws: ClientConnection) -> list[dict[str, Any]]:
    events = []
    with contextlib.suppress(ConnectionClosed):
        async with asyncio.timeout(20):
            async for frame in ws:
                if isinstance(frame, str):
                    events.append(json.loads(frame))
    return events


@pytest.mark.parametrize("where", ["this instance", "another instance"])
async def test_a_revoked_speakers_live_call_ends_and_its_token_is_refused(
    app: App, settings: Settings, where: str
) -> None:
    person = await app.sign_in("Budi")
    token, device = await paired_speaker(app, person)
    async with contextlib.AsyncExitStack() as stack:
        base = await ws_url(app, stack)
        revoker = app.client
        if where == "another instance":
            _, second = await stack.enter_async_context(running(settings))
            revoker = await stack.enter_async_context(
                httpx.AsyncClient(transport=httpx.ASGITransport(app=second), base_url="http://test")
            )
        # Another person cannot revoke it: 404, as if it did not exist.
        stranger = await app.sign_in("Sari")
        assert_problem(await revoker.delete(f"/v1/devices/{device['id']}", headers=stranger), 404, "not_found")
        async with connect(f"{base}/v1/voice/speaker", additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            await ws.send(json.dumps(START))
            assert json.loads(await ws.recv())["type"] == "ready"
            assert (await revoker.delete(f"/v1/devices/{device['id']}", headers=person)).status_code == 204
            events = await read_until_closed(ws)
        assert events[-1:] == [{"type": "hangup", "reason": "device_revoked"}]
        assert ws.close_code == 4401
        assert (await app.client.get("/v1/devices", headers=person)).json() == {"devices": []}
        assert_problem(await revoker.delete(f"/v1/devices/{device['id']}", headers=person), 404, "not_found")
        await asyncio.sleep(0.5)  # the call lets go of its slot
        refused, code = await speaker_answer(f"{base}/v1/voice/speaker", {"Authorization": f"Bearer {token}"})
        assert (refused["code"], code) == ("unauthorized", 4401)
    # The person's own session is untouched, and nothing reached the thread.
    assert (await app.client.get("/v1/messages", headers=person)).json()["messages"] == []
