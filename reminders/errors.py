"""The reminders domain's errors. Each carries a stable `code`: the wake tools turn it
into words Ava can explain, and the HTTP edge into a problem `type`. Nothing here knows
about HTTP."""

from __future__ import annotations


class ReminderError(Exception):
    """Base of every error the reminders domain raises on purpose; `str()` is safe to show."""

    code = "reminder_error"


class TimeInvalid(ReminderError):
    """The local time is not `YYYY-MM-DDTHH:MM[:SS]`, or does not exist in the zone."""

    code = "time_invalid"


class ZoneInvalid(ReminderError):
    code = "time_zone_invalid"


class TimeInPast(ReminderError):
    code = "time_in_past"


class TimeTooFar(ReminderError):
    code = "time_too_far"


class TooManyPending(ReminderError):
    code = "too_many_pending"


class NoteInvalid(ReminderError):
    """The note is blank or longer than a note may be."""

    code = "note_invalid"


class NoteNotFound(ReminderError):
    """No such note for this person (another person's note is reported the same way)."""

    code = "reminder_not_found"


class NoteNotCancellable(ReminderError):
    """The note already fired, is firing right now, or was cancelled before."""

    code = "reminder_not_pending"


class QueueUnavailable(ReminderError):
    """The queue did not take the note; nothing was kept."""

    code = "reminder_queue_unavailable"


class CallbackRefused(ReminderError):
    """A delivery callback without a valid scheduler signature."""

    code = "callback_unauthorized"
