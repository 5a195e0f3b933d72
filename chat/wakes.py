"""A fired wake note, shaped once: Ava's turn on it, and what the person is told.

The reminders domain delivers notes (claim, wake, record, retry) but cannot run Ava, so
it declares the `Wake` and `Tell` ports and the composition root passes this runner's
methods in. Everything about what a fired note becomes lives here: which channel Ava
runs on (the person's live call in this process or in another one sharing the database,
if there is one, else text), saying it on that call, the live event and the push that
follow, and the wallet-empty notice said once. Voice sits above the chat, so a live call
is reached only through the plain lookups the root hands in.

Waking is idempotent per note (`Turns.wake`), and telling happens once per note, after
whoever marked it delivered: a retried delivery never wakes Ava twice or pushes twice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from zoneinfo import ZoneInfo

import asyncpg

from agents import Channel, SpokenReply, parse_spoken
from chat.detached import run_detached
from chat.events import publish_reminder_delivered
from chat.ports import PeopleStore
from chat.turns import Turns
from reminders import Note, Notes, Notification, Push, Woken, first_line
from telemetry import span

log = logging.getLogger("avagenc")

WALLET_EMPTY_BODY = "I couldn't act on it because your wallet is empty. Top up and I'll be right back."

# Says a reply on a live call.
Speak = Callable[[SpokenReply], Awaitable[None]]
# The person's live call in this process, by person id: the call's channel and how to
# speak on it; None when they are on no call here.
LiveCall = Callable[[str], tuple[str, Speak] | None]
# The person's live call held by another server process sharing the database: how to have
# that process speak on it; None when they are on no call anywhere else.
CallElsewhere = Callable[[str], Awaitable[Speak | None]]


class WakeRunner:
    """Runs Ava on fired notes in the person's thread and tells the person what came of it."""

    def __init__(
        self,
        *,
        turns: Turns,
        people: PeopleStore,
        notes: Notes,
        push: Push,
        pool: asyncpg.Pool,
        live_call: LiveCall | None = None,
        call_elsewhere: CallElsewhere | None = None,
    ) -> None:
        self._turns = turns
        self._people = people
        self._notes = notes
        self._push = push
        self._pool = pool
        self._live_call = live_call
        self._call_elsewhere = call_elsewhere

    async def wake(self, *, note: Note) -> Woken:
        """A turn of Ava's own in the person's thread. If the person is on a call in this
        process, she runs on the call's channel (voice layer) and says it there at once;
        otherwise it is a text turn, announced and pushed by `tell`.

        Each delivery is a trace of its own: a `wake` root (the note's and the person's ids,
        never its text) with the turn, Ava's run and, on a call, the speaking under it
        (docs/operations.md#traces)."""
        with span("wake", root=True, note=note.id, person=note.person_id) as traced:
            woken = await self._wake(note, traced.set_attribute)
            traced.set_attribute("avagenc.outcome", woken.outcome)
            return woken

    async def _wake(self, note: Note, mark: Callable[[str, str], None]) -> Woken:
        person = await self._people.get(note.person_id)
        if person is None:
            return Woken(run_id=None, reply="", outcome="silent")  # the person is gone
        try:
            zone = ZoneInfo(person.time_zone)
        except (ValueError, KeyError):
            zone = ZoneInfo(note.time_zone)
        call = self._live_call(person.id) if self._live_call is not None else None
        channel: Channel = "text"
        speak: Speak | None = None
        if call is not None:
            call_channel, speak = call
            channel = "phone" if call_channel == "phone" else "voice"
        elif self._call_elsewhere is not None:
            # On a call another process holds: Ava runs in the voice layer here and that
            # process says her reply on the call (docs/agents.md#wake-notes-postera).
            try:
                speak = await self._call_elsewhere(person.id)
            except Exception:  # not knowing is no reason to fail the note: it goes as text
                log.warning("could not look for a call of %s elsewhere", person.id)
            if speak is not None:
                channel = "voice"
        mark("avagenc.channel", channel)
        # Detached: shutdown waits for a wake in progress instead of cutting its run short.
        woken = await run_detached(
            self._turns.wake(person, note_id=note.id, text=note.text, zone=zone, channel=channel)
        )
        if speak is not None and woken.outcome == "ran":
            try:
                await speak(parse_spoken(woken.raw or woken.reply))
            except Exception:  # the call ended meanwhile: the thread has the reply anyway
                log.warning("could not say note %s on the call", note.id)
        return woken

    async def tell(self, *, note: Note, woken: Woken) -> None:
        """Open clients hear the note was delivered; the person gets a push with what Ava
        said first, or, on an empty wallet, the note itself and (the first time) why."""
        try:
            await publish_reminder_delivered(self._pool, note.person_id, note.as_json())
        except Exception:
            log.exception("announcing delivered note %s failed", note.id)
        body = first_line(woken.reply)
        if woken.outcome == "wallet_empty":
            # Why is said once: while the wallet stays empty, later notes arrive as written.
            body = first_line(note.text, chars_max=120)
            if await self._notes.previous_outcome(note.person_id, besides=note.id) != "wallet_empty":
                body = f"{body} — {WALLET_EMPTY_BODY}"
        if not body:
            return
        try:
            await self._push.send(
                notification=Notification(
                    person_id=note.person_id, title="Ava", body=body, data={"reminder_id": note.id}
                )
            )
        except Exception:
            log.exception("pushing delivered note %s failed", note.id)
