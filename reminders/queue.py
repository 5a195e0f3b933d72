"""The `Queue` port: how a written note gets woken at its due time (docs/agents.md#wake-notes-postera).

The note's row is always the truth; a queue only makes sure somebody calls delivery for
it at `due_at`. Two implementations: `EmbeddedQueue` (the default: every server process
dispatches due rows itself) and `CloudTasksQueue` (one Cloud Task per note, calling the
signed delivery endpoint). Both are idempotent: enqueueing or cancelling twice is fine,
and a note that fires after it was cancelled is a no-op at delivery.
"""

from __future__ import annotations

from typing import Protocol

from reminders.delivery import Delivery
from reminders.notes import Note


class Queue(Protocol):
    async def enqueue(self, *, note: Note) -> None:
        """Arrange for `note` to be delivered at its due time; raises `QueueUnavailable`."""
        ...

    async def cancel(self, *, note: Note) -> None:
        """Best effort: the note is already cancelled in the store, which delivery checks."""
        ...

    async def serve(self, *, delivery: Delivery) -> None:
        """The queue's background work in this process until cancelled: the embedded queue
        delivers due notes through `delivery`; Cloud Tasks sweeps far-off notes into range."""
        ...
