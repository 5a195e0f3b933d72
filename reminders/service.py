"""`Reminders`: what the tools, the API and "forget me" call. Validates a note against the
limits in docs/data.md#wake-notes, keeps it, and hands it to the queue; nothing is half-written (a note
the queue refuses is taken back)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

from reminders.errors import NoteNotCancellable, NoteNotFound, QueueUnavailable
from reminders.notes import Note, check_due, check_text, parse_local, zone_named
from reminders.queue import Queue
from reminders.store import PAST, UPCOMING, Notes

LIST_MAX = 200
# What a note id can look like; anything else is no note (and never reaches a query).
_NOTE_ID = re.compile(r"^pstr_[A-Za-z0-9_-]{1,43}$")


def _plausible(note_id: str) -> bool:
    return bool(_NOTE_ID.match(note_id))


class Reminders:
    def __init__(self, *, notes: Notes, queue: Queue, clock: Callable[[], datetime] | None = None) -> None:
        self._notes = notes
        self._queue = queue
        # "Now" for "no past times" and for the local time the tools show; a scenario run
        # (avagenc eval) passes its own clock so "in 5 minutes" means the scenario's minutes.
        self._clock = clock or (lambda: datetime.now(UTC))

    def now(self) -> datetime:
        """The aware moment this service takes as now."""
        return self._clock()

    async def schedule(
        self, *, person_id: str, text: str, at_local: str, time_zone: str, created_by_run_id: str | None = None
    ) -> Note:
        """A note due at a local wall-clock time (`YYYY-MM-DDTHH:MM[:SS]`) in `time_zone`."""
        zone = zone_named(time_zone)
        due_at = parse_local(at_local, zone)
        return await self.schedule_at(
            person_id=person_id, text=text, due_at=due_at, time_zone=zone.key, created_by_run_id=created_by_run_id
        )

    async def schedule_at(
        self, *, person_id: str, text: str, due_at: datetime, time_zone: str, created_by_run_id: str | None = None
    ) -> Note:
        clean = check_text(text)
        zone = zone_named(time_zone)
        due = check_due(due_at, now=self.now())
        note = await self._notes.add(
            person_id=person_id, text=clean, due_at=due, time_zone=zone.key, created_by_run_id=created_by_run_id
        )
        try:
            await self._queue.enqueue(note=note)
        except QueueUnavailable:
            await self._notes.remove(note.id)
            raise
        return note

    async def get(self, person_id: str, note_id: str) -> Note:
        note = await self._notes.get_own(person_id, note_id) if _plausible(note_id) else None
        if note is None:
            raise NoteNotFound("There is no such note.")
        return note

    async def lookup(self, note_id: str) -> Note | None:
        """Any person's note by id: only for the scheduler callback."""
        return await self._notes.get(note_id) if _plausible(note_id) else None

    async def find(self, note_id: str) -> Note:
        note = await self.lookup(note_id)
        if note is None:
            raise NoteNotFound("There is no such note.")
        return note

    async def upcoming(self, person_id: str, *, limit: int = 100) -> list[Note]:
        """Pending notes (and any firing right now), soonest first."""
        return await self._notes.of_person(person_id, statuses=UPCOMING, limit=min(limit, LIST_MAX), newest_first=False)

    async def past(self, person_id: str, *, limit: int = 50) -> list[Note]:
        """Delivered, cancelled and failed notes, most recent first."""
        return await self._notes.of_person(person_id, statuses=PAST, limit=min(limit, LIST_MAX), newest_first=True)

    async def cancel(self, person_id: str, note_id: str) -> Note:
        note = await self._notes.cancel(person_id, note_id) if _plausible(note_id) else None
        if note is None:
            existing = await self.get(person_id, note_id)  # NoteNotFound for another's note
            raise NoteNotCancellable(f"That note is {existing.status} and can no longer be cancelled.")
        await self._queue.cancel(note=note)
        return note

    async def cancel_pending(self, person_id: str) -> int:
        """Cancel every pending note of the person ("forget me"); returns how many."""
        cancelled = await self._notes.cancel_all(person_id)
        for note in cancelled:
            await self._queue.cancel(note=note)
        return len(cancelled)
