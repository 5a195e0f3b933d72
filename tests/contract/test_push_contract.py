"""One contract for every `Push`: the default `LocalPush` and `FcmPush` (firebase-admin's
messaging, with its network `send` replaced by a recorder). A notification reaches the
person's devices (their FCM topic) with the first line as its body, and a push that
fails never raises into delivery."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from firebase_admin import exceptions, messaging

from reminders import LocalPush, Notification, Push
from reminders.fcm import FcmPush, topic_for


@dataclass
class FakeMessaging:
    """Stands where `messaging.send` calls Google: keeps what would have been sent."""

    sent: list[messaging.Message] = field(default_factory=list)
    failing: bool = False

    def send(self, message: messaging.Message, app: Any = None) -> str:
        if self.failing:
            raise exceptions.UnavailableError("FCM is down", cause=None, http_response=None)
        self.sent.append(message)
        return f"projects/p/messages/{len(self.sent)}"


Outbox = Callable[[str], list[tuple[str, str, dict[str, str]]]]


def local() -> tuple[Push, Outbox, Callable[[], None]]:
    push = LocalPush()

    def outbox(person_id: str) -> list[tuple[str, str, dict[str, str]]]:
        return [(n.title, n.body, n.data) for n in push.sent_to(person_id)]

    return push, outbox, lambda: None


def fcm() -> tuple[Push, Outbox, Callable[[], None]]:
    fake = FakeMessaging()
    push = FcmPush(credentials_path=None, app=object(), send=fake.send)

    def outbox(person_id: str) -> list[tuple[str, str, dict[str, str]]]:
        return [
            (m.notification.title, m.notification.body, dict(m.data))
            for m in fake.sent
            if m.topic == topic_for(person_id)
        ]

    def fail() -> None:
        fake.failing = True

    return push, outbox, fail


@pytest.fixture(params=["local", "fcm"])
def push(request: pytest.FixtureRequest) -> tuple[Push, Outbox, Callable[[], None]]:
    return {"local": local, "fcm": fcm}[request.param]()


async def test_a_notification_reaches_only_its_person(push: tuple[Push, Outbox, Callable[[], None]]) -> None:
    sender, outbox, _ = push
    note = Notification("usr_budi", "Ava", "Hey Budi, it's time to stretch!", {"reminder_id": "pstr_1"})
    await sender.send(notification=note)
    assert outbox("usr_budi") == [("Ava", "Hey Budi, it's time to stretch!", {"reminder_id": "pstr_1"})]
    assert outbox("usr_sari") == []


async def test_a_failing_push_never_raises(push: tuple[Push, Outbox, Callable[[], None]]) -> None:
    sender, _, fail = push
    fail()
    await sender.send(notification=Notification("usr_budi", "Ava", "Time!"))
