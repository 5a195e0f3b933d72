"""How calls end when the server, not the person, ends them: an empty wallet at the
start of a call (4402 and the error event on every WebSocket door), a wallet that
empties mid-call (Ava says so once, then `hangup` reason `wallet_empty` and close 4402,
the thread whole), and a shutdown (`VoiceDoors.end_all_calls`: a spoken goodbye, then
`hangup` reason `shutdown` and close 1000 on every door)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from ledger import Posting, TransactionSpec, user_account
from tests.conftest import App
from tests.e2e.test_phone import dialled, phone_call
from tests.e2e.test_phone import say as say_on_phone
from tests.e2e.test_speaker import call, say, token_for
from tests.fakes import twilio
from tests.fakes.servers import serve_in_process
from tests.fakes.speech import wait_for


@pytest.fixture
async def base_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app.app) as url:
        yield url.replace("http://", "ws://")


async def drain(app: App, person_id: str, ref: str) -> None:
    """Empty the person's wallet to exactly zero."""
    balance = await app.services.wallet.balance_micros(person_id)
    if balance > 0:
        postings = (Posting(user_account(person_id), -balance), Posting("revenue:IDR", balance))
        await app.services.ledger.transact(spec=TransactionSpec(type="adjustment", ref=ref, postings=postings))


async def closed(ws: ClientConnection, timeout_s: float = 10) -> int | None:
    with contextlib.suppress(ConnectionClosed, TimeoutError):
        async with asyncio.timeout(timeout_s):
            await ws.wait_closed()
    return ws.close_code


async def test_a_phone_call_with_an_empty_wallet_closes_4402_with_the_error_event(app: App, base_url: str) -> None:
    dialling = await dialled(app)
    me = dialling.person_id
    await drain(app, me, "test:drain")
    async with connect(f"{base_url}/v1/voice/phone", max_size=2**20) as ws:
        await ws.send(twilio.connected())
        await ws.send(twilio.start(dialling.parameters))
        event = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert await closed(ws) == 4402
    assert (event["type"], event["code"]) == ("error", "insufficient_balance")
    assert await app.services.threads.page(me, before=None, after=None, limit=10) == []
    assert await app.services.voice.registry.emptied(timeout_s=5)


async def test_a_webrtc_offer_with_an_empty_wallet_is_a_402_problem(app: App) -> None:
    headers = await app.sign_in()
    me = await app.services.local_tokens.verify(headers["Authorization"].removeprefix("Bearer "))
    await drain(app, me, "test:drain")
    sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"
    response = await app.client.post("/v1/voice/webrtc/offer", json={"sdp": sdp, "type": "offer"}, headers=headers)
    assert response.status_code == 402
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == "insufficient_balance"
    assert len(app.services.voice.registry) == 0


async def test_a_wallet_that_empties_mid_phone_call_is_said_then_the_line_closes_4402(app: App, base_url: str) -> None:
    dialling = await dialled(app)
    me = dialling.person_id
    async with phone_call(f"{base_url}/v1/voice/phone", dialling.parameters) as (phone, caller, heard):
        await say_on_phone(caller, "what can you do")
        await twilio.wait_for(heard, lambda h: len(h.ulaw) > 8_000, timeout_s=40)
        first_reply_bytes = len(heard.ulaw)
        await drain(app, me, "test:drain-mid-phone-call")
        await say_on_phone(caller, "what time is it")
        assert await closed(phone, timeout_s=40) == 4402
    assert len(heard.ulaw) > first_reply_bytes + 8_000, "the notice is heard down the line"
    thread = await app.services.threads.page(me, before=None, after=None, limit=50)
    assert [m.author for m in thread] == ["human", "ava"]
    assert await app.services.voice.registry.emptied(timeout_s=5)


async def test_a_wallet_that_empties_mid_call_is_said_once_then_hangup_and_4402(app: App, base_url: str) -> None:
    token = await token_for(app)
    me = await app.services.local_tokens.verify(token)
    async with call(base_url, token) as (ws, heard):
        await say(ws, "what can you do")
        await wait_for(heard, lambda h: bool(h.of("transcript", "assistant")) and len(h.audio) > 16_000, timeout_s=40)
        first_reply = heard.of("transcript", "assistant")[0]["text"]
        await drain(app, me, "test:drain-mid-call")
        await say(ws, "what time is it")
        await wait_for(heard, lambda h: bool(h.of("hangup")), timeout_s=40)
        assert await closed(ws) == 4402
    hangup_at = next(i for i, item in enumerate(heard.items) if isinstance(item, dict) and item["type"] == "hangup")
    assert heard.items[hangup_at] == {"type": "hangup", "reason": "wallet_empty"}
    assert not any(isinstance(i, bytes) for i in heard.items[hangup_at + 1 :]), "hangup comes after the last audio"
    said = [t["text"] for t in heard.of("transcript", "assistant")]
    notices = [t for t in said if "wallet is empty" in t.lower()]
    assert len(notices) == 1, said
    assert said[-1] == notices[0]
    # The thread is whole: the first turn in full, nothing of the refused one.
    thread = await app.services.threads.page(me, before=None, after=None, limit=50)
    assert [m.author for m in thread] == ["human", "ava"]
    # Captions come a sentence at a time, so the first caption opens the stored reply.
    assert thread[-1].text.startswith(first_reply)
    runs = [await app.services.runs.get(me, m.run_id) for m in thread if m.run_id]
    assert all(r is not None and r.status == "succeeded" for r in runs)
    assert await app.services.voice.registry.emptied(timeout_s=5)


async def test_end_all_calls_says_goodbye_on_every_door_then_hangs_up_with_shutdown(app: App, base_url: str) -> None:
    speaker_token = await token_for(app, "Budi")
    sari = await dialled(app, "Sari")
    async with (
        call(base_url, speaker_token) as (ws, heard),
        phone_call(f"{base_url}/v1/voice/phone", sari.parameters) as (phone, caller, phone_heard),
    ):
        await say_on_phone(caller, "hello")  # the phone call is live and listening
        async with asyncio.timeout(10):
            while len(app.services.voice.registry) < 2:
                await asyncio.sleep(0.05)
        await app.services.voice.end_all_calls(reason="shutdown", timeout_s=20)
        assert len(app.services.voice.registry) == 0
        assert await closed(ws) == 1000
        assert await closed(phone) == 1000
    await wait_for(heard, lambda h: bool(h.of("hangup")), timeout_s=1)
    assert heard.of("hangup") == [{"type": "hangup", "reason": "shutdown"}]
    goodbye = heard.of("transcript", "assistant")[-1]["text"]
    assert "bye" in goodbye.lower()
    hangup_at = next(i for i, item in enumerate(heard.items) if isinstance(item, dict) and item["type"] == "hangup")
    assert any(isinstance(i, bytes) for i in heard.items[:hangup_at]), "the goodbye is spoken before the hangup"
    assert phone_heard.of("media"), "the phone hears the goodbye"


async def test_a_turn_refused_on_a_live_call_is_a_spoken_apology_and_the_call_goes_on(
    app: App, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chat.errors import ThreadBusy

    async def busy(*_args: object, **_kwargs: object) -> None:
        raise ThreadBusy("Another request is still being answered; try again shortly.")

    monkeypatch.setattr(app.services.turns, "post", busy)
    token = await token_for(app)
    async with call(base_url, token) as (ws, heard):
        await say(ws, "what can you do")
        await wait_for(heard, lambda h: bool(h.of("transcript", "assistant")) and len(h.audio) > 16_000, timeout_s=40)
        assert "still working" in heard.of("transcript", "assistant")[0]["text"]
        assert not heard.of("hangup") and len(app.services.voice.registry) == 1, "the call goes on"
        await ws.send(json.dumps({"type": "hangup"}))
        assert await closed(ws) == 1000
