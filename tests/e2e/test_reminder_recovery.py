"""Nothing waits in memory (docs/agents.md#wake-notes-postera): a note survives the server that scheduled it, and a
delivery that dies halfway is finished by a retry without waking Ava twice."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from app.server import running
from chat import WakeRunner
from reminders import Note
from settings import Settings
from tests.conftest import App


async def wait_delivered(app: App, note_id: str, *, timeout_s: float = 15.0) -> Note:
    parts = app.services.reminders
    assert parts is not None
    async with asyncio.timeout(timeout_s):
        while True:
            note = await parts.notes.get(note_id)
            assert note is not None
            if note.status == "delivered":
                return note
            await asyncio.sleep(0.05)


async def pending_note(app: App, person_id: str) -> Note:
    parts = app.services.reminders
    assert parts is not None
    [note] = await parts.notes.of_person(person_id, statuses=("pending",), limit=5, newest_first=False)
    return note


async def wake_runs(app: App, person_id: str) -> list[Any]:
    return list(
        await app.services.pool.fetch(
            "SELECT id, status FROM runs WHERE person_id = $1 AND trigger = 'postera'", person_id
        )
    )


async def test_a_note_scheduled_before_a_restart_is_delivered_by_the_next_server(settings: Settings) -> None:
    async with running(settings) as (services, fastapi_app):
        first = App(services, fastapi_app)
        headers = await first.sign_in()
        scheduled_at = time.monotonic()
        reply = await first.say(headers, "remind me in 6 seconds to stretch")
        assert reply.json()["messages"][-1]["text"].startswith("Okay, I'll remind you to stretch")
        await first.client.aclose()
    assert time.monotonic() - scheduled_at < 5, "the first server stopped before the note was due"
    # The first server is gone before the note is due; a new one starts on the same database.
    async with running(settings) as (services, fastapi_app):
        second = App(services, fastapi_app)
        try:
            me = (await second.client.get("/v1/me", headers=headers)).json()["id"]
            note = await pending_note(second, me)
            delivered = await wait_delivered(second, note.id)
            thread = (await second.client.get("/v1/messages", headers=headers)).json()["messages"]
            assert [m["author"] for m in thread] == ["human", "ava", "postera", "ava"]
            assert thread[-1]["text"] == "Hey Budi, it's time to stretch!"
            assert delivered.run_id == thread[-1]["run_id"]
        finally:
            await second.client.aclose()


async def test_a_claim_whose_worker_died_is_taken_again_after_its_lease(app: App) -> None:
    headers = await app.sign_in()
    await app.say(headers, "remind me in 4 seconds to stretch")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    parts = app.services.reminders
    assert parts is not None
    note = await pending_note(app, me)
    # A worker claims the note early (a second-long lease) and dies on the spot; the
    # dispatcher wakes at the due time and finds the claim lapsed.
    claimed = await parts.notes.claim(note.id, lease_s=1.0, early_s=60.0)
    assert claimed is not None and claimed.status == "delivering"
    delivered = await wait_delivered(app, note.id)
    assert delivered.attempts == 2
    assert len(await wake_runs(app, me)) == 1


async def test_a_delivery_that_crashes_after_ava_ran_is_retried_and_she_runs_once(app: App) -> None:
    headers = await app.sign_in()
    await app.say(headers, "remind me in 4 seconds to stretch")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    parts = app.services.reminders
    assert parts is not None
    note = await pending_note(app, me)
    claimed = await parts.notes.claim(note.id, lease_s=1.0, early_s=60.0)
    assert claimed is not None
    # The worker writes the note and runs Ava, then dies before it marks the note delivered.
    runner = WakeRunner(
        turns=app.services.turns,
        people=app.services.people,
        notes=parts.notes,
        push=parts.push,
        pool=app.services.pool,
    )
    woken = await runner.wake(note=claimed)
    assert woken.outcome == "ran" and woken.run_id is not None
    assert (await parts.notes.get(note.id)).status == "delivering"  # type: ignore[union-attr]
    delivered = await wait_delivered(app, note.id)
    assert delivered.run_id == woken.run_id, "the retry found the run, it did not start another"
    assert [r["id"] for r in await wake_runs(app, me)] == [woken.run_id]
    thread = (await app.client.get("/v1/messages", headers=headers)).json()["messages"]
    assert [m["author"] for m in thread] == ["human", "ava", "postera", "ava"]


async def test_a_note_that_fires_during_a_call_is_said_on_the_call(app: App) -> None:
    """The call's audio pipeline is replaced by what it would speak; the registry, the
    dispatcher, the wake turn on the voice channel and the thread are the real ones."""
    from agents import SpokenReply

    headers = await app.sign_in()
    await app.say(headers, "remind me in 4 seconds to stretch")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    person = await app.services.people.get(me)
    assert person is not None
    spoken: list[SpokenReply] = []

    async def speak(reply: SpokenReply) -> None:
        spoken.append(reply)

    with app.services.voice.registry.claim(person, "voice") as call:
        call.speak = speak
        note = await pending_note(app, me)
        await wait_delivered(app, note.id)
    [said] = spoken
    assert " ".join(s.text for s in said.segments) == "Hey Budi, it's time to stretch!"
    assert [s.emotion for s in said.segments] == ["affectionate"], "the voice layer's emotion tag, never spoken"
    thread = (await app.client.get("/v1/messages", headers=headers)).json()["messages"]
    assert [(m["author"], m["channel"]) for m in thread[-2:]] == [("postera", "voice"), ("ava", "voice")]
    assert thread[-1]["text"] == "Hey Budi, it's time to stretch!"
    assert thread[-1]["emotions"] == ["affectionate"]
