"""The reminders domain's errors. Each carries a stable `type` (the same vocabulary as
every other domain's errors): the wake tools turn the message into words Ava can explain,
and the HTTP edge's table turns the type into a status. Nothing here knows about HTTP."""

from __future__ import annotations

from typing import ClassVar


class ReminderError(Exception):
    """Base of every error the reminders domain raises on purpose; `str()` is safe to show."""

    type: ClassVar[str] = "reminder_error"


class TimeInvalid(ReminderError):
    """The local time is not `YYYY-MM-DDTHH:MM[:SS]`, or does not exist in the zone."""

    type = "time_invalid"


class ZoneInvalid(ReminderError):
    type = "time_zone_invalid"


class TimeInPast(ReminderError):
    type = "time_in_past"


class TimeTooFar(ReminderError):
    type = "time_too_far"


class TooManyPending(ReminderError):
    type = "too_many_pending"


class NoteInvalid(ReminderError):
    """The note is blank or longer than a note may be."""

    type = "note_invalid"


class NoteNotFound(ReminderError):
    """No such note for this person (another person's note is reported the same way)."""

    type = "reminder_not_found"


class NoteNotCancellable(ReminderError):
    """The note already fired, is firing right now, or was cancelled before."""

    type = "reminder_not_pending"


class QueueUnavailable(ReminderError):
    """The queue did not take the note; nothing was kept."""

    type = "reminder_queue_unavailable"


class CallbackRefused(ReminderError):
    """A delivery callback without a valid scheduler signature."""

    type = "callback_unauthorized"
