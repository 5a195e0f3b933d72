"""Wake notes end to end on the offline model: a person asks for a reminder over HTTP,
Ava schedules it, and when it falls due she speaks first in the same thread — once —
with open clients told and a push recorded. Listing and cancelling by chat and by API,
the scheduler callback's signatures, the limits, and the empty wallet."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from agents import SandboxHome
from app.specialists import build_toolbox
from chat import EventLog
from chat.wakes import WALLET_EMPTY_BODY
from ledger import Posting, TransactionSpec, user_account
from reminders import LocalPush, Note
from tests.conftest import App


async def eventually(check: Callable[[], Awaitable[Any]], *, timeout_s: float = 15.0) -> Any:
    """Wait until `check()` returns something truthy (the dispatcher works in the background)."""
    async with asyncio.timeout(timeout_s):
        while True:
            value = await check()
            if value:
                return value
            await asyncio.sleep(0.05)


async def thread(app: App, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = await app.client.get("/v1/messages", headers=headers, params={"limit": 200})
    assert response.status_code == 200, response.text
    return list(response.json()["messages"])


async def upcoming(app: App, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = await app.client.get("/v1/reminders", headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["upcoming"])


async def notes_of(app: App, person_id: str) -> list[Note]:
    parts = app.services.reminders
    assert parts is not None
    return await parts.notes.of_person(
        person_id, statuses=("pending", "delivering", "delivered", "cancelled", "failed"), limit=200, newest_first=False
    )


async def person_id(app: App, headers: dict[str, str]) -> str:
    return str((await app.client.get("/v1/me", headers=headers)).json()["id"])


async def test_a_note_due_in_two_seconds_is_delivered_once_and_ava_speaks_first(app: App) -> None:
    headers = await app.sign_in()
    body = (await app.say(headers, "remind me in 2 seconds to stretch my legs")).json()
    assert body["messages"][-1]["author"] == "ava"
    assert body["messages"][-1]["text"].startswith("Okay, I'll remind you to stretch your legs at ")
    assert [r["status"] for r in body["runs"]] == ["succeeded"]
    [pending] = await upcoming(app, headers)
    assert pending["text"] == "Remind Budi to stretch your legs."
    assert pending["status"] == "pending"
    assert pending["time_zone"] == "Asia/Jakarta"

    async def delivered() -> list[dict[str, Any]]:
        messages = await thread(app, headers)
        return messages if messages[-1]["author"] == "ava" and messages[-2]["author"] == "postera" else []

    messages = await eventually(delivered)
    await asyncio.sleep(1.0)  # nothing fires twice
    assert await thread(app, headers) == messages
    note_message, reply = messages[-2:]
    assert note_message["text"] == "Remind Budi to stretch your legs."
    assert reply["text"] == "Hey Budi, it's time to stretch your legs!"
    runs = (await app.client.get("/v1/wallet/entries", headers=headers)).json()["entries"]
    triggers = [e["receipt"].get("trigger") for e in runs if e.get("receipt")]
    assert "postera" in triggers, "the wake run is billed like any run, trigger on the receipt"
    me = await person_id(app, headers)
    [note] = await notes_of(app, me)
    assert note.status == "delivered"
    assert note.run_id == reply["run_id"]
    assert note.preview == reply["text"]
    assert note.delivered_at is not None and note.delivered_at >= note.due_at
    events = await EventLog(app.services.pool).since(me, 0, limit=500)
    fired = [e for e in events if e.type == "reminder.delivered"]
    assert len(fired) == 1
    assert fired[0].data["id"] == note.id and fired[0].data["preview"] == reply["text"]
    parts = app.services.reminders
    assert parts is not None and isinstance(parts.push, LocalPush)
    [pushed] = parts.push.sent_to(me)
    assert pushed.body == "Hey Budi, it's time to stretch your legs!"


async def test_listing_and_cancelling_by_chat(app: App) -> None:
    headers = await app.sign_in()
    await app.say(headers, "remind me in 10 minutes to stretch")
    await app.say(headers, "remind me at 23:59 to call my mom")
    listed = (await app.say(headers, "what are you reminding me of?")).json()["messages"][-1]["text"]
    assert listed.startswith("I'll remind you: stretch at ")
    assert "call your mom at 23:59" in listed
    cancelled = (await app.say(headers, "cancel the stretch reminder")).json()["messages"][-1]["text"]
    assert cancelled == "Done, I won't remind you to stretch."
    [left] = await upcoming(app, headers)
    assert left["text"] == "Remind Budi to call your mom."
    past = (await app.client.get("/v1/reminders", headers=headers)).json()["past"]
    assert [(n["text"], n["status"]) for n in past] == [("Remind Budi to stretch.", "cancelled")]


async def test_indonesian_clock_and_relative_times(app: App) -> None:
    headers = await app.sign_in("Sari")
    reply = (await app.say(headers, "ingatkan aku jam 17:00 jemput Nay")).json()["messages"][-1]["text"]
    assert reply == "Oke, jam 17:00 aku ingetin jemput Nay ya." or re.match(r"Oke, jam \d\d \w{3} 17:00 aku", reply)
    reply = (await app.say(headers, "ingatkan aku dalam 10 menit untuk minum obat")).json()["messages"][-1]["text"]
    assert reply.startswith("Oke, jam ") and reply.endswith("aku ingetin minum obat ya.")
    notes = await upcoming(app, headers)
    assert {n["text"] for n in notes} == {"Ingatkan Sari untuk jemput Nay.", "Ingatkan Sari untuk minum obat."}
    [nay] = [n for n in notes if "Nay" in n["text"]]
    assert nay["due_local"].endswith("T17:00:00")


async def test_a_request_without_a_time_gets_a_question_not_a_guess(app: App) -> None:
    headers = await app.sign_in()
    reply = (await app.say(headers, "remind me to water the plants")).json()["messages"][-1]["text"]
    assert reply == "When should I remind you, and of what?"
    question = (await app.say(headers, "can you remind me of things?")).json()["messages"][-1]["text"]
    assert question.startswith("Yes! Tell me when")
    assert await upcoming(app, headers) == []


async def test_a_cancelled_note_never_fires(app: App) -> None:
    headers = await app.sign_in()
    await app.say(headers, "remind me in 3 seconds to stretch")
    [note] = await upcoming(app, headers)
    response = await app.client.delete(f"/v1/reminders/{note['id']}", headers=headers)
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    await asyncio.sleep(4.0)
    assert [m["author"] for m in await thread(app, headers)] == ["human", "ava"]
    again = await app.client.delete(f"/v1/reminders/{note['id']}", headers=headers)
    assert again.status_code == 409 and again.json()["type"] == "reminder_not_pending"


async def test_another_persons_note_is_not_found(app: App) -> None:
    budi = await app.sign_in("Budi")
    sari = await app.sign_in("Sari")
    await app.say(budi, "remind me in 10 minutes to stretch")
    [note] = await upcoming(app, budi)
    response = await app.client.delete(f"/v1/reminders/{note['id']}", headers=sari)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["type"] == "reminder_not_found"
    assert await upcoming(app, sari) == []
    assert len(await upcoming(app, budi)) == 1
    for odd in ("pstr_%00x", "x" * 300, "pstr_" + "a" * 80, "%E2%80%8B"):
        response = await app.client.delete(f"/v1/reminders/{odd}", headers=budi)
        assert response.status_code == 404, (odd, response.text)
        refused = await app.client.post(f"/v1/reminders/{odd}/deliver", headers={"x-avagenc-signature": "v1=0"})
        assert refused.status_code == 401, (odd, refused.text)


async def test_the_callback_takes_a_scheduler_signature_never_a_persons_token(app: App) -> None:
    headers = await app.sign_in()
    await app.say(headers, "remind me in 30 seconds to stretch")
    [listed] = await upcoming(app, headers)
    url = f"/v1/reminders/{listed['id']}/deliver"
    assert (await app.client.post(url)).status_code == 401
    assert (await app.client.post(url, headers={"Authorization": headers["Authorization"]})).status_code == 401
    assert (await app.client.post(url, headers={"x-avagenc-signature": "v1=00"})).status_code == 401
    unknown = "/v1/reminders/pstr_nobodysnote/deliver"
    assert (await app.client.post(unknown, headers={"x-avagenc-signature": "v1=00"})).status_code == 401, (
        "an unknown note and a bad signature look the same"
    )
    assert (await app.client.post(unknown, headers={"Authorization": "Bearer x"})).status_code == 401
    parts = app.services.reminders
    assert parts is not None
    [note] = await notes_of(app, await person_id(app, headers))
    signed = {"x-avagenc-signature": parts.gate.sign(note)}
    first = await app.client.post(url, headers=signed)
    assert first.status_code == 200 and first.json()["status"] == "delivered"
    second = await app.client.post(url, headers=signed)
    assert second.status_code == 200 and second.json()["status"] == "done_before"
    authors = [m["author"] for m in await thread(app, headers)]
    assert authors == ["human", "ava", "postera", "ava"], "delivered once, however often asked"
    await app.say(headers, "remind me in 10 minutes to drink water")
    [later] = [n for n in await notes_of(app, note.person_id) if n.status == "pending"]
    early = await app.client.post(
        f"/v1/reminders/{later.id}/deliver", headers={"x-avagenc-signature": parts.gate.sign(later)}
    )
    assert early.status_code == 503, "a note is not delivered long before it is due"
    assert early.json()["type"] == "reminder_busy"


async def test_bad_times_become_words_ava_can_say_and_nothing_is_written(app: App, pool: asyncpg.Pool) -> None:
    headers = await app.sign_in()
    reply = (await app.say(headers, "remind me in 400 days to renew my passport")).json()["messages"][-1]["text"]
    assert (
        reply == "I couldn't set that reminder: The note was not scheduled: A note can be due at most one year ahead."
    )
    assert await upcoming(app, headers) == []


async def test_a_note_that_fires_on_an_empty_wallet_is_written_and_the_person_told_why(
    app: App, pool: asyncpg.Pool
) -> None:
    headers = await app.sign_in()
    await app.say(headers, "remind me in 5 seconds to stretch")
    await app.say(headers, "remind me in 6 seconds to drink water")
    me = await person_id(app, headers)
    # The wallet runs dry before the note fires (Ava's confirmation was charged already).
    balance = (await app.client.get("/v1/wallet", headers=headers)).json()["balance_micros"]
    await app.services.ledger.transact(
        spec=TransactionSpec(
            type="adjustment",
            ref="test:drain",
            postings=(Posting(user_account(me), -balance), Posting("revenue:IDR", balance)),
        )
    )

    async def fired() -> list[Note]:
        delivered = [n for n in await notes_of(app, me) if n.status == "delivered"]
        return delivered if len(delivered) == 2 else []

    for note in await eventually(fired):
        assert note.outcome == "wallet_empty" and note.run_id is None
    messages = await thread(app, headers)
    assert [m["author"] for m in messages][-2:] == ["postera", "postera"], "the notes are in the thread, as written"
    assert [m["text"] for m in messages][-2:] == ["Remind Budi to stretch.", "Remind Budi to drink water."]
    parts = app.services.reminders
    assert parts is not None and isinstance(parts.push, LocalPush)
    push = parts.push

    async def both_pushed() -> list[Any]:
        sent = push.sent_to(me)
        return sent if len(sent) == 2 else []

    first, second = await eventually(both_pushed)
    assert first.body == "Remind Budi to stretch. — " + WALLET_EMPTY_BODY
    assert second.body == "Remind Budi to drink water.", "why is said once, not with every note"


def test_only_ava_has_wake_tools(app: App) -> None:
    parts = app.services.reminders
    assert parts is not None
    assert app.services.specialists is not None
    toolbox = build_toolbox(specialists=app.services.specialists, reminders=parts.reminders)
    assert {"schedule_wake", "list_wakes", "cancel_wake"} <= {t.name for t in toolbox.specs_for("ava")}
    for name in ("zee", "yori", "rafal"):
        assert not {t.name for t in toolbox.specs_for(name)} & {"schedule_wake", "list_wakes", "cancel_wake"}
    [schedule] = [t for t in toolbox.specs_for("ava") if t.name == "schedule_wake"]
    assert "remember nothing else" in schedule.description, "her future self needs a self-contained note"


async def test_listing_and_cancelling_in_indonesian(app: App) -> None:
    headers = await app.sign_in("Sari")
    await app.say(headers, "ingatkan aku jam 17:00 jemput Nay")
    await app.say(headers, "ingatkan aku dalam 10 menit untuk minum obat")
    listed = (await app.say(headers, "apa saja pengingatku?")).json()["messages"][-1]["text"]
    assert listed.startswith("Nanti aku ingetin: ")
    assert "jemput Nay jam " in listed and "minum obat jam " in listed
    cancelled = (await app.say(headers, "batalkan pengingat jemput Nay")).json()["messages"][-1]["text"]
    assert cancelled == "Oke, pengingat jemput Nay aku batalin."
    assert [n["text"] for n in await upcoming(app, headers)] == ["Ingatkan Sari untuk minum obat."]


async def test_work_for_later_is_a_note_and_handed_on_when_ava_wakes(app: App) -> None:
    headers = await app.sign_in()
    me = await person_id(app, headers)
    home = SandboxHome(app.services.pool)
    await app.say(headers, "turn on the bedroom light")
    assert (await home.device_status(person_id=me, device_id="sbx-light-bedroom"))["switch_led"] is True
    body = (await app.say(headers, "turn off the bedroom light in 2 seconds")).json()
    assert [m["author"] for m in body["messages"]] == ["human", "ava"], "nobody acts before the time"
    assert body["messages"][-1]["text"].startswith("Okay, I'll take care of it at ")
    assert (await home.device_status(person_id=me, device_id="sbx-light-bedroom"))["switch_led"] is True
    [note] = await upcoming(app, headers)
    assert note["text"] == "Hand on to Zee: turn off the bedroom light"

    async def handed_on() -> list[dict[str, Any]]:
        messages = await thread(app, headers)
        return messages if messages[-1]["author"] == "zee" else []

    messages = await eventually(handed_on)
    assert [m["author"] for m in messages[-3:]] == ["postera", "ava", "zee"]
    assert messages[-2]["text"] == "@zee"
    assert (await home.device_status(person_id=me, device_id="sbx-light-bedroom"))["switch_led"] is False
    parts = app.services.reminders
    assert parts is not None and isinstance(parts.push, LocalPush)
    push = parts.push

    async def pushed() -> list[Any]:
        return push.sent_to(me)

    [notification] = await eventually(pushed)  # pushed once the note is marked delivered
    assert notification.body == messages[-1]["text"], "the push says what was done"


async def test_forget_me_cancels_pending_wake_notes(app: App) -> None:
    headers = await app.sign_in()
    await app.say(headers, "remind me in 10 minutes to stretch")
    await app.say(headers, "remind me in 20 minutes to drink water")
    response = await app.client.delete("/v1/knowledge", headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["erased"]["wake_notes"] == 2
    assert await upcoming(app, headers) == []
