"""The server half of the turn-overhead benchmark: the real app, plus a baseline and a tracer.

`bench.turn_overhead` starts this module as its own process, so the load generator never
shares the server's interpreter lock or event loop. It serves the product exactly as
`avagenc serve` does (`app.server.running`, uvicorn on a plain asyncio loop, INFO logging),
with the scripted model answering instantly, and adds bench-only routes:

- `POST /bench/baseline` does the same PostgreSQL work as one Ava -> Zee -> light turn
  (the same statements in the same transactions, the same pool check-outs, the same
  per-person advisory lock held on a connection of the separate lock pool) against copies
  of the product's tables (charges: the real ledger, see SCHEMA_SQL), written as plainly
  as the work allows. The gap between the two is what the product's own code costs.
  `POST /bench/baseline-one-connection` runs the same statements on one connection per
  request, to price the product's habit of checking out a connection per statement.
- `POST /bench/trace/start|stop` records every statement the connections of both pools
  (statements and thread locks) run and how many transaction ids were handed out in
  between, so the driver can prove in every run that the baseline still matches the turn
  instead of trusting a hand count.
- `POST /bench/trace/learning` traces one pass of the learning worker (stopped in this
  server: background work, off the reply's path, accounted apart from the request), and
  `POST /bench/learn` runs one untraced.

(No `from __future__ import annotations`: FastAPI reads the route annotations at runtime.)
"""

import argparse
import asyncio
import contextlib
import logging
import secrets
import socket
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import asyncpg
import uvicorn
from fastapi import FastAPI, Header
from pydantic import BaseModel, ConfigDict, SecretStr
from starlette.exceptions import HTTPException

from agents import FunctionCall, ModelRequest, ModelResponse, ScriptedModel
from app.server import running
from chat import Learning, Person, Sessions, Turns, Wallet
from chat.bookkeeping import Books
from chat.errors import RateLimited
from chat.limits import Limits, Rate
from chat.turns import TurnResult
from settings import Settings

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy  # generic only in the stubs

DEVICE_ID = "sbx-light-bedroom"
COMMANDS = [{"code": "switch_led", "value": True}]


def answer(request: ModelRequest) -> ModelResponse:
    """The scripted turn, decided from the request because many turns interleave:
    Ava hands on to Zee, Zee switches the light and says "Done.", Ava stays silent."""
    tool_result_back = bool(request.contents) and bool(request.contents[-1].results)
    if "[ROLE: LEAD]" in request.system:
        if tool_result_back:
            return ModelResponse("")
        return ModelResponse("", calls=(FunctionCall("call-zee", "zee", {"tag": "@zee"}),))
    if tool_result_back:
        return ModelResponse("Done.")
    args = {"device_id": DEVICE_ID, "commands": COMMANDS}
    return ModelResponse("", calls=(FunctionCall("call-light", "send_commands", args),))


class InstantScript(ScriptedModel):
    """`ScriptedModel` with one callable reply that never runs out. It keeps no request
    log: thousands of stored requests would only grow the heap the timings run on."""

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        self.replies.append(answer)
        response = await super().generate(request=request)
        self.requests.clear()
        return response


# --- the baseline ------------------------------------------------------------------------

# Copies of the tables a turn writes, with the product's indexes, checks, foreign keys and
# NOTIFY trigger, so each baseline row costs PostgreSQL what the turn's row costs. Charges
# go to the real ledger instead (under refs of their own): its triggers are most of what
# a charge costs, and they only act on the ledger's own tables.
SCHEMA_SQL = """
CREATE TABLE bench_threads (LIKE threads INCLUDING ALL);
CREATE TABLE bench_messages (LIKE messages INCLUDING ALL);
CREATE TABLE bench_runs (LIKE runs INCLUDING ALL);
CREATE TABLE bench_run_events (LIKE run_events INCLUDING ALL);
CREATE TABLE bench_events (LIKE events INCLUDING ALL);
CREATE TABLE bench_devices (LIKE sandbox_devices INCLUDING ALL);
CREATE TABLE bench_run_calls (LIKE run_calls INCLUDING ALL);
ALTER TABLE bench_threads ADD FOREIGN KEY (person_id) REFERENCES people (id) ON DELETE CASCADE;
ALTER TABLE bench_messages ADD FOREIGN KEY (person_id) REFERENCES people (id) ON DELETE CASCADE;
ALTER TABLE bench_messages ADD FOREIGN KEY (run_id) REFERENCES bench_runs (id) ON DELETE CASCADE;
ALTER TABLE bench_runs ADD FOREIGN KEY (person_id) REFERENCES people (id) ON DELETE CASCADE;
ALTER TABLE bench_runs ADD FOREIGN KEY (parent_run_id) REFERENCES bench_runs (id) ON DELETE CASCADE;
ALTER TABLE bench_runs ADD FOREIGN KEY (trigger_message_id) REFERENCES bench_messages (id)
    ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE bench_runs ADD FOREIGN KEY (origin_message_id) REFERENCES bench_messages (id)
    ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE bench_run_events ADD FOREIGN KEY (run_id) REFERENCES bench_runs (id) ON DELETE CASCADE;
ALTER TABLE bench_events ADD FOREIGN KEY (person_id) REFERENCES people (id) ON DELETE CASCADE;
ALTER TABLE bench_run_calls ADD FOREIGN KEY (run_id) REFERENCES bench_runs (id) ON DELETE CASCADE;
ALTER TABLE bench_run_calls ADD FOREIGN KEY (person_id) REFERENCES people (id) ON DELETE CASCADE;
CREATE TRIGGER bench_events_notify AFTER INSERT ON bench_events FOR EACH ROW EXECUTE FUNCTION events_notify();
"""

_MESSAGE_COLUMNS = "id, seq, author, text, channel, run_id, emotions, client_id, created_at"
_RUN_COLUMNS = """id, agent, trigger, parent_run_id, trigger_message_id, origin_message_id, channel, status,
error_code, error_detail, model, model_calls, tool_calls, usage, cost_micros, started_at, finished_at"""
_PERSON_SQL = "SELECT id, name, time_zone, created_at, language FROM people WHERE id = $1"
# The turn's own lock key: a baseline request and a turn for one person exclude each other.
_LOCK_SQL = "SELECT pg_advisory_lock(hashtextextended('thread:' || $1, 0))"
_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended('thread:' || $1, 0))"
# Threads.append, Runs.start and Runs.finish are each one statement that also writes the
# change's event, its data built from the row by PostgreSQL.
_APPEND_SQL = f"""
WITH next AS (
    UPDATE bench_threads SET last_seq = last_seq + 1 WHERE person_id = $2 RETURNING last_seq
), written AS (
    INSERT INTO bench_messages (id, person_id, seq, author, text, channel, run_id, emotions, client_id)
    SELECT $1, $2, last_seq, $3, $4, 'text', $5, $6, $7 FROM next RETURNING {_MESSAGE_COLUMNS}
), announced AS (
    INSERT INTO bench_events (person_id, type, data) SELECT $2, 'message', to_jsonb(written) FROM written
)
SELECT {_MESSAGE_COLUMNS} FROM written
"""
# A run's start commits durably even on the lazily committing lock connection, as
# Runs.start does (chat.runs: its calls are kept outside the log).
_START_SQL = f"""
WITH durable AS (
    SELECT set_config('synchronous_commit', 'on', true)
), started AS (
    INSERT INTO bench_runs
        (id, person_id, agent, trigger, parent_run_id, trigger_message_id, origin_message_id, channel)
    VALUES ($1, $2, $3, $4, $5, $6, $7, 'text') RETURNING person_id, {_RUN_COLUMNS}
), announced AS (
    INSERT INTO bench_events (person_id, type, data) SELECT person_id, 'run.started', to_jsonb(started) FROM started
)
SELECT {_RUN_COLUMNS} FROM started, durable
"""
_PAGE_SQL = f"""
SELECT {_MESSAGE_COLUMNS} FROM bench_messages WHERE person_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3
"""
_RECORD_CALL_SQL = """
WITH call AS (
    INSERT INTO bench_run_calls (run_id, idx, person_id, model, usage)
    SELECT id, $2, person_id, $3, $4::jsonb FROM bench_runs WHERE id = $1
    RETURNING run_id, at
), bump AS (
    UPDATE bench_runs SET model_calls = model_calls + 1, model = $3,
        usage = usage || (SELECT coalesce(jsonb_object_agg(k, coalesce((usage ->> k)::bigint, 0) + v::bigint), '{}')
                          FROM jsonb_each_text($4::jsonb) AS u(k, v))
    WHERE id IN (SELECT run_id FROM call)
)
SELECT (SELECT at FROM call) AS at, EXISTS (SELECT FROM bench_runs WHERE id = $1) AS run_found
"""
# Every row that can price the model, read once per process (PriceBook keeps them).
_PRICES_SQL = """
SELECT id, model, input_per_mtok_idr, cached_input_per_mtok_idr, output_per_mtok_idr, valid_from FROM prices
WHERE model IN ($1, '*')
"""
# The ledger's one-statement write, as PostgresLedger.transact sends it.
_TRANSACT_SQL = """
WITH header AS (
    INSERT INTO transactions (type, ref, metadata, created_at)
    VALUES ($1, $2, $3, coalesce($4::timestamptz, now()))
    ON CONFLICT (ref) DO NOTHING
    RETURNING id, metadata, created_at
), opened AS (
    INSERT INTO accounts (id, kind)
    SELECT DISTINCT account_id, 'user' FROM unnest($5::text[]) AS account_id
    WHERE account_id LIKE 'user:%'
      AND EXISTS (SELECT FROM header)
      AND NOT EXISTS (SELECT FROM accounts AS a WHERE a.id = account_id)
    ORDER BY account_id
    ON CONFLICT (id) DO NOTHING
), posted AS (
    INSERT INTO entries (transaction_id, account_id, amount_micros, created_at)
    SELECT header.id, p.account_id, p.amount_micros, header.created_at
    FROM header CROSS JOIN unnest($5::text[], $6::bigint[]) AS p (account_id, amount_micros)
)
SELECT id, metadata, created_at FROM header
"""
_COST_SQL = """
WITH call AS (
    UPDATE bench_run_calls SET cost_micros = $3 WHERE run_id = $1 AND idx = $2 AND cost_micros IS NULL
    RETURNING run_id
)
UPDATE bench_runs SET cost_micros = cost_micros + $3 WHERE id IN (SELECT run_id FROM call)
"""
_BALANCE_SQL = "SELECT coalesce(sum(balance_micros), 0)::bigint FROM account_balances WHERE account_id = $1"
# The balance read inside the event's insert, one statement (the product's reads it through
# the ledger's SQL functions; the display is simplified here).
_ANNOUNCE_SQL = """
INSERT INTO bench_events (person_id, type, data)
SELECT $1, 'wallet.changed', jsonb_build_object('balance_micros', micros, 'balance', 'Rp ' || (micros / 1000000))
FROM (SELECT coalesce(sum(balance_micros), 0)::bigint AS micros FROM account_balances WHERE account_id = $2) AS b
"""
_LAZY_COMMITS_SQL = "SET synchronous_commit = off"
_TOOL_SQL = """
WITH bump AS (UPDATE bench_runs SET tool_calls = tool_calls + 1 WHERE id = $1 RETURNING tool_calls)
INSERT INTO bench_run_events (run_id, idx, name, args, result)
SELECT $1, tool_calls, $2, $3::jsonb, $4::jsonb FROM bump
"""
_FINISH_SQL = f"""
WITH finished AS (
    UPDATE bench_runs SET status = 'succeeded', error_code = NULL, error_detail = NULL, finished_at = clock_timestamp()
    WHERE id = $1 AND status = 'running' RETURNING person_id, {_RUN_COLUMNS}
), announced AS (
    INSERT INTO bench_events (person_id, type, data) SELECT person_id, 'run.finished', to_jsonb(finished) FROM finished
)
SELECT person_id, {_RUN_COLUMNS} FROM finished
"""
_SEED_DEVICES_SQL = """
INSERT INTO bench_devices (person_id, device_id, name, category, status)
SELECT $1, d.device_id, d.name, d.category, d.status
FROM jsonb_to_recordset($2::jsonb) AS d(device_id TEXT, name TEXT, category TEXT, status JSONB)
ON CONFLICT DO NOTHING
"""
_DEVICE_SQL = "SELECT category, status FROM bench_devices WHERE person_id = $1 AND device_id = $2"
_DEVICES_SQL = "SELECT device_id, name, category, status FROM bench_devices WHERE person_id = $1 ORDER BY name"
# The session layer's knowledge lookup (LocalKnowledge.search): every word, then any word.
# It reads the real knowledge tables: a search costs what it costs the turn.
_FACTS_SQL = """
WITH hits AS (
    SELECT * FROM knowledge_facts
    WHERE person_id = $1 AND invalid_at IS NULL AND search @@ to_tsquery('simple', $2) AND NOT (id = ANY ($4::text[]))
    ORDER BY valid_at DESC LIMIT $3
)
SELECT f.id, f.subject_id, f.relation, f.object_id, f.text, f.slot, f.valid_at, f.invalid_at, f.message_ids,
       s.name AS subject_name, s.is_self AS subject_self, o.name AS object_name, o.type AS object_type
FROM hits f
JOIN knowledge_entities s ON s.id = f.subject_id
JOIN knowledge_entities o ON o.id = f.object_id
ORDER BY f.valid_at DESC
"""
_FACT_WORDS = ["turn:*", "bedroom:*", "light:*"]
_FACTS_MAX = 10
_SWITCH_SQL = """
UPDATE bench_devices SET status = status || $3::jsonb, updated_at = now() WHERE person_id = $1 AND device_id = $2
"""
_DEVICES = [
    {"device_id": DEVICE_ID, "name": "Bedroom light", "category": "dj",
     "status": {"switch_led": False, "bright_value": 800, "temp_value": 500}},
    {"device_id": "sbx-light-living", "name": "Living room light", "category": "dj",
     "status": {"switch_led": False, "bright_value": 1000, "temp_value": 300}},
    {"device_id": "sbx-ac-bedroom", "name": "Bedroom AC", "category": "kt",
     "status": {"switch": False, "temp_set": 24, "mode": "cold"}},
    {"device_id": "sbx-curtain-living", "name": "Living room curtain", "category": "cl",
     "status": {"percent_control": 100, "control": "stop"}},
]  # fmt: skip
_USAGE = {"prompt_tokens": 100, "cached_tokens": 0, "tool_use_prompt_tokens": 0, "output_tokens": 10,
          "thinking_tokens": 0, "total_tokens": 110}  # fmt: skip
_MODEL = "scripted"


def _jsonable(row: asyncpg.Record) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


_UNREACHED_RATE = Rate(max=1_000_000, window_s=60)


class BaselineBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: str


class Baseline:
    """One turn's PostgreSQL work and nothing else: no routing, prompts, tool loop or models.

    The edge's share comes first, through the product's own objects: the session's
    signed-out lookup, the per-person rate and the in-flight place (docs/http.md#limits).
    As in the product, the person is read on a pooled connection, and everything the turn
    does while it holds the thread (the wallet guard first) runs on the connection that holds
    the lock (the knowledge lookup excepted: the product gives it a pool connection of its
    own, since a timeout may cut it short). Each step mirrors one product call, named in
    its comment; the driver's trace checks the match on every run. With `one_connection`
    every statement runs on the lock's connection, to show what the few remaining
    check-outs cost.
    """

    def __init__(self, pool: asyncpg.Pool, lock_pool: asyncpg.Pool, sessions: Sessions, limits: Limits) -> None:
        self._pool = pool
        self._lock_pool = lock_pool
        self._sessions = sessions
        # The edge's limits, the product's own (on their own pool), with caps no bench
        # reaches: their statements are a turn's too.
        self._limits = limits
        # Prices are append-only and kept in process (PriceBook): read once here.
        self._prices: dict[str, asyncpg.Record] = {}

    async def post(self, authorization: str | None, text: str, *, one_connection: bool) -> dict[str, Any]:
        # Sessions.verify: the token's HMAC and its signed-out lookup, as web/edge's current_person.
        person_id = await self._sessions.verify((authorization or "").removeprefix("Bearer ").strip())
        # The text API's per-person rate and in-flight place (web/api.py post_message).
        await self._limits.hit(f"runs:{person_id}", _UNREACHED_RATE, what="messages")
        refused = RateLimited("unreachable in the bench", retry_after_s=5)
        async with self._limits.lease(f"runs_in_flight:{person_id}", cap=100, ttl_s=900.0, refused=refused):
            if not one_connection:
                return await _Work(self._pool, self._lock_pool, self._prices, held=None).turn(person_id, text)
            async with self._lock_pool.acquire() as conn:
                return await _Work(self._pool, self._lock_pool, self._prices, held=conn).turn(person_id, text)


# The connection a baseline request's bookkeeping writes run on, for the writer task.
_BOOKS_CONN: ContextVar["PoolConnectionProxy[asyncpg.Record] | None"] = ContextVar("bench_books", default=None)


class _Inline:
    """Bookkeeping on the one held connection: the writes run where the turn waits for
    them (a connection serves one statement at a time), the same statements."""

    def __init__(self) -> None:
        self._pending: list[Callable[[], Awaitable[object]]] = []

    def write(self, work: Callable[[], Awaitable[object]]) -> None:
        self._pending.append(work)

    async def settled(self) -> None:
        pending, self._pending = self._pending, []
        for work in pending:
            await work()


class _Work:
    """The statements of one baseline request: on pooled connections until the lock is
    taken, then on the lock's connection, the bookkeeping (charges, tool records, run
    ends, the balance announced) beside them on a pooled connection of its own, through
    the product's `Books`; or all on one held connection."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        lock_pool: asyncpg.Pool,
        prices: dict[str, asyncpg.Record],
        *,
        held: "PoolConnectionProxy[asyncpg.Record] | None",
    ) -> None:
        self._pool = pool
        self._lock_pool = lock_pool
        self._prices = prices
        self._held = held
        self._locked: PoolConnectionProxy[asyncpg.Record] | None = None

    @contextlib.asynccontextmanager
    async def _apart(self) -> AsyncIterator[None]:  # database.holding_own
        async with self._pool.acquire() as conn:
            token = _BOOKS_CONN.set(conn)
            try:
                yield
            finally:
                _BOOKS_CONN.reset(token)

    @contextlib.asynccontextmanager
    async def _conn(self, *, pooled: bool = False) -> AsyncIterator["PoolConnectionProxy[asyncpg.Record]"]:
        """The held connection, else the bookkeeping's in its writer, else the lock's while the
        thread is held (unless `pooled`), else a pooled one."""
        books = _BOOKS_CONN.get()
        if self._held is not None:
            yield self._held
        elif books is not None:
            yield books
        elif self._locked is not None and not pooled:
            yield self._locked
        else:
            async with self._pool.acquire() as conn:
                yield conn

    async def _fetch(self, query: str, *args: object, pooled: bool = False) -> list[asyncpg.Record]:
        async with self._conn(pooled=pooled) as conn:
            return await conn.fetch(query, *args)

    async def _fetchrow(self, query: str, *args: object) -> asyncpg.Record | None:
        async with self._conn() as conn:
            return await conn.fetchrow(query, *args)

    async def _execute(self, query: str, *args: object) -> None:
        async with self._conn() as conn:
            await conn.execute(query, *args)

    @contextlib.asynccontextmanager
    async def _thread(self, person_id: str) -> AsyncIterator[None]:  # Threads.turn
        if self._held is not None:
            lock_cm: contextlib.AbstractAsyncContextManager[PoolConnectionProxy[asyncpg.Record]] = (
                contextlib.nullcontext(self._held)
            )
        else:
            lock_cm = self._lock_pool.acquire()
        async with lock_cm as lock:
            await lock.execute(_LOCK_SQL, person_id)
            self._locked = lock
            try:
                yield
            finally:
                self._locked = None
                await asyncio.shield(lock.execute(_UNLOCK_SQL, person_id))

    async def turn(self, person_id: str, text: str) -> dict[str, Any]:
        if not await self._fetch(_PERSON_SQL, person_id):  # People.get
            raise HTTPException(401)
        async with self._thread(person_id):
            # Wallet.guard, under the thread lock (docs/money.md#the-guard): on the lock's connection.
            await self._fetch(_BALANCE_SQL, f"user:{person_id}:IDR")
            messages, runs = await self._writes(person_id, text)
        # Turns.post: the response is what the turn wrote, not read back.
        return {"messages": [_jsonable(m) for m in messages], "runs": [_jsonable(r) for r in runs]}

    async def _writes(self, person_id: str, text: str) -> tuple[list[asyncpg.Record], list[asyncpg.Record]]:
        books: Books | _Inline = _Inline() if self._held is not None else Books(self._apart)
        finished: dict[str, asyncpg.Record] = {}

        async def finish(run_id: str) -> None:
            finished[run_id] = await self._finish(run_id)

        origin = await self._append(person_id, "human", text, None)
        # Threads.commit_lazily. On one connection the bookkeeping then commits lazily too,
        # where the product's commits apart and durably: that variant is a little optimistic.
        await self._execute(_LAZY_COMMITS_SQL)
        ava = await self._start(person_id, "ava", "human", None, origin["id"], origin["id"])
        await self._fetch(_PAGE_SQL, person_id, 2**62, 200)  # Turns._history: once per turn
        # Turns._facts_of on a pooled connection: every word, then (finding fewer than the limit) any word.
        await self._fetch(_FACTS_SQL, person_id, " & ".join(_FACT_WORDS), _FACTS_MAX, [], pooled=True)
        await self._fetch(_FACTS_SQL, person_id, " | ".join(_FACT_WORDS), _FACTS_MAX, [], pooled=True)
        books.write(lambda: self._charge(person_id, ava, 1, "ava", "human"))
        # Turns._may_hand_on: the balance, less the charge not yet written, is far above zero.
        await self._fetch(_BALANCE_SQL, f"user:{person_id}:IDR")
        handoff = await self._append(person_id, "ava", "@zee", ava)
        zee = await self._start(person_id, "zee", "ava", ava, handoff["id"], origin["id"])
        # Zee's history is Ava's page and the handoff, handed on: no read.
        books.write(lambda: self._charge(person_id, zee, 1, "zee", "ava"))
        # Zee's tools look at the home first (SandboxHome.list_devices: the list; seeded only
        # when it comes back empty, as at the warm-up), then SandboxHome.send_commands: read, write.
        if not await self._fetch(_DEVICES_SQL, person_id):
            await self._execute(_SEED_DEVICES_SQL, person_id, _DEVICES)
            await self._fetch(_DEVICES_SQL, person_id)
        await self._fetchrow(_DEVICE_SQL, person_id, DEVICE_ID)
        await self._execute(_SWITCH_SQL, person_id, DEVICE_ID, {"switch_led": True})
        command_args = {"device_id": DEVICE_ID, "commands": COMMANDS}
        books.write(lambda: self._execute(_TOOL_SQL, zee, "send_commands", command_args, {"ok": True}))
        books.write(lambda: self._charge(person_id, zee, 2, "zee", "ava"))
        done = await self._append(person_id, "zee", "Done.", zee)
        books.write(lambda: finish(zee))
        books.write(lambda: self._execute(_TOOL_SQL, ava, "zee", {"tag": "@zee"}, {"response": "Done."}))
        books.write(lambda: self._charge(person_id, ava, 2, "ava", "human"))
        books.write(lambda: self._announce(person_id))  # Turns._run: once per turn, after the last charge
        books.write(lambda: finish(ava))
        await books.settled()  # Turns.post: the turn's end
        return [origin, handoff, done], [finished[ava], finished[zee]]

    async def _price(self) -> asyncpg.Record:  # PriceBook.price_for, from the rows kept in process
        if _MODEL not in self._prices:
            rows = await self._fetch(_PRICES_SQL, _MODEL)
            self._prices[_MODEL] = max(rows, key=lambda r: (r["model"] == _MODEL, r["valid_from"]))
        return self._prices[_MODEL]

    async def _charge(  # Wallet.charge_call
        self, person_id: str, run_id: str, index: int, agent: str, trigger: str
    ) -> None:
        recorded = await self._fetchrow(_RECORD_CALL_SQL, run_id, index, _MODEL, _USAGE)  # Runs.record_call
        assert recorded is not None
        at = recorded["at"]
        assert at is not None
        price = await self._price()
        # Per-million-token prices in rupiah are micro-rupiah per token.
        cost = (
            _USAGE["prompt_tokens"] * price["input_per_mtok_idr"]
            + _USAGE["output_tokens"] * price["output_per_mtok_idr"]
        )
        account = f"user:{person_id}:IDR"
        receipt = {
            "agent": agent, "run_id": run_id, "trigger": trigger, "model": _MODEL, "call_index": index,
            "tokens": _USAGE, "price": dict(price), "cost_micros": cost,
        }  # fmt: skip
        await self._fetchrow(  # PostgresLedger.transact
            _TRANSACT_SQL, "agent_call", f"bench:{run_id}:call:{index}", receipt, at, [account, "revenue:IDR"],
            [-cost, cost],
        )  # fmt: skip
        await self._execute(_COST_SQL, run_id, index, cost)  # Runs.record_cost

    async def _announce(self, person_id: str) -> None:  # Wallet.announce: PostgresEvents.publish_balance
        await self._execute(_ANNOUNCE_SQL, person_id, f"user:{person_id}:IDR")

    async def _append(  # Threads.append
        self, person_id: str, author: str, text: str, run_id: str | None
    ) -> asyncpg.Record:
        message_id = f"msg_{secrets.token_hex(10)}"
        row = await self._fetchrow(_APPEND_SQL, message_id, person_id, author, text, run_id, [], None)
        assert row is not None
        return row

    async def _start(  # Runs.start
        self, person_id: str, agent: str, trigger: str, parent: str | None, trigger_id: str, origin_id: str
    ) -> str:
        run_id = f"run_{secrets.token_hex(10)}"
        row = await self._fetchrow(_START_SQL, run_id, person_id, agent, trigger, parent, trigger_id, origin_id)
        assert row is not None
        return run_id

    async def _finish(self, run_id: str) -> asyncpg.Record:  # Runs.finish
        row = await self._fetchrow(_FINISH_SQL, run_id)
        assert row is not None
        return row


# --- the statement trace -----------------------------------------------------------------

_XMAX_SQL = "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint"


def classify(query: str) -> str:
    """What one logged statement is, for counting."""
    words = " ".join(query.split()).upper()
    if "TYPEINFO_TREE" in words or "SET_CONFIG('JIT'" in words:
        return "introspection"  # asyncpg learning a type, once per connection: not the request's work
    if words.startswith(("BEGIN", "START TRANSACTION")):
        return "begin"
    if words.startswith(("COMMIT", "ROLLBACK")):
        return "end"
    if "PG_ADVISORY_UNLOCK_ALL()" in words:
        return "check-in"  # asyncpg resets a connection this way when it goes back to the pool
    if "PG_ADVISORY_LOCK(" in words or "PG_ADVISORY_UNLOCK(" in words:
        return "lock"
    is_write = words.startswith(("INSERT", "UPDATE", "DELETE")) or (
        words.startswith("WITH") and any(f" {verb} " in words for verb in ("INSERT", "UPDATE", "DELETE"))
    )
    return "write" if is_write else "read"


def summarize(queries: list[str], xids: int) -> dict[str, int]:
    """Counts that must be equal for the turn and the baseline to do the same work."""
    counts: Counter[str] = Counter()
    in_transaction = False
    for query in queries:
        kind = classify(query)
        counts[kind] += 1
        if kind == "begin":
            in_transaction = True
        elif kind == "end":
            in_transaction = False
        elif kind in ("read", "write"):
            counts["in transactions" if in_transaction else "autocommit"] += 1
    return {
        "pool check-outs": counts["check-in"],
        "transactions (BEGIN..COMMIT)": counts["begin"],
        "statements in them": counts["in transactions"],
        "autocommit statements": counts["autocommit"],
        "writes": counts["write"],
        "reads": counts["read"],
        "lock + unlock": counts["lock"],
        "write transactions (xids)": xids,
        "round trips": len(queries) - counts["introspection"],
    }


class Tracer:
    """Logs every statement of every connection of `pools` between `start` and `stop`:
    the statement pool, the thread-lock pool and the limiter's, so a turn's lock and
    unlock (and the check-out they take) and its limits are counted like every other
    statement.

    Only for a quiet server: it checks out every pool whole to reach each connection.
    """

    def __init__(self, pools: list[asyncpg.Pool]) -> None:
        self._pools = pools
        self._queries: list[str] = []
        self._xmax = 0

    def _logged(self, record: asyncpg.connection.LoggedQuery) -> None:
        self._queries.append(record.query)

    async def _each_connection(self, attach: bool) -> int:
        held = [(pool, await pool.acquire()) for pool in self._pools for _ in range(pool.get_max_size())]
        try:
            xmax = int(await held[0][1].fetchval(_XMAX_SQL))
            for _, conn in held:
                (conn.add_query_logger if attach else conn.remove_query_logger)(self._logged)
        finally:
            for pool, conn in held:
                await pool.release(conn)
        await asyncio.sleep(0)  # loggers run from call_soon; let the check-ins above land
        return xmax

    async def start(self) -> None:
        self._xmax = await self._each_connection(attach=True)
        self._queries.clear()

    async def stop(self) -> dict[str, Any]:
        queries = list(self._queries)
        xids = await self._each_connection(attach=False) - self._xmax
        return {
            "summary": summarize(queries, xids),
            # Reported apart: it depends on which connection served the request, not on the request.
            "type look-ups": sum(classify(q) == "introspection" for q in queries),
            "statements": [" ".join(q.split()) for q in queries],
        }


# --- serving -----------------------------------------------------------------------------


def add_bench_routes(app: FastAPI, baseline: Baseline, tracer: Tracer, learning: Learning) -> None:
    async def post_baseline(
        body: BaselineBody, authorization: Annotated[str | None, Header()] = None
    ) -> dict[str, Any]:
        return await baseline.post(authorization, body.text, one_connection=False)

    async def post_baseline_one_connection(
        body: BaselineBody, authorization: Annotated[str | None, Header()] = None
    ) -> dict[str, Any]:
        return await baseline.post(authorization, body.text, one_connection=True)

    async def trace_start() -> dict[str, str]:
        await tracer.start()
        return {"status": "tracing"}

    async def trace_stop() -> dict[str, Any]:
        return await tracer.stop()

    async def trace_learning() -> dict[str, Any]:
        # What the learning worker does for the messages written since its last pass,
        # traced on its own: background work, off the reply's path (see the module doc).
        await tracer.start()
        learned = await learning.drain()
        traced = await tracer.stop()
        return {**traced, "learned": learned}

    async def learn() -> dict[str, int]:
        return {"learned": await learning.drain()}

    app.add_api_route("/bench/baseline", post_baseline, methods=["POST"])
    app.add_api_route("/bench/baseline-one-connection", post_baseline_one_connection, methods=["POST"])
    app.add_api_route("/bench/trace/start", trace_start, methods=["POST"])
    app.add_api_route("/bench/trace/stop", trace_stop, methods=["POST"])
    app.add_api_route("/bench/trace/learning", trace_learning, methods=["POST"])
    app.add_api_route("/bench/learn", learn, methods=["POST"])


_READ_BEFORE_LOCK: ContextVar[int | None] = ContextVar("bench_guard_read_before_lock", default=None)


def guard_before_lock() -> None:
    """The wallet guard as it was before it was serialised with the turn (bench.guard_cost's
    comparison): the balance is read on a pooled connection of its own before the person's
    thread lock is taken, and the check under the lock uses that read instead of its own.
    The same reads, one place earlier; bench-only, patched into this process."""
    post = Turns.post
    guard = Wallet.guard

    async def post_guarded_first(self: Turns, person: Person, **kwargs: Any) -> TurnResult:
        balance = await self._wallet.guard(person.id)
        token = _READ_BEFORE_LOCK.set(balance)
        try:
            return await post(self, person, **kwargs)
        finally:
            _READ_BEFORE_LOCK.reset(token)

    async def guard_once(self: Wallet, person_id: str) -> int:
        read = _READ_BEFORE_LOCK.get()
        if read is not None:
            _READ_BEFORE_LOCK.set(None)
            return read
        return await guard(self, person_id)

    Turns.post = post_guarded_first  # type: ignore[method-assign]
    Wallet.guard = guard_once  # type: ignore[method-assign]


async def serve(*, database_url: str, state_dir: Path, pool_max: int, fd: int) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=database_url,
        avagenc_home=state_dir,
        session_secret=SecretStr("bench-secret-" + "x" * 40),
        gemini_api_key=None,
        database_pool_max=pool_max,
        # A turn holds a lock connection and borrows statement connections: half as many turns.
        turns_concurrent_max=max(1, pool_max // 2),
        # Every person gets the most the setting allows, so no guard ever stops a turn.
        signup_grant_micros=10**15,
        # The limits still run (their cost is part of a turn's) but never refuse: the bench
        # signs in every person from one address and keeps each one busy.
        sign_ins_per_address_max=1_000_000,
        runs_per_person_per_minute_max=1_000_000,
        runs_in_flight_per_person_max=100,
        # The server's sweep runs at startup only: its passes would land in the traces (and
        # it takes a connection the tracer reaches for), like the learning worker's.
        sweep_interval_s=3600,
    )
    async with running(settings, model=InstantScript()) as (services, app):
        # Learning is background work off the reply's path: stopped here so it neither
        # interleaves with the traced requests nor loads the measured ones; the driver
        # traces and times its passes on their own (`/bench/trace/learning`, `/bench/learn`).
        learning = services.knowledge.learning
        await learning.stop()
        async with services.pool.acquire() as conn:
            await conn.execute(SCHEMA_SQL)
        limits = services.limits if services.limits is not None else Limits(services.pool)
        add_bench_routes(
            app,
            Baseline(services.pool, services.lock_pool, services.sessions, limits),
            # The limiter's pool too: its statements are a turn's (one pool object when
            # limits run on the statement pool).
            Tracer(list({id(p): p for p in (services.pool, services.lock_pool, limits.pool)}.values())),
            learning,
        )
        # The driver made and bound the listening socket, so it knew the port before we ran.
        listener = socket.socket(fileno=fd)
        # As `avagenc serve`: access log on, lifespan off, the loop asyncio.run gave us.
        config = uvicorn.Config(app, log_level="info", lifespan="off")
        await uvicorn.Server(config).serve(sockets=[listener])


def main() -> None:
    parser = argparse.ArgumentParser(description="The server side of bench.turn_overhead (started by it).")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--pool-max", type=int, required=True)
    parser.add_argument("--fd", type=int, required=True, help="an inherited listening socket")
    parser.add_argument("--guard-before-lock", action="store_true", help="the guard as before it was serialised")
    args = parser.parse_args()
    if args.guard_before_lock:
        guard_before_lock()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(database_url=args.database_url, state_dir=args.state_dir, pool_max=args.pool_max, fd=args.fd))


if __name__ == "__main__":
    main()
