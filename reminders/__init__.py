"""Prospective memory (docs/agents.md#wake-notes-postera): Ava's notes to her future self, the queue that wakes
them, and their delivery.

Reminders imports no other domain. Running Ava on a note is the chat's job: delivery
declares the `Wake` and `Tell` protocols and the composition root passes in the chat's
wake runner. Other domains import only what is listed here; the Cloud Tasks, Google
ID token and FCM adapters (`reminders.cloudtasks`, `reminders.oidc`, `reminders.fcm`) are
imported by the composition root alone, so their SDKs load only when configured.
"""

from reminders.callbacks import SIGNATURE_HEADER, CallbackGate, CallbackSigner, IdTokenVerifier, LocalIdTokens
from reminders.delivery import Delivered, Delivery, DeliveryLimits, Tell, Wake, Woken
from reminders.embedded import EmbeddedQueue
from reminders.errors import (
    CallbackRefused,
    NoteInvalid,
    NoteNotCancellable,
    NoteNotFound,
    QueueUnavailable,
    ReminderError,
    TimeInPast,
    TimeInvalid,
    TimeTooFar,
    TooManyPending,
    ZoneInvalid,
)
from reminders.notes import (
    AHEAD_MAX,
    NOTE_CHARS_MAX,
    PENDING_MAX,
    Note,
    Outcome,
    Status,
    first_line,
    local_text,
    parse_local,
)
from reminders.push import LocalPush, Notification, Push
from reminders.queue import Queue
from reminders.service import Reminders
from reminders.store import Notes

__all__ = [
    "AHEAD_MAX",
    "NOTE_CHARS_MAX",
    "PENDING_MAX",
    "SIGNATURE_HEADER",
    "CallbackGate",
    "CallbackRefused",
    "CallbackSigner",
    "Delivered",
    "Delivery",
    "DeliveryLimits",
    "EmbeddedQueue",
    "IdTokenVerifier",
    "LocalIdTokens",
    "LocalPush",
    "Note",
    "NoteInvalid",
    "NoteNotCancellable",
    "NoteNotFound",
    "Notes",
    "Notification",
    "Outcome",
    "Push",
    "Queue",
    "QueueUnavailable",
    "ReminderError",
    "Reminders",
    "Status",
    "Tell",
    "TimeInPast",
    "TimeInvalid",
    "TimeTooFar",
    "TooManyPending",
    "Wake",
    "Woken",
    "ZoneInvalid",
    "first_line",
    "local_text",
    "parse_local",
]
