"""Verified phone callers end to end (docs/http.md#phones, docs/sockets.md#phone-calls): a
person adds their number and proves it with the code the offline twin writes to the log;
Twilio's signed webhook for a call from that number answers `<Connect><Stream>` with a
single-use call token, and the call through the phone door is theirs; an unknown number
hears a spoken refusal, a forged webhook is 403, and neither touches anything."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import re
from collections.abc import AsyncIterator
from urllib.parse import urlencode
from xml.etree import ElementTree

import httpx
import pytest
from pydantic import SecretStr

from app.server import running
from settings import Settings
from tests.conftest import App
from tests.e2e.test_phone import closed_with, phone_call, say
from tests.e2e.test_sessions import speaker_answer
from tests.fakes import twilio
from tests.fakes.servers import serve_in_process
from voice import twilio_signature

PROBLEM = "application/problem+json"
AUTH_TOKEN = "twilio-auth-token-for-tests"
NUMBER = "+6281234567890"
CODES_PER_HOUR = 4
WRONG_CODES_MAX = 3


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "twilio_auth_token": SecretStr(AUTH_TOKEN),
            "phone_wrong_codes_max": WRONG_CODES_MAX,
            "phone_codes_per_person_per_hour_max": CODES_PER_HOUR,
            "phones_per_person_max": 2,
        }
    )


@pytest.fixture
async def base(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app.app) as url:
        yield url


def assert_problem(response: httpx.Response, status: int, type_: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["type"] == type_


def last_code(caplog: pytest.LogCaptureFixture, number: str) -> str:
    """The code the offline twin 'sent' to `number`: the last one it wrote to the log."""
    codes = [
        r.getMessage().rsplit(": ", 1)[-1]
        for r in caplog.records
        if r.name == "chat.phones.codes" and number in r.getMessage()
    ]
    assert codes, f"no code was written to the log for {number}"
    return codes[-1]


async def verified(app: App, person: dict[str, str], caplog: pytest.LogCaptureFixture, number: str) -> str:
    added = await app.client.post("/v1/phones", json={"number": number}, headers=person)
    assert added.status_code == 202, added.text
    answer = await app.client.post(
        f"/v1/phones/{added.json()['id']}/verify", json={"code": last_code(caplog, number)}, headers=person
    )
    assert answer.status_code == 200, answer.text
    return str(added.json()["id"])


_calls = itertools.count(1)


def twilio_form(caller: str) -> dict[str, str]:
    """What Twilio posts to the voice webhook for an incoming call (each a call of its own)."""
    return {
        "AccountSid": "AC00000000000000000000000000000001",
        "ApiVersion": "2010-04-01",
        "CallSid": f"CA{next(_calls):032d}",
        "CallStatus": "ringing",
        "Direction": "inbound",
        "From": caller,
        "Caller": caller,
        "To": "+15005550006",
    }


async def ring(client: httpx.AsyncClient, url: str, form: dict[str, str], signature: str | None) -> httpx.Response:
    headers: dict[bytes, bytes] = {b"Content-Type": b"application/x-www-form-urlencoded"}
    if signature is not None:
        headers[b"X-Twilio-Signature"] = signature.encode()  # any bytes a forger sends
    return await client.post(url, content=urlencode(form), headers=headers)


async def counts(app: App) -> tuple[int, int]:
    messages = await app.services.pool.fetchval("SELECT count(*) FROM messages")
    tickets = await app.services.pool.fetchval("SELECT count(*) FROM door_tickets")
    return int(messages), int(tickets)


async def test_a_number_is_verified_with_the_code_sent_to_it(app: App, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    budi = await app.sign_in("Budi")
    added = await app.client.post("/v1/phones", json={"number": "+62 812-3456-7890"}, headers=budi)
    assert added.status_code == 202, added.text
    phone = added.json()
    assert (phone["number"], phone["verified"]) == (NUMBER, False)
    code = last_code(caplog, NUMBER)
    assert re.fullmatch(r"[0-9]{6}", code)
    # Another person cannot verify Budi's pending number: 404, as if it did not exist.
    sari = await app.sign_in("Sari")
    assert_problem(
        await app.client.post(f"/v1/phones/{phone['id']}/verify", json={"code": code}, headers=sari), 404, "not_found"
    )
    wrong = "000000" if code != "000000" else "111111"
    answer = await app.client.post(f"/v1/phones/{phone['id']}/verify", json={"code": wrong}, headers=budi)
    assert_problem(answer, 400, "phone_code_invalid")
    assert "2 tries left" in answer.json()["detail"]
    answer = await app.client.post(f"/v1/phones/{phone['id']}/verify", json={"code": code}, headers=budi)
    assert answer.status_code == 200 and answer.json()["verified"] is True
    # Used: the same code again changes nothing.
    used = await app.client.post(f"/v1/phones/{phone['id']}/verify", json={"code": code}, headers=budi)
    assert_problem(used, 400, "phone_code_invalid")
    listed = (await app.client.get("/v1/phones", headers=budi)).json()["phones"]
    assert [(p["number"], p["verified"]) for p in listed] == [(NUMBER, True)]
    # A verified number is one person's: Sari cannot add it.
    assert_problem(await app.client.post("/v1/phones", json={"number": NUMBER}, headers=sari), 409, "phone_taken")
    for bad in ("0812 3456 7890", "+0123456789", "+62 812 abc", "+1" + "2" * 20):
        assert_problem(
            await app.client.post("/v1/phones", json={"number": bad}, headers=sari), 422, "phone_number_invalid"
        )


async def test_wrong_codes_burn_the_code_expired_ones_are_refused_and_codes_are_limited(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    budi = await app.sign_in("Budi")
    phone = (await app.client.post("/v1/phones", json={"number": NUMBER}, headers=budi)).json()
    code = last_code(caplog, NUMBER)
    wrong = "000000" if code != "000000" else "111111"
    for _ in range(WRONG_CODES_MAX):
        answer = await app.client.post(f"/v1/phones/{phone['id']}/verify", json={"code": wrong}, headers=budi)
        assert_problem(answer, 400, "phone_code_invalid")
    burnt = await app.client.post(f"/v1/phones/{phone['id']}/verify", json={"code": code}, headers=budi)
    assert_problem(burnt, 400, "phone_code_invalid")
    assert "ask for a new one" in burnt.json()["detail"]
    # A new code, then one that expired before it was typed.
    await app.client.post("/v1/phones", json={"number": NUMBER}, headers=budi)
    fresh = last_code(caplog, NUMBER)
    await app.services.pool.execute("UPDATE phone_numbers SET code_expires_at = now() - interval '1 second'")
    expired = await app.client.post(f"/v1/phones/{phone['id']}/verify", json={"code": fresh}, headers=budi)
    assert_problem(expired, 400, "phone_code_invalid")
    assert not (await app.client.get("/v1/phones", headers=budi)).json()["phones"][0]["verified"]
    # Codes per person per hour: two were sent; the rest of the allowance, then 429.
    for _ in range(CODES_PER_HOUR - 2):
        assert (await app.client.post("/v1/phones", json={"number": NUMBER}, headers=budi)).status_code == 202
    limited = await app.client.post("/v1/phones", json={"number": NUMBER}, headers=budi)
    assert_problem(limited, 429, "rate_limited")
    assert int(limited.headers["retry-after"]) >= 1


async def test_a_forged_webhook_is_403_and_an_unknown_number_hears_a_refusal(
    app: App, base: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    budi = await app.sign_in("Budi")
    await verified(app, budi, caplog, NUMBER)
    before = await counts(app)
    async with httpx.AsyncClient(base_url=base) as client:
        url = f"{base}/v1/voice/phone/incoming"
        form = twilio_form(NUMBER)
        for signature in (None, "", "forged", twilio_signature("another-token", url, list(form.items())), "é" * 30):
            assert_problem(await ring(client, url, form, signature), 403, "twilio_signature_invalid")
        # Signed for another body: the caller's number swapped after signing.
        signed = twilio_signature(AUTH_TOKEN, url, list(twilio_form("+6289999999999").items()))
        assert_problem(await ring(client, url, form, signed), 403, "twilio_signature_invalid")
        # Signed for another URL.
        other = twilio_signature(AUTH_TOKEN, url + "?x=1", list(form.items()))
        assert_problem(await ring(client, url, form, other), 403, "twilio_signature_invalid")
        assert await counts(app) == before
        # Genuine, from a number nobody verified: a short spoken refusal, then the call ends.
        stranger = twilio_form("+6289999999999")
        answer = await ring(client, url, stranger, twilio_signature(AUTH_TOKEN, url, list(stranger.items())))
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/xml")
        twiml = ElementTree.fromstring(answer.text)
        assert [child.tag for child in twiml] == ["Say", "Hangup"]
        assert "not linked" in (twiml.find("Say").text or "")  # type: ignore[union-attr]
        assert await counts(app) == before
        # A genuine request for Budi's number, then the same request replayed: answered once.
        genuine = twilio_form(NUMBER)
        signature = twilio_signature(AUTH_TOKEN, url, list(genuine.items()))
        assert (await ring(client, url, genuine, signature)).status_code == 200
        after_one = await counts(app)
        assert_problem(await ring(client, url, genuine, signature), 409, "webhook_replayed")
        assert await counts(app) == after_one


async def test_a_call_from_a_verified_number_is_that_persons_with_a_single_use_call_token(
    app: App, base: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    budi = await app.sign_in("Budi")
    await verified(app, budi, caplog, NUMBER)
    url = f"{base}/v1/voice/phone/incoming"
    form = twilio_form("+62 812 3456 7890")  # as the number may arrive formatted
    async with httpx.AsyncClient(base_url=base) as client:
        answer = await ring(client, url, form, twilio_signature(AUTH_TOKEN, url, list(form.items())))
    assert answer.status_code == 200, answer.text
    stream = ElementTree.fromstring(answer.text).find("Connect/Stream")
    assert stream is not None
    ws_url = base.replace("http://", "ws://") + "/v1/voice/phone"
    assert stream.get("url") == ws_url
    parameter = stream.find("Parameter")
    assert parameter is not None and parameter.get("name") == "call_token"
    call_token = str(parameter.get("value"))
    # A call token opens nothing but the phone door (and is spent by trying).
    async with httpx.AsyncClient(base_url=base) as client:
        more = []
        for _ in range(2):
            form2 = twilio_form(NUMBER)
            again = await ring(client, url, form2, twilio_signature(AUTH_TOKEN, url, list(form2.items())))
            more.append(str(ElementTree.fromstring(again.text).find("Connect/Stream/Parameter").get("value")))  # type: ignore[union-attr]
    assert_problem(await app.client.get("/v1/events", params={"ticket": more[0]}), 401, "unauthorized")
    speaker, code = await speaker_answer(ws_url.replace("/phone", "/speaker") + f"?ticket={more[1]}")
    assert (speaker["code"], code) == ("unauthorized", 4401)
    # Twilio connects the stream with the token: the call is Budi's, in his thread.
    async with phone_call(ws_url, {"call_token": call_token}) as (ws, caller, _):
        await say(caller, "turn on the bedroom light")
        async with asyncio.timeout(60):
            while not await app.services.pool.fetchval("SELECT count(*) FROM messages WHERE channel = 'phone'"):
                await asyncio.sleep(0.1)
        await ws.send(twilio.stop())
        with contextlib.suppress(Exception):
            await closed_with(ws)
    me = (await app.client.get("/v1/me", headers=budi)).json()["id"]
    first = await app.services.pool.fetchrow(
        "SELECT person_id, author, channel, text FROM messages ORDER BY seq LIMIT 1"
    )
    assert first is not None and (first["person_id"], first["author"], first["channel"]) == (me, "human", "phone")
    assert "bedroom" in first["text"].lower()
    await asyncio.sleep(0.5)  # the call lets go of its slot
    # Single use: the same token again is refused.
    async with phone_call(ws_url, {"call_token": call_token}) as (ws, _, _):
        assert await closed_with(ws) == 4401


async def test_without_a_twilio_auth_token_the_webhook_is_off(app: App, settings: Settings) -> None:
    from app.server import running

    off = settings.model_copy(update={"twilio_auth_token": None, "voice_preload": False})
    async with running(off) as (_, second):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=second), base_url="http://test")
        async with client:
            answer = await client.post("/v1/voice/phone/incoming", content="From=%2B6281234567890")
    assert_problem(answer, 404, "phone_webhook_disabled")


async def test_codes_are_limited_per_client_address_across_people_never_per_number(
    app: App, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """One address signing up many people cannot multiply the codes it may ask for; and
    codes asked for a number from elsewhere never stop its owner verifying it."""
    caplog.set_level(logging.INFO)
    per_address = 3
    async with running(settings.model_copy(update={"phone_codes_per_address_per_hour_max": per_address})) as (
        _,
        limited_app,
    ):
        attacker = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=limited_app, client=("203.0.113.66", 40_000)), base_url="http://test"
        )
        owner = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=limited_app, client=("198.51.100.66", 40_000)), base_url="http://test"
        )
        async with attacker, owner:
            answers = []
            for n in range(per_address + 2):  # a new person each time: no person's own limit is reached
                signed = (await attacker.post("/v1/auth/local", json={"name": f"Spammer {n}"})).json()
                headers = {"Authorization": f"Bearer {signed['token']}"}
                answers.append(await attacker.post("/v1/phones", json={"number": NUMBER}, headers=headers))
            assert [a.status_code for a in answers] == [202] * per_address + [429] * 2
            assert_problem(answers[-1], 429, "rate_limited")
            # The number's owner, from their own address, is not held back by any of it.
            signed = (await owner.post("/v1/auth/local", json={"name": "Budi"})).json()
            budi = {"Authorization": f"Bearer {signed['token']}"}
            added = await owner.post("/v1/phones", json={"number": NUMBER}, headers=budi)
            assert added.status_code == 202, added.text
            verified_answer = await owner.post(
                f"/v1/phones/{added.json()['id']}/verify", json={"code": last_code(caplog, NUMBER)}, headers=budi
            )
            assert verified_answer.status_code == 200, verified_answer.text
