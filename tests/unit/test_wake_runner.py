"""A fired note becomes Ava's turn in one place (`chat.WakeRunner`): on the person's live
call in this process she runs on the call's channel and says her reply there; with no
call it is a text turn. Run on the in-memory twins, asserting on the thread they keep and
on what the call heard."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import asyncpg

from agents import ModelResponse, SpokenReply
from chat import WakeRunner
from reminders import LocalPush, Note, Notes
from tests.unit.test_turns_on_twins import World, world


def fired(person_id: str) -> Note:
    now = datetime.now(UTC)
    return Note(
        id="rem_stretch",
        person_id=person_id,
        agent="ava",
        text="Remind Budi to stretch.",
        due_at=now,
        time_zone="UTC",
        status="delivering",
        created_at=now,
    )


def runner(w: World, live_call: Any = None) -> WakeRunner:
    # Only `tell` reads the notes and the pool; these tests wake, they never tell.
    return WakeRunner(
        turns=w.turns,
        people=w.people,
        notes=cast(Notes, None),
        push=LocalPush(),
        pool=cast(asyncpg.Pool, None),
        live_call=live_call,
    )


async def channels(w: World, person_id: str) -> list[tuple[str, str]]:
    return [(m.author, m.channel) for m in await w.threads.page(person_id, before=None, after=None, limit=100)]


async def test_on_a_live_call_ava_runs_on_its_channel_and_says_her_reply_there() -> None:
    w = world()
    person = await w.person()
    heard: list[SpokenReply] = []

    async def speak(reply: SpokenReply) -> None:
        heard.append(reply)

    w.model.extend([ModelResponse("Time to stretch, Budi! #affectionate#")])
    woken = await runner(w, lambda person_id: ("phone", speak) if person_id == person.id else None).wake(
        note=fired(person.id)
    )
    assert woken.outcome == "ran"
    assert await channels(w, person.id) == [("postera", "phone"), ("ava", "phone")]
    said = [[(s.text, s.emotion) for s in reply.segments] for reply in heard]
    assert said == [[("Time to stretch, Budi!", "affectionate")]]


async def test_with_no_call_it_is_a_text_turn_and_nothing_is_spoken() -> None:
    w = world()
    person = await w.person()
    w.model.extend([ModelResponse("Time to stretch, Budi!")])
    woken = await runner(w, lambda _person_id: None).wake(note=fired(person.id))
    assert woken.outcome == "ran" and woken.reply == "Time to stretch, Budi!"
    assert await channels(w, person.id) == [("postera", "text"), ("ava", "text")]


async def test_a_call_that_ended_meanwhile_still_leaves_the_reply_in_the_thread() -> None:
    w = world()
    person = await w.person()

    async def gone(reply: SpokenReply) -> None:
        raise ConnectionError("the call hung up")

    w.model.extend([ModelResponse("Time to stretch!")])
    woken = await runner(w, lambda _person_id: ("voice", gone)).wake(note=fired(person.id))
    assert woken.outcome == "ran"
    assert await channels(w, person.id) == [("postera", "voice"), ("ava", "voice")]
