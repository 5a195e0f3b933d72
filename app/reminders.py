"""Building the reminders domain as this process runs it: the queue (embedded, or Cloud
Tasks), the push (local, or FCM), the callback gate, and delivery wired to the chat's
wake runner.

Built before the turns (Ava's wake tools need `Reminders`), started after them
(delivery runs turns), stopped before the pools close. The Google and Firebase SDKs are
imported only when configured.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from app.keys import callback_secret
from chat import CallElsewhere, LiveCall, People, Turns, WakeRunner
from database import Listener
from reminders import (
    CallbackGate,
    CallbackSigner,
    Delivery,
    DeliveryLimits,
    EmbeddedQueue,
    IdTokenVerifier,
    LocalPush,
    Notes,
    Push,
    Queue,
    Reminders,
)
from settings import Settings


@dataclass
class ReminderParts:
    """The reminders domain as this process runs it: built before the turns (Ava's tools
    need `reminders`), started after them (delivery runs turns), closed before the pool."""

    notes: Notes
    reminders: Reminders
    queue: Queue
    push: Push
    gate: CallbackGate
    limits: DeliveryLimits
    adapters: dict[str, str]
    wakes: WakeRunner | None = None
    delivery: Delivery | None = None
    task: asyncio.Task[None] | None = None

    async def close(self, *, timeout_s: float = 30.0) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.task = None
        if isinstance(self.queue, EmbeddedQueue):
            await self.queue.drain(timeout_s=timeout_s)


def build_reminders(
    settings: Settings, *, pool: asyncpg.Pool, listener: Listener, clock: Callable[[], datetime] | None = None
) -> ReminderParts:
    """Choose the queue, push and callback verifier for wake notes (embedded by default)."""
    notes = Notes(pool)
    queue: Queue
    id_tokens: IdTokenVerifier | None = None
    audience = (settings.public_base_url or "").rstrip("/")
    if settings.cloud_tasks_queue:
        # Settings refuses a queue without these two; the checks only tell mypy so.
        assert settings.public_base_url is not None
        assert settings.cloud_tasks_service_account is not None
        from google.cloud import tasks_v2

        from reminders.cloudtasks import CloudTasksQueue
        from reminders.oidc import GoogleIdTokens

        queue = CloudTasksQueue(
            notes=notes,
            api=tasks_v2.CloudTasksAsyncClient(),
            queue_path=settings.cloud_tasks_queue,
            target_base_url=settings.public_base_url,
            service_account=settings.cloud_tasks_service_account,
            audience=audience,
        )
        id_tokens = GoogleIdTokens()
    else:
        queue = EmbeddedQueue(notes=notes, listener=listener, concurrent_max=settings.reminders_concurrent_max)
    push: Push
    if settings.fcm_credentials is not None:
        from reminders.fcm import FcmPush

        push = FcmPush(credentials_path=str(settings.fcm_credentials))
    else:
        push = LocalPush()
    gate = CallbackGate(
        signer=CallbackSigner(callback_secret(settings)),
        id_tokens=id_tokens,
        audience=audience,
        service_account=settings.cloud_tasks_service_account,
    )
    return ReminderParts(
        notes=notes,
        reminders=Reminders(notes=notes, queue=queue, clock=clock),
        queue=queue,
        push=push,
        gate=gate,
        limits=DeliveryLimits(lease_s=settings.reminders_lease_s, attempts_max=settings.reminders_attempts_max),
        adapters={"reminder_queue": type(queue).__name__, "push": type(push).__name__},
    )


def start_reminders(
    parts: ReminderParts,
    *,
    turns: Turns,
    people: People,
    pool: asyncpg.Pool,
    live_call: LiveCall | None = None,
    call_elsewhere: CallElsewhere | None = None,
) -> None:
    """Wire delivery to the chat's wake runner and start the queue's background work in this process."""
    parts.wakes = WakeRunner(
        turns=turns,
        people=people,
        notes=parts.notes,
        push=parts.push,
        pool=pool,
        live_call=live_call,
        call_elsewhere=call_elsewhere,
    )
    parts.delivery = Delivery(notes=parts.notes, wake=parts.wakes.wake, tell=parts.wakes.tell, limits=parts.limits)
    parts.task = asyncio.create_task(parts.queue.serve(delivery=parts.delivery), name="reminders")
