"""`CloudTasksQueue`: one Google Cloud Task per note (the only module that imports the
Cloud Tasks SDK).

The task is named by the note id, so enqueueing twice is one task (`AlreadyExists` is
success) and cancelling a task that already ran or never was is fine (`NotFound` is
success). It POSTs to `/v1/reminders/{id}/deliver` at `due_at` with an OIDC token for
our service account; delivery checks the token and is idempotent, so Cloud Tasks' own
retries are safe. Cloud Tasks holds a task at most 30 days ahead: a note due later stays
in the table unqueued, and `serve()` sweeps such notes into the queue as they come
within range (and retries any enqueue that failed).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from google.api_core import exceptions as api_exceptions
from google.cloud import tasks_v2

from reminders.delivery import Delivery
from reminders.errors import QueueUnavailable
from reminders.notes import Note
from reminders.store import Notes

log = logging.getLogger(__name__)

# Cloud Tasks refuses schedule times more than 30 days ahead; keep an hour's margin.
HORIZON = timedelta(days=30) - timedelta(hours=1)
_SWEEP_BATCH = 500


class TasksApi(Protocol):
    """The part of `tasks_v2.CloudTasksAsyncClient` this adapter uses."""

    # `timeout` is the SDK's own per-call deadline (seconds), named as the SDK names it.
    async def create_task(self, request: tasks_v2.CreateTaskRequest, *, timeout: float) -> Any: ...  # noqa: ASYNC109

    async def delete_task(self, request: tasks_v2.DeleteTaskRequest, *, timeout: float) -> None: ...  # noqa: ASYNC109


class CloudTasksQueue:
    def __init__(
        self,
        *,
        notes: Notes,
        api: TasksApi,
        queue_path: str,
        target_base_url: str,
        service_account: str,
        audience: str,
        timeout_s: float = 10.0,
        sweep_s: float = 3600.0,
    ) -> None:
        self._notes = notes
        self._api = api
        self._queue_path = queue_path
        self._target_base_url = target_base_url.rstrip("/")
        self._service_account = service_account
        self._audience = audience
        self._timeout_s = timeout_s
        self._sweep_s = sweep_s

    def task_name(self, note_id: str) -> str:
        return f"{self._queue_path}/tasks/{note_id}"

    def _task(self, note: Note) -> tasks_v2.Task:
        return tasks_v2.Task(
            name=self.task_name(note.id),
            schedule_time=note.due_at.astimezone(UTC),  # proto-plus turns it into a Timestamp
            http_request=tasks_v2.HttpRequest(
                url=f"{self._target_base_url}/v1/reminders/{note.id}/deliver",
                http_method=tasks_v2.HttpMethod.POST,
                headers={"Content-Type": "application/json"},
                body=b"{}",
                oidc_token=tasks_v2.OidcToken(service_account_email=self._service_account, audience=self._audience),
            ),
        )

    async def enqueue(self, *, note: Note) -> None:
        if note.due_at - datetime.now(UTC) > HORIZON:
            return  # too far for Cloud Tasks today; the sweep hands it over later
        await self._create(note)

    async def _create(self, note: Note) -> None:
        request = tasks_v2.CreateTaskRequest(parent=self._queue_path, task=self._task(note))
        try:
            await self._api.create_task(request, timeout=self._timeout_s)
        except api_exceptions.AlreadyExists:
            pass  # an earlier attempt (or another process) already made it
        except (api_exceptions.GoogleAPIError, TimeoutError, OSError) as exc:
            raise QueueUnavailable("The reminder queue is not reachable right now; try again shortly.") from exc
        await self._notes.mark_queued(note.id)

    async def cancel(self, *, note: Note) -> None:
        request = tasks_v2.DeleteTaskRequest(name=self.task_name(note.id))
        try:
            await self._api.delete_task(request, timeout=self._timeout_s)
        except api_exceptions.NotFound:
            pass
        except (api_exceptions.GoogleAPIError, TimeoutError, OSError) as exc:
            # The note is cancelled in the table; if the task fires anyway, delivery no-ops.
            log.warning("cancelling task for %s failed: %s", note.id, type(exc).__name__)

    async def sweep(self) -> int:
        """Hand over every unqueued pending note now within range; returns how many."""
        handed = 0
        for note in await self._notes.unqueued(within_s=HORIZON.total_seconds(), limit=_SWEEP_BATCH):
            try:
                await self._create(note)
                handed += 1
            except QueueUnavailable:
                log.warning("sweep could not enqueue %s; next sweep retries", note.id)
        return handed

    async def serve(self, *, delivery: Delivery) -> None:
        del delivery  # Cloud Tasks calls the delivery endpoint itself
        while True:
            try:
                await self.sweep()
            except Exception:
                log.exception("reminder sweep failed")
            await asyncio.sleep(self._sweep_s)
