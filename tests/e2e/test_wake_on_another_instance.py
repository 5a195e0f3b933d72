"""A wake note that fires while the person is on a call another server process holds is
said on that call: the process delivering the note finds the person's call slot held in
the database and no call of its own, runs Ava in the voice layer, and the holding process
hears the reply on its LISTEN connection and says it on the call. Two processes in one
test (each a whole app on the same database); the call's voice is recorded, as a door
would play it. With tracing on, the NOTIFY carries the note's trace, and the `say` made
where the call lives is a child of the delivering process's `say elsewhere`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents import SpokenReply
from app.server import running
from settings import Settings
from telemetry import begin, here
from tests.conftest import App


async def _said_on_another_instance(
    app: App, settings: Settings, tmp_path: Path, name: str, text: str, *, say_span: bool = False
) -> tuple[str, list[SpokenReply]]:
    """`name` signs in and is on a call a second process holds (it delivers no notes
    itself), a note for them falls due on this one; the note's id and what the call said."""
    headers = await app.sign_in(name)
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    person = await app.services.people.get(me)
    assert person is not None and app.services.reminders is not None
    said: list[SpokenReply] = []

    async def speak(reply: SpokenReply) -> None:
        if say_span:
            # As a call's voice does (voice/tracing.py, `unprompted`): its `say` under the
            # trace current where it is asked to speak.
            begin("say", within=here(), call="call_elsewhere").end()
        said.append(reply)

    holder_settings = settings.model_copy(update={"avagenc_home": tmp_path / "holder"})
    async with running(holder_settings, deliver_wakes=False) as (holder, _):
        async with holder.voice.registry.claim_everywhere(person, "voice") as call:
            call.speak = speak
            note = await app.services.reminders.notes.add(
                person_id=me,
                text=text,
                due_at=datetime.now(UTC) + timedelta(seconds=1),
                time_zone="Asia/Jakarta",
                created_by_run_id=None,
            )
            async with asyncio.timeout(30):
                while not said:
                    await asyncio.sleep(0.05)
    return note.id, said


async def test_a_note_is_said_on_the_call_the_other_instance_holds(
    app: App, settings: Settings, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    note_id, said = await _said_on_another_instance(
        app, settings, tmp_path, "Budi", "Remind Budi to take the cake out of the oven."
    )
    delivered = await pool.fetchrow("SELECT status, run_id FROM wake_notes WHERE id = $1", note_id)
    assert delivered is not None and delivered["status"] == "delivered"
    run = await pool.fetchrow("SELECT channel, status FROM runs WHERE id = $1", delivered["run_id"])
    assert run is not None and (run["channel"], run["status"]) == ("voice", "succeeded")
    reply = await pool.fetchval(
        "SELECT text FROM messages WHERE run_id = $1 AND author = 'ava' ORDER BY seq DESC LIMIT 1", delivered["run_id"]
    )
    assert len(said) == 1 and said[0].text == reply, (said, reply)


async def test_the_say_on_the_other_instance_continues_the_notes_trace(
    app: App, settings: Settings, tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    await _said_on_another_instance(app, settings, tmp_path, "Budi", "Remind Budi to water the plants.", say_span=True)
    finished = spans.get_finished_spans()
    (asked,) = [s for s in finished if s.name == "say elsewhere"]
    (spoken,) = [s for s in finished if s.name == "say"]
    (wake,) = [s for s in finished if s.name == "wake"]
    assert asked.context is not None and spoken.context is not None and wake.context is not None
    assert spoken.parent is not None and spoken.parent.span_id == asked.context.span_id
    assert spoken.context.trace_id == asked.context.trace_id == wake.context.trace_id
    assert spoken.parent.is_remote, "continued from the NOTIFY, not from this task's context"


async def test_a_note_for_a_person_on_no_call_stays_a_text_turn(app: App, pool: asyncpg.Pool) -> None:
    headers = await app.sign_in("Sari")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    assert app.services.reminders is not None
    note = await app.services.reminders.notes.add(
        person_id=me,
        text="Remind Sari to call her mother.",
        due_at=datetime.now(UTC) + timedelta(seconds=1),
        time_zone="Asia/Jakarta",
        created_by_run_id=None,
    )
    async with asyncio.timeout(30):
        while (await pool.fetchval("SELECT status FROM wake_notes WHERE id = $1", note.id)) != "delivered":
            await asyncio.sleep(0.05)
    channel = await pool.fetchval(
        "SELECT r.channel FROM runs r JOIN wake_notes n ON n.run_id = r.id WHERE n.id = $1", note.id
    )
    assert channel == "text"
