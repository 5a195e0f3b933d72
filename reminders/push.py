"""The `Push` port: a notification to the person's devices when a note fires (docs/agents.md#wake-notes-postera).

`LocalPush` is the default and sends nothing off the machine: it keeps the last few
notifications per person in memory, so a single-machine deployment (and a test) can see
what would have been pushed. `FcmPush` (reminders/fcm.py) sends them with Firebase.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Notification:
    person_id: str
    title: str
    body: str  # the first line of what Ava said: it must stand alone in a preview
    data: dict[str, str] = field(default_factory=dict)


class Push(Protocol):
    async def send(self, *, notification: Notification) -> None:
        """Deliver or drop; never raises for a person who has no device."""
        ...


class LocalPush:
    """Remembers the last `kept_max` notifications per person; nothing leaves the process."""

    def __init__(self, *, kept_max: int = 50) -> None:
        self._kept: defaultdict[str, deque[Notification]] = defaultdict(lambda: deque(maxlen=kept_max))

    async def send(self, *, notification: Notification) -> None:
        self._kept[notification.person_id].append(notification)

    def sent_to(self, person_id: str) -> list[Notification]:
        return list(self._kept.get(person_id, ()))
