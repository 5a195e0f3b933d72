"""An in-process Cloud Tasks: the API surface `CloudTasksQueue` uses (`create_task`,
`delete_task`), with the service's own rules, and a dispatcher that calls each task's
URL at its schedule time with an OIDC token, as Cloud Tasks does.

Rules kept from the real service: task names are unique, and a name stays taken for a
while after its task was deleted or ran (`AlreadyExists`); deleting a missing task is
`NotFound`; a schedule time more than 30 days out is `InvalidArgument`; a non-2xx
answer is retried later, up to a bound. Tokens come from `LocalIdTokens`, the offline
twin of Google's ID tokens, so the app's callback check runs for real.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx
from google.api_core import exceptions as api_exceptions
from google.cloud import tasks_v2

from reminders import LocalIdTokens

_HORIZON = timedelta(days=30)


@dataclass
class Attempt:
    task: str
    status: int


@dataclass
class FakeCloudTasks:
    client: httpx.AsyncClient
    tokens: LocalIdTokens
    queue_path: str
    retry_s: float = 0.2
    attempts_max: int = 5
    tasks: dict[str, tasks_v2.Task] = field(default_factory=dict)
    retired: set[str] = field(default_factory=set)  # deleted or ran: names not reusable yet
    attempts: list[Attempt] = field(default_factory=list)
    unavailable: bool = False  # the service answers 503 to every call
    _due: dict[str, datetime] = field(default_factory=dict)

    async def create_task(self, request: tasks_v2.CreateTaskRequest, *, timeout: float) -> tasks_v2.Task:  # noqa: ASYNC109
        task = request.task
        if self.unavailable:
            raise api_exceptions.ServiceUnavailable("try again later")  # type: ignore[no-untyped-call]
        if request.parent != self.queue_path or not task.name.startswith(self.queue_path + "/tasks/"):
            raise api_exceptions.InvalidArgument("task name is not in this queue")  # type: ignore[no-untyped-call]
        if task.name in self.tasks or task.name in self.retired:
            raise api_exceptions.AlreadyExists("task exists")  # type: ignore[no-untyped-call]
        due = task.schedule_time.astimezone(UTC)  # proto-plus reads a Timestamp as an aware datetime
        if due - datetime.now(UTC) > _HORIZON:
            raise api_exceptions.InvalidArgument("schedule time is more than 30 days ahead")  # type: ignore[no-untyped-call]
        if not task.http_request.oidc_token.service_account_email:
            raise api_exceptions.InvalidArgument("an HTTP target needs a token")  # type: ignore[no-untyped-call]
        self.tasks[task.name] = task
        self._due[task.name] = due
        return task

    async def delete_task(self, request: tasks_v2.DeleteTaskRequest, *, timeout: float) -> None:  # noqa: ASYNC109
        if request.name not in self.tasks:
            raise api_exceptions.NotFound("no such task")  # type: ignore[no-untyped-call]
        del self.tasks[request.name]
        self._due.pop(request.name, None)
        self.retired.add(request.name)

    async def run(self) -> None:
        """Dispatch due tasks until cancelled."""
        while True:
            now = datetime.now(UTC)
            for name in [n for n, due in self._due.items() if due <= now]:
                await self._dispatch(name)
            await asyncio.sleep(0.01)

    async def _dispatch(self, name: str) -> None:
        task = self.tasks[name]
        target = task.http_request
        token = self.tokens.issue(email=target.oidc_token.service_account_email, audience=target.oidc_token.audience)
        response = await self.client.post(
            target.url, content=target.body, headers={**target.headers, "Authorization": f"Bearer {token}"}
        )
        self.attempts.append(Attempt(name, response.status_code))
        tries = sum(1 for a in self.attempts if a.task == name)
        if response.is_success or tries >= self.attempts_max:
            del self.tasks[name]
            del self._due[name]
            self.retired.add(name)
        else:
            self._due[name] = datetime.now(UTC) + timedelta(seconds=self.retry_s)
