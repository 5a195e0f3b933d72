"""The follow-up chain, on the scripted model: told about picking up Nay at five, Ava
schedules a nudge at 4:30; each wake leaves the next note (4:45, 5:00, 5:10); when the
person says they are on the way she cancels the last one. Time is moved by making each
note due now, which is all the dispatcher looks at."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents import FunctionCall, Model, ModelRequest, ModelResponse, ScriptedModel
from reminders import Note
from tests.conftest import App

ZONE = ZoneInfo("Asia/Jakarta")


@pytest.fixture
def model(scripted: ScriptedModel) -> Model:
    return scripted


def tool(name: str, args: dict[str, Any]) -> ModelResponse:
    return ModelResponse("", (FunctionCall(f"c-{name}", name, args),))


def schedule(note: str, at_local: str) -> ModelResponse:
    return tool("schedule_wake", {"note": note, "at_local": at_local})


def cancel_last_seen(request: ModelRequest) -> ModelResponse:
    """Cancel the one pending note that checks on the pickup, by the id list_wakes gave."""
    listing = request.contents[-1].results[0].response
    [check] = [w for w in listing["wakes"] if "got Nay" in w["note"]]
    return tool("cancel_wake", {"id": check["id"]})


async def notes(app: App, person_id: str) -> list[Note]:
    parts = app.services.reminders
    assert parts is not None
    statuses = ("pending", "delivering", "delivered", "cancelled", "failed")
    return await parts.notes.of_person(person_id, statuses=statuses, limit=50, newest_first=False)


async def fire(app: App, person_id: str, due_local: str, planned: dict[str, str]) -> None:
    """The clock reaches the note due at `due_local`: make it due now and wait for it."""
    [note] = [n for n in await notes(app, person_id) if n.due_local() == due_local]
    planned[note.id] = due_local[11:16]
    await app.services.pool.execute("UPDATE wake_notes SET due_at = clock_timestamp() WHERE id = $1", note.id)
    async with asyncio.timeout(15):
        while (await app.services.reminders.notes.get(note.id)).status != "delivered":  # type: ignore[union-attr]
            await asyncio.sleep(0.05)


async def test_the_pickup_chain_nudges_then_stops_when_the_person_is_on_the_way(
    app: App, scripted: ScriptedModel
) -> None:
    headers = await app.sign_in("Budi")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    day = (datetime.now(ZONE) + timedelta(days=1)).strftime("%Y-%m-%d")
    at = {t: f"{day}T{t}:00" for t in ("16:30", "16:45", "17:00", "17:10")}
    planned: dict[str, str] = {}  # note id -> the local time it was written for
    scripted.extend(
        [
            schedule("Budi picks up Nay at 17:00. Remind him to get ready to leave.", at["16:30"][:16]),
            ModelResponse("Got it, I'll nudge you at 4:30."),
        ]
    )
    body = (await app.say(headers, "I need to pick up Nay at five today")).json()
    assert body["messages"][-1]["text"] == "Got it, I'll nudge you at 4:30."
    chain = [
        ("16:30", "16:45", "Budi picks up Nay at 17:00. Remind him to leave now.", "Time to get ready for Nay!"),
        ("16:45", "17:00", "Budi picks up Nay at 17:00. Ask if he is on the way.", "Time to leave for Nay!"),
        ("17:00", "17:10", "Budi picks up Nay at 17:00. Check he got Nay.", "It's five: are you on the way?"),
    ]
    for fired, next_at, next_note, said in chain:
        scripted.extend([schedule(next_note, at[next_at]), ModelResponse(said)])
        await fire(app, me, at[fired], planned)
        thread = (await app.client.get("/v1/messages", headers=headers)).json()["messages"]
        assert [m["author"] for m in thread[-2:]] == ["postera", "ava"]
        assert thread[-1]["text"] == said
        woken = scripted.requests[-2]
        assert "[TRIGGER: POSTERA]" in woken.system
        assert woken.contents[-1].text.endswith("Ava (note to self)] " + thread[-2]["text"])
    scripted.extend([tool("list_wakes", {}), cancel_last_seen, ModelResponse("Drive safe!")])
    [last] = [n for n in await notes(app, me) if n.status == "pending"]
    planned[last.id] = "17:10"
    body = (await app.say(headers, "I'm on the way")).json()
    assert body["messages"][-1]["text"] == "Drive safe!"
    written = sorted(await notes(app, me), key=lambda n: n.created_at)
    assert [(planned[n.id], n.status) for n in written] == [
        ("16:30", "delivered"),
        ("16:45", "delivered"),
        ("17:00", "delivered"),
        ("17:10", "cancelled"),
    ]
    assert len({n.run_id for n in written if n.run_id}) == 3, "each wake woke its own run"
    # Each later note was written by the run its predecessor woke.
    assert [n.created_by_run_id for n in written[1:]] == [n.run_id for n in written[:-1]]
    # The cancelled check never fires, even when its time comes.
    [check] = [n for n in await notes(app, me) if n.status == "cancelled"]
    await app.services.pool.execute("UPDATE wake_notes SET due_at = clock_timestamp() WHERE id = $1", check.id)
    await asyncio.sleep(1.0)
    assert (await app.services.reminders.notes.get(check.id)).status == "cancelled"  # type: ignore[union-attr]
