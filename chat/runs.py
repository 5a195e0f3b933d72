"""Runs: one agent turn each, with who triggered it, what it used and how it ended.

A run is recorded `running` before the model is called and finished exactly once.
Usage is added after every model call, so a run that dies halfway still shows what it
burned. Starting and finishing publish `run.started` / `run.finished` events.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from chat.events import Conn, json_time, publish, sql_json_time

_COLUMNS = """id, agent, trigger, parent_run_id, trigger_message_id, origin_message_id, channel, status,
error_code, error_detail, model, model_calls, tool_calls, usage, cost_micros, started_at, finished_at"""
# A run's event data as `Run.as_json` gives it, built from a row of `runs` in the statement
# that changed it: a start or a finish and its event are one round trip, not four.
_RUN_JSON = f"""jsonb_build_object(
    'id', id, 'agent', agent, 'trigger', trigger, 'parent_run_id', parent_run_id,
    'trigger_message_id', trigger_message_id, 'channel', channel, 'status', status, 'model', model,
    'model_calls', model_calls, 'tool_calls', tool_calls, 'usage', usage, 'cost_micros', cost_micros,
    'error', CASE WHEN error_code IS NULL THEN NULL
                  ELSE jsonb_build_object('type', error_code, 'detail', error_detail) END,
    'started_at', {sql_json_time("started_at")},
    'finished_at', CASE WHEN finished_at IS NULL THEN NULL ELSE {sql_json_time("finished_at")} END)"""
# The run's start commits durably even on a turn's connection that commits lazily
# (`Threads.commit_lazily`): its model calls are kept in the outbox, a file outside the
# database's log, from the moment they return, and a crash of PostgreSQL that lost the
# run's row would leave calls to charge with no run, so no receipt (docs/money.md#charging).
# `set_config(..., true)` lasts until this statement's own commit, which then waits for the
# disk, and with it for everything the turn committed lazily before.
_START_SQL = f"""
WITH durable AS (
    SELECT set_config('synchronous_commit', 'on', true)
), started AS (
    INSERT INTO runs (id, person_id, agent, trigger, parent_run_id, trigger_message_id, origin_message_id, channel)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING person_id, {_COLUMNS}
), announced AS (
    INSERT INTO events (person_id, type, data) SELECT person_id, 'run.started', {_RUN_JSON} FROM started
)
SELECT {_COLUMNS} FROM started, durable
"""
# One statement (one round trip, its own transaction): the call's row, and its usage added
# to the run's. Nothing happens for a run that does not exist, or a call already recorded
# (a charge replayed from the outbox, chat.outbox): `at` comes back empty, and `run_found`
# says which of the two it was.
_RECORD_CALL_SQL = """
WITH call AS (
    INSERT INTO run_calls (run_id, idx, person_id, model, usage, at)
    SELECT id, $2, person_id, $3, $4::jsonb, coalesce($5, clock_timestamp()) FROM runs WHERE id = $1
    ON CONFLICT (run_id, idx) DO NOTHING
    RETURNING run_id, at
), bump AS (
    UPDATE runs SET model_calls = model_calls + 1, model = $3,
        usage = usage || (SELECT coalesce(jsonb_object_agg(k, coalesce((usage ->> k)::bigint, 0) + v::bigint), '{}')
                          FROM jsonb_each_text($4::jsonb) AS u(k, v))
    WHERE id IN (SELECT run_id FROM call)
)
SELECT (SELECT at FROM call) AS at, EXISTS (SELECT FROM runs WHERE id = $1) AS run_found
"""
_COST_SQL = """
WITH call AS (
    UPDATE run_calls SET cost_micros = $3 WHERE run_id = $1 AND idx = $2 AND cost_micros IS NULL RETURNING run_id
)
UPDATE runs SET cost_micros = cost_micros + $3 WHERE id IN (SELECT run_id FROM call)
"""
_UNCHARGED_SQL = """
SELECT c.run_id, c.idx, c.person_id, c.model, c.usage, c.at, r.agent, r.trigger
FROM run_calls c JOIN runs r ON r.id = c.run_id
WHERE c.cost_micros IS NULL AND ($2::timestamptz IS NULL OR c.at < $2) ORDER BY c.at LIMIT $1
"""
_TOOL_SQL = """
WITH bump AS (UPDATE runs SET tool_calls = tool_calls + 1 WHERE id = $1 RETURNING tool_calls)
INSERT INTO run_events (run_id, idx, name, args, result)
SELECT $1, tool_calls, $2, $3::jsonb, $4::jsonb FROM bump
"""
_FINISH_SQL = f"""
WITH finished AS (
    UPDATE runs SET status = $2, error_code = $3, error_detail = $4, finished_at = clock_timestamp()
    WHERE id = $1 AND status = 'running' RETURNING person_id, {_COLUMNS}
), announced AS (
    INSERT INTO events (person_id, type, data) SELECT person_id, 'run.finished', {_RUN_JSON} FROM finished
)
SELECT person_id, {_COLUMNS} FROM finished
"""
_OF_ORIGIN_SQL = f"SELECT {_COLUMNS} FROM runs WHERE person_id = $1 AND origin_message_id = $2 ORDER BY started_at"
_GET_SQL = f"SELECT {_COLUMNS} FROM runs WHERE person_id = $1 AND id = $2"
_RUNNING_PEOPLE_SQL = "SELECT DISTINCT person_id FROM runs WHERE status = 'running'"
_ABANDON_SQL = f"""
UPDATE runs SET status = 'failed', error_code = 'abandoned',
    error_detail = 'The server stopped before this run finished.', finished_at = clock_timestamp()
WHERE person_id = $1 AND status = 'running' RETURNING person_id, {_COLUMNS}
"""


class RunGone(LookupError):
    """A model call's run is not in the database (its person was erased, or a crash lost
    it): the call has no run to be recorded in, so it is never charged (docs/money.md#charging)."""


@dataclass(frozen=True, slots=True)
class Run:
    id: str
    agent: str
    trigger: str
    parent_run_id: str | None
    trigger_message_id: str
    origin_message_id: str
    channel: str
    status: str
    error_code: str | None
    error_detail: str | None
    model: str | None
    model_calls: int
    tool_calls: int
    usage: dict[str, int]
    cost_micros: int
    started_at: datetime
    finished_at: datetime | None

    def as_json(self) -> dict[str, Any]:
        error = {"type": self.error_code, "detail": self.error_detail} if self.error_code else None
        return {
            "id": self.id,
            "agent": self.agent,
            "trigger": self.trigger,
            "parent_run_id": self.parent_run_id,
            "trigger_message_id": self.trigger_message_id,
            "channel": self.channel,
            "status": self.status,
            "model": self.model,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "usage": self.usage,
            "cost_micros": self.cost_micros,
            "error": error,
            "started_at": json_time(self.started_at),
            "finished_at": json_time(self.finished_at) if self.finished_at else None,
        }


@dataclass(frozen=True, slots=True)
class UnchargedCall:
    run_id: str
    index: int
    person_id: str
    agent: str
    trigger: str
    model: str
    usage: dict[str, int]
    at: datetime


def _run(row: asyncpg.Record) -> Run:
    return Run(
        id=row["id"],
        agent=row["agent"],
        trigger=row["trigger"],
        parent_run_id=row["parent_run_id"],
        trigger_message_id=row["trigger_message_id"],
        origin_message_id=row["origin_message_id"],
        channel=row["channel"],
        status=row["status"],
        error_code=row["error_code"],
        error_detail=row["error_detail"],
        model=row["model"],
        model_calls=row["model_calls"],
        tool_calls=row["tool_calls"],
        usage=dict(row["usage"]),
        cost_micros=row["cost_micros"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
    )


class Runs:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

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
        row = await self._pool.fetchrow(
            _START_SQL,
            f"run_{secrets.token_hex(10)}",
            person_id,
            agent,
            trigger,
            parent_run_id,
            trigger_message_id,
            origin_message_id,
            channel,
        )
        assert row is not None
        return _run(row)

    async def record_call(
        self, run_id: str, *, index: int, model: str, usage: dict[str, int], at: datetime | None = None
    ) -> datetime | None:
        """Keep one model call's usage (before it is charged), as of `at` (default: now);
        returns when it was recorded, or None when it was already. Raises `RunGone` when
        its run is not there."""
        row = await self._pool.fetchrow(_RECORD_CALL_SQL, run_id, index, model, usage, at)
        assert row is not None
        if not row["run_found"]:
            raise RunGone(f"run {run_id} is not in the database")
        recorded: datetime | None = row["at"]
        return recorded

    async def record_cost(self, run_id: str, *, index: int, cost_micros: int) -> None:
        """Mark a call charged and add its cost to the run (once, however often called)."""
        await self._pool.execute(_COST_SQL, run_id, index, cost_micros)

    async def uncharged_calls(
        self, *, limit: int = 1000, returned_before: datetime | None = None
    ) -> list[UnchargedCall]:
        rows = await self._pool.fetch(_UNCHARGED_SQL, limit, returned_before)
        return [
            UnchargedCall(
                r["run_id"], r["idx"], r["person_id"], r["agent"], r["trigger"], r["model"], dict(r["usage"]), r["at"]
            )
            for r in rows
        ]

    async def record_tool(self, run_id: str, *, name: str, args: dict[str, Any], result: dict[str, Any]) -> None:
        await self._pool.execute(_TOOL_SQL, run_id, name, args, result)

    async def finish(
        self, run_id: str, *, status: str, error_code: str | None = None, error_detail: str | None = None
    ) -> Run:
        """End a running run; a run ended already (the sweep failed it while an outage cut
        its turn off from the thread, chat.recovery) keeps its first end, which is returned."""
        row = await self._pool.fetchrow(_FINISH_SQL, run_id, status, error_code, error_detail)
        if row is None:
            row = await self._pool.fetchrow(f"SELECT {_COLUMNS} FROM runs WHERE id = $1", run_id)
            assert row is not None, f"run {run_id} does not exist"
        return _run(row)

    async def get(self, person_id: str, run_id: str) -> Run | None:
        row = await self._pool.fetchrow(_GET_SQL, person_id, run_id)
        return _run(row) if row else None

    async def of_origin(self, person_id: str, origin_message_id: str) -> list[Run]:
        return [_run(r) for r in await self._pool.fetch(_OF_ORIGIN_SQL, person_id, origin_message_id)]

    async def people_with_running(self) -> list[str]:
        return [r["person_id"] for r in await self._pool.fetch(_RUNNING_PEOPLE_SQL)]

    async def abandon_held(self, person_id: str) -> list[Run]:
        """`abandon`, from a turn that holds the person's thread (on its connection)."""
        async with self._pool.acquire() as conn:
            return await self.abandon(conn, person_id)

    async def abandon(self, conn: Conn, person_id: str) -> list[Run]:
        """Fail a person's runs left `running`; call only while holding their thread."""
        rows = await conn.fetch(_ABANDON_SQL, person_id)
        for row in rows:
            await publish(conn, person_id, "run.finished", _run(row).as_json())
        return [_run(r) for r in rows]
