"""The chat's storage ports: the thread, runs, people and live events, as Protocols.

`Turns` and `Wallet` are written against these, so a turn runs the same on PostgreSQL
(`Threads`, `Runs`, `People`, `PostgresEvents`, the product) as on the in-memory twins
in `chat.memory` (`MemoryThreads`, `MemoryRuns`, `MemoryPeople`, `MemoryEvents`), which
let a turn be tested without a database or HTTP. Each port has one contract suite in
`tests/contract/` that every implementation passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

import asyncpg

from chat.events import publish
from chat.people import Person
from chat.recent import RecentPage
from chat.runs import Run, UnchargedCall
from chat.threads import Message
from ledger import user_account


class ThreadStore(Protocol):
    """Each person's one thread: messages in `seq` order, and the lock a turn holds."""

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
        """Write the next message of the person's thread (and its `message` event)."""
        ...

    async def page(self, person_id: str, *, before: int | None, after: int | None, limit: int) -> list[Message]:
        """Messages in seq order: the newest `limit` before `before`, or the oldest after `after`."""
        ...

    async def recent(self, person_id: str, *, limit: int) -> RecentPage[Message]:
        """The newest `limit` messages in seq order (what a turn's history is chosen from),
        with a memo for what the reader derives from each; an implementation may keep the
        page between turns as long as it hands out exactly what `page` would."""
        ...

    async def by_ids(self, person_id: str, ids: Sequence[str]) -> list[Message]: ...

    async def by_client_id(self, person_id: str, client_id: str) -> Message | None: ...

    async def of_turn(self, person_id: str, origin_id: str, run_ids: Sequence[str]) -> list[Message]:
        """The message that started a turn and every message its runs wrote, in seq order."""
        ...

    def turn(self, person_id: str, *, wait_s: float) -> AbstractAsyncContextManager[None]:
        """Hold the person's thread for one whole turn; `ThreadBusy` after `wait_s`."""
        ...

    def alone(self, person_id: str) -> bool:
        """Inside `turn`: whether the caller's turn is this process's only one for the person
        (no other waits for the thread or is still finishing after losing it)."""
        ...

    async def commit_lazily(self) -> None:
        """Inside `turn`: until the turn lets the thread go, its writes may commit without
        waiting for the disk; they become durable with the next write that does wait (the
        turn's bookkeeping, chat.bookkeeping), which the turn waits for before it ends."""
        ...


class RunStore(Protocol):
    """Runs: started `running`, finished exactly once, with usage, tool calls and cost."""

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
    ) -> Run: ...

    async def record_call(
        self, run_id: str, *, index: int, model: str, usage: dict[str, int], at: datetime | None = None
    ) -> datetime | None:
        """Keep one model call's usage (before it is charged), as of `at` (default: now);
        returns when it was recorded, or None when it was already. Raises
        `chat.runs.RunGone` when its run is not there."""
        ...

    async def record_cost(self, run_id: str, *, index: int, cost_micros: int) -> None:
        """Mark a call charged and add its cost to the run (once, however often called)."""
        ...

    async def uncharged_calls(
        self, *, limit: int = 1000, returned_before: datetime | None = None
    ) -> list[UnchargedCall]:
        """Calls recorded and not charged, oldest first; only those that returned before
        `returned_before` when it is given."""
        ...

    async def record_tool(self, run_id: str, *, name: str, args: dict[str, Any], result: dict[str, Any]) -> None: ...

    async def finish(
        self, run_id: str, *, status: str, error_code: str | None = None, error_detail: str | None = None
    ) -> Run:
        """Finish a running run; finishing one twice is a programming error (AssertionError)."""
        ...

    async def get(self, person_id: str, run_id: str) -> Run | None: ...

    async def of_origin(self, person_id: str, origin_message_id: str) -> list[Run]:
        """The runs a message started, in the order they started."""
        ...

    async def abandon_held(self, person_id: str) -> list[Run]:
        """Inside the person's `turn`: fail their runs left `running` (`abandoned`)."""
        ...


class PeopleStore(Protocol):
    """Who the people are: local sign-in by name, lookup by id, the zone they live in and
    the language they speak."""

    async def sign_in_local(self, name: str) -> tuple[Person, bool]:
        """The person with this display name (case and spacing ignored), created with
        their thread on first sign-in; and whether they were new."""
        ...

    async def find_local(self, name: str) -> Person | None: ...

    async def get(self, person_id: str) -> Person | None: ...

    async def remember_time_zone(self, person_id: str, time_zone: str) -> None: ...

    async def learn_language(self, person: Person, text: str) -> None:
        """Keep the language the person writes in, when `text` says enough to tell."""
        ...


class EventSink(Protocol):
    """Where a change that is not part of another write announces itself to live clients."""

    async def publish(self, person_id: str, type_: str, data: dict[str, Any]) -> None: ...


class BalanceSink(Protocol):
    """Where the wallet announces a person's balance when reading it and publishing it can
    be one step (`Wallet.announce` reads, then publishes, where it is not given one)."""

    async def publish_balance(self, person_id: str) -> int:
        """Publish `wallet.changed` with the person's balance as the ledger holds it now
        (`balance_micros`, and `balance` as `ledger.format_rupiah` writes it); returns it."""
        ...


# The ledger's balance and display, read inside the insert (ledger/sql/0003_balance_in_statements.sql):
# one round trip where a balance read and then an insert were two.
_BALANCE_CHANGED_SQL = """
INSERT INTO events (person_id, type, data)
SELECT $1, 'wallet.changed', jsonb_build_object('balance_micros', micros, 'balance', ledger_format_rupiah(micros))
FROM ledger_balance_micros($2) AS balance (micros)
RETURNING (data ->> 'balance_micros')::bigint
"""


class PostgresEvents:
    """Events as rows of the `events` table (NOTIFY on commit; see chat.events)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def publish(self, person_id: str, type_: str, data: dict[str, Any]) -> None:
        await publish(self._pool, person_id, type_, data)

    async def publish_balance(self, person_id: str) -> int:
        balance: int = await self._pool.fetchval(_BALANCE_CHANGED_SQL, person_id, user_account(person_id))
        return balance
