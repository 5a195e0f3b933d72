"""One contract for every `Push`: the default `LocalPush` and `FcmPush` (firebase-admin's
messaging, with its network `send` replaced by a recorder). A notification reaches the
person's devices (their FCM topic) with the first line as its body. When FCM fails or
hangs, `FcmPush` logs and drops the notification; and whatever a push raises, the note
it announces stays delivered."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from firebase_admin import exceptions, messaging

from reminders import Delivery, LocalPush, Note, Notes, Notification, Push, Woken
from reminders.fcm import FcmPush, topic_for


@dataclass
class FakeMessaging:
    """Stands where `messaging.send` calls Google: keeps what would have been sent, or
    fails the way the SDK does."""

    sent: list[messaging.Message] = field(default_factory=list)
    failure: Exception | None = None  # raised instead of sending
    stalled: threading.Event | None = None  # when given, a send waits for it and sends nothing

    def send(self, message: messaging.Message, app: Any = None) -> str:
        if self.stalled is not None:
            self.stalled.wait(timeout=5)  # bounded: a forgotten release must not hang the run
            return ""
        if self.failure is not None:
            raise self.failure
        self.sent.append(message)
        return f"projects/p/messages/{len(self.sent)}"


Outbox = Callable[[str], list[tuple[str, str, dict[str, str]]]]


def local() -> tuple[Push, Outbox]:
    push = LocalPush()

    def outbox(person_id: str) -> list[tuple[str, str, dict[str, str]]]:
        return [(n.title, n.body, n.data) for n in push.sent_to(person_id)]

    return push, outbox


def fcm_outbox(fake: FakeMessaging) -> Outbox:
    def outbox(person_id: str) -> list[tuple[str, str, dict[str, str]]]:
        return [
            (m.notification.title, m.notification.body, dict(m.data))
            for m in fake.sent
            if m.topic == topic_for(person_id)
        ]

    return outbox


def fcm() -> tuple[Push, Outbox]:
    fake = FakeMessaging()
    return FcmPush(credentials_path=None, app=object(), send=fake.send), fcm_outbox(fake)


@pytest.fixture(params=["local", "fcm"])
def push(request: pytest.FixtureRequest) -> tuple[Push, Outbox]:
    return {"local": local, "fcm": fcm}[request.param]()


async def test_a_notification_reaches_only_its_person(push: tuple[Push, Outbox]) -> None:
    sender, outbox = push
    note = Notification("usr_budi", "Ava", "Hey Budi, it's time to stretch!", {"reminder_id": "pstr_1"})
    await sender.send(notification=note)
    assert outbox("usr_budi") == [("Ava", "Hey Budi, it's time to stretch!", {"reminder_id": "pstr_1"})]
    assert outbox("usr_sari") == []


@pytest.mark.parametrize(
    "failure",
    [
        exceptions.UnavailableError("FCM is down", cause=None, http_response=None),
        messaging.UnregisteredError("the topic has no devices", cause=None, http_response=None),
        ValueError("the SDK refused the message before sending it"),
    ],
    ids=lambda failure: type(failure).__name__,
)
async def test_a_failing_fcm_send_is_logged_and_dropped(failure: Exception, caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeMessaging(failure=failure)
    sender, outbox = FcmPush(credentials_path=None, app=object(), send=fake.send), fcm_outbox(fake)
    with caplog.at_level(logging.WARNING, logger="reminders.fcm"):
        await sender.send(notification=Notification("usr_budi", "Ava", "Time!"))
    assert outbox("usr_budi") == []
    assert [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "reminders.fcm"] == [
        (logging.WARNING, f"push to usr_budi failed: {type(failure).__name__}")
    ]
    # The failure leaves nothing behind: once FCM answers again, the next note goes out.
    fake.failure = None
    await sender.send(notification=Notification("usr_budi", "Ava", "Time again!"))
    assert outbox("usr_budi") == [("Ava", "Time again!", {})]


async def test_a_hanging_fcm_send_gives_up_at_its_timeout(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    fake = FakeMessaging(stalled=release)
    sender = FcmPush(credentials_path=None, app=object(), timeout_s=0.05, send=fake.send)
    try:
        with caplog.at_level(logging.WARNING, logger="reminders.fcm"):
            await sender.send(notification=Notification("usr_budi", "Ava", "Time!"))
    finally:
        release.set()  # lets the worker thread end before the loop closes
    assert fcm_outbox(fake)("usr_budi") == []
    assert [r.getMessage() for r in caplog.records if r.name == "reminders.fcm"] == [
        "push to usr_budi failed: TimeoutError"
    ]


class RaisingTell:
    """A `Tell` (live event and push) that breaks its promise: it raises what nobody translated."""

    def __init__(self) -> None:
        self.tried: list[tuple[str, str]] = []

    async def __call__(self, *, note: Note, woken: Woken) -> None:
        self.tried.append((note.person_id, woken.reply))
        raise RuntimeError("the push service broke in a way nobody foresaw")


async def test_a_raising_tell_leaves_the_note_delivered(pool: asyncpg.Pool) -> None:
    woken: list[str] = []

    async def wake(*, note: Note) -> Woken:
        woken.append(note.id)
        return Woken(run_id=f"run_{note.id}", reply="Hey Budi, it's time to stretch!", outcome="ran")

    notes = Notes(pool)
    tell = RaisingTell()
    delivery = Delivery(notes=notes, wake=wake, tell=tell)
    note = await notes.add(
        person_id="usr_budi", text="Stretch.", due_at=datetime.now(UTC), time_zone="UTC", created_by_run_id=None
    )
    assert await delivery.deliver(note.id) == "delivered"
    assert tell.tried == [("usr_budi", "Hey Budi, it's time to stretch!")]
    after = await notes.get(note.id)
    assert after is not None
    assert (after.status, after.run_id, after.attempts) == ("delivered", f"run_{note.id}", 1)
    # Nothing is retried: a second request finds the note done and wakes nobody again.
    assert await delivery.deliver(note.id) == "done_before"
    assert woken == [note.id]
