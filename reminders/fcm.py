"""`FcmPush`: wake notes pushed with Firebase Cloud Messaging (the only module that
imports firebase-admin's messaging).

Each person's devices subscribe to the topic `person_<id>` (the apps do this after
sign-in), so the server keeps no device tokens. The SDK is synchronous; sends run in a
worker thread under a timeout, and failures are logged, never raised: a missed push
must not undo a delivered note.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import firebase_admin
from firebase_admin import credentials, exceptions, messaging

from reminders.push import Notification

log = logging.getLogger(__name__)


def topic_for(person_id: str) -> str:
    return "person_" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in person_id)


# firebase-admin's `messaging.send(message, app=...)`; a test passes a stand-in.
Send = Callable[..., str]


class FcmPush:
    def __init__(
        self, *, credentials_path: str | None, timeout_s: float = 10.0, app: Any = None, send: Send | None = None
    ) -> None:
        if app is None:
            cred = credentials.Certificate(credentials_path) if credentials_path else None
            app = firebase_admin.initialize_app(cred, name="avagenc-push")
        self._app = app
        self._timeout_s = timeout_s
        self._send = send or messaging.send

    async def send(self, *, notification: Notification) -> None:
        message = messaging.Message(
            topic=topic_for(notification.person_id),
            notification=messaging.Notification(title=notification.title, body=notification.body),
            data=dict(notification.data),
        )
        try:
            async with asyncio.timeout(self._timeout_s):
                await asyncio.to_thread(self._send, message, app=self._app)
        except (TimeoutError, exceptions.FirebaseError, ValueError) as exc:
            log.warning("push to %s failed: %s", notification.person_id, type(exc).__name__)
