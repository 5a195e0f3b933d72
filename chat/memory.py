"""In-memory twins of the chat's storage ports (`chat.ports`): real, stateful
implementations for one process, with no database.

They keep what the PostgreSQL adapters keep (messages with their `seq`, runs with usage,
calls and cost, people by sign-in name, the events each change announces) and behave the
same way wherever the contract suites in `tests/contract/` look. What they cannot give is
what a database gives many processes: the thread lock here is an `asyncio.Lock`, so it
serialises turns of one process only. Use them to test a turn without HTTP or PostgreSQL.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from chat.errors import ThreadBusy
from chat.people import Person, language_learned, normalise_name
from chat.recent import RecentPage
from chat.runs import Run, RunGone, UnchargedCall
from chat.threads import Message

# The same bound as the PostgreSQL adapter's page queries (`before or 2**62`).
_SEQ_MAX = 2**62
# Authors whose messages no run writes: the person, and wake notes.
_NOT_RUNS = ("human", "postera")
_TEXT_CHARS_MAX = 20_000


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class PublishedEvent:
    person_id: str
    type: str
    data: dict[str, Any]


@dataclass
class MemoryEvents:
    """Every event published, in order (what the `events` table holds in PostgreSQL)."""

    published: list[PublishedEvent] = field(default_factory=list)

    async def publish(self, person_id: str, type_: str, data: dict[str, Any]) -> None:
        self.published.append(PublishedEvent(person_id, type_, data))

    def of(self, person_id: str) -> list[str]:
        return [e.type for e in self.published if e.person_id == person_id]


class MemoryThreads:
    """Threads in a dict; turns of one person queue on an `asyncio.Lock` (FIFO), and at
    most `turns_max` turns run at once, as the lock pool caps them in PostgreSQL."""

    def __init__(self, events: MemoryEvents | None = None, *, turns_max: int = 32) -> None:
        self._events = events or MemoryEvents()
        self._messages: dict[str, list[Message]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._turns = asyncio.Semaphore(turns_max)
        self._turning: dict[str, int] = {}

    def alone(self, person_id: str) -> bool:
        return self._turning.get(person_id, 0) == 1

    async def append(
        self,
        person_id: str,
        *,
        author: str,
        text: str,
        channel: str,
        run_id: str | None = None,
        emotions: Sequence[str] = (),
        client_id: str | None = None,
    ) -> Message:
        thread = self._messages.setdefault(person_id, [])
        # The checks the messages table makes: only runs write agents' messages, and one
        # client_id names one message of a person.
        assert (author in _NOT_RUNS) == (run_id is None), f"a {author} message with run {run_id}"
        assert 1 <= len(text) <= _TEXT_CHARS_MAX, "a message's text is 1 to 20,000 characters"
        assert client_id is None or all(m.client_id != client_id for m in thread), f"client_id {client_id} reused"
        message = Message(
            id=f"msg_{secrets.token_hex(10)}",
            seq=len(thread) + 1,
            author=author,
            text=text,
            channel=channel,
            run_id=run_id,
            created_at=_now(),
            emotions=tuple(emotions),
            client_id=client_id,
        )
        thread.append(message)
        await self._events.publish(person_id, "message", message.as_json())
        return message

    async def page(self, person_id: str, *, before: int | None, after: int | None, limit: int) -> list[Message]:
        thread = self._messages.get(person_id, [])
        if after is not None:
            return [m for m in thread if m.seq > after][:limit]
        older = [m for m in thread if m.seq < (before or _SEQ_MAX)]
        return older[-limit:] if limit > 0 else []

    async def recent(self, person_id: str, *, limit: int) -> RecentPage[Message]:
        """Read whole every time: memory has nothing slow to save."""
        return RecentPage(await self.page(person_id, before=None, after=None, limit=limit), limit)

    async def by_ids(self, person_id: str, ids: Sequence[str]) -> list[Message]:
        wanted = set(ids)
        return [m for m in self._messages.get(person_id, []) if m.id in wanted]

    async def by_client_id(self, person_id: str, client_id: str) -> Message | None:
        return next((m for m in self._messages.get(person_id, []) if m.client_id == client_id), None)

    async def of_turn(self, person_id: str, origin_id: str, run_ids: Sequence[str]) -> list[Message]:
        runs = set(run_ids)
        return [m for m in self._messages.get(person_id, []) if m.id == origin_id or m.run_id in runs]

    async def commit_lazily(self) -> None:
        """Memory has no disk to wait for."""

    @asynccontextmanager
    async def turn(self, person_id: str, *, wait_s: float) -> AsyncIterator[None]:
        lock = self._locks.setdefault(person_id, asyncio.Lock())
        self._turning[person_id] = self._turning.get(person_id, 0) + 1
        try:
            try:
                async with asyncio.timeout(wait_s):
                    await self._turns.acquire()
            except TimeoutError as exc:
                raise ThreadBusy("The server is answering many people at once; try again shortly.") from exc
            try:
                try:
                    async with asyncio.timeout(wait_s):
                        await lock.acquire()
                except TimeoutError as exc:
                    raise ThreadBusy("Another request is still being answered; try again shortly.") from exc
                try:
                    yield
                finally:
                    lock.release()
            finally:
                self._turns.release()
        finally:
            self._turning[person_id] -= 1
            if not self._turning[person_id]:
                del self._turning[person_id]


@dataclass(slots=True)
class _Call:
    person_id: str
    model: str
    usage: dict[str, int]
    at: datetime
    cost_micros: int | None = None


class MemoryRuns:
    """Runs, their model calls (charged or not) and tool calls, in dicts."""

    def __init__(self, events: MemoryEvents | None = None) -> None:
        self._events = events or MemoryEvents()
        self._runs: dict[str, Run] = {}
        self._owners: dict[str, str] = {}
        self._calls: dict[tuple[str, int], _Call] = {}
        self.tool_events: list[tuple[str, int, str, dict[str, Any], dict[str, Any]]] = []

    async def start(
        self,
        person_id: str,
        *,
        agent: str,
        trigger: str,
        parent_run_id: str | None,
        trigger_message_id: str,
        origin_message_id: str,
        channel: str,
    ) -> Run:
        run = Run(
            id=f"run_{secrets.token_hex(10)}",
            agent=agent,
            trigger=trigger,
            parent_run_id=parent_run_id,
            trigger_message_id=trigger_message_id,
            origin_message_id=origin_message_id,
            channel=channel,
            status="running",
            error_code=None,
            error_detail=None,
            model=None,
            model_calls=0,
            tool_calls=0,
            usage={},
            cost_micros=0,
            started_at=_now(),
            finished_at=None,
        )
        self._runs[run.id] = run
        self._owners[run.id] = person_id
        await self._events.publish(person_id, "run.started", run.as_json())
        return run

    async def record_call(
        self, run_id: str, *, index: int, model: str, usage: dict[str, int], at: datetime | None = None
    ) -> datetime | None:
        run = self._runs.get(run_id)
        if run is None:
            raise RunGone(f"run {run_id} is not in the store")
        if (run_id, index) in self._calls:
            return None
        at = at or _now()
        self._calls[(run_id, index)] = _Call(self._owners[run_id], model, dict(usage), at)
        summed = dict(run.usage)
        for key, value in usage.items():
            summed[key] = summed.get(key, 0) + int(value)
        self._runs[run_id] = replace(run, model_calls=run.model_calls + 1, model=model, usage=summed)
        return at

    async def record_cost(self, run_id: str, *, index: int, cost_micros: int) -> None:
        call = self._calls.get((run_id, index))
        if call is None or call.cost_micros is not None:
            return
        call.cost_micros = cost_micros
        run = self._runs[run_id]
        self._runs[run_id] = replace(run, cost_micros=run.cost_micros + cost_micros)

    async def uncharged_calls(
        self, *, limit: int = 1000, returned_before: datetime | None = None
    ) -> list[UnchargedCall]:
        waiting = sorted(
            (
                (key, call)
                for key, call in self._calls.items()
                if call.cost_micros is None and (returned_before is None or call.at < returned_before)
            ),
            key=lambda kc: kc[1].at,
        )
        return [
            UnchargedCall(
                run_id,
                index,
                call.person_id,
                self._runs[run_id].agent,
                self._runs[run_id].trigger,
                call.model,
                dict(call.usage),
                call.at,
            )
            for (run_id, index), call in waiting[:limit]
        ]

    async def record_tool(self, run_id: str, *, name: str, args: dict[str, Any], result: dict[str, Any]) -> None:
        run = self._runs.get(run_id)
        if run is None:
            return  # as in PostgreSQL: a tool call of an unknown run changes nothing
        self._runs[run_id] = replace(run, tool_calls=run.tool_calls + 1)
        self.tool_events.append((run_id, run.tool_calls + 1, name, args, result))

    async def finish(
        self, run_id: str, *, status: str, error_code: str | None = None, error_detail: str | None = None
    ) -> Run:
        run = self._runs.get(run_id)
        assert run is not None, f"run {run_id} does not exist"
        if run.status != "running":
            return run  # finished already (the sweep failed it): the first end stands
        finished = replace(run, status=status, error_code=error_code, error_detail=error_detail, finished_at=_now())
        self._runs[run_id] = finished
        await self._events.publish(self._owners[run_id], "run.finished", finished.as_json())
        return finished

    async def get(self, person_id: str, run_id: str) -> Run | None:
        return self._runs.get(run_id) if self._owners.get(run_id) == person_id else None

    async def of_origin(self, person_id: str, origin_message_id: str) -> list[Run]:
        return [
            run
            for run_id, run in self._runs.items()
            if self._owners[run_id] == person_id and run.origin_message_id == origin_message_id
        ]

    async def abandon_held(self, person_id: str) -> list[Run]:
        left = [r for i, r in self._runs.items() if self._owners[i] == person_id and r.status == "running"]
        return [
            await self.finish(
                r.id,
                status="failed",
                error_code="abandoned",
                error_detail="The server stopped before this run finished.",
            )
            for r in left
        ]


class MemoryPeople:
    """People by id and by normalised sign-in name."""

    def __init__(self, *, default_time_zone: str) -> None:
        self._default_time_zone = default_time_zone
        self._people: dict[str, Person] = {}
        self._local: dict[str, str] = {}

    async def sign_in_local(self, name: str) -> tuple[Person, bool]:
        clean = " ".join(name.split())
        key = normalise_name(clean)
        if key in self._local:
            return self._people[self._local[key]], False
        person = Person(f"usr_{secrets.token_hex(8)}", clean, self._default_time_zone, _now())
        self._people[person.id] = person
        self._local[key] = person.id
        return person, True

    async def find_local(self, name: str) -> Person | None:
        person_id = self._local.get(normalise_name(name))
        return self._people[person_id] if person_id else None

    async def get(self, person_id: str) -> Person | None:
        return self._people.get(person_id)

    async def remember_time_zone(self, person_id: str, time_zone: str) -> None:
        if person_id in self._people:
            self._people[person_id] = replace(self._people[person_id], time_zone=time_zone)

    async def learn_language(self, person: Person, text: str) -> None:
        language = language_learned(text, person.language)
        if language is not None and person.id in self._people:
            self._people[person.id] = replace(self._people[person.id], language=language)
