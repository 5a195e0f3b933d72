"""Limits that hold across every instance sharing the database (docs/http.md#limits).

Two shapes cover them all:

- a **rate** (`Limits.hit`): at most `max` hits per key in a fixed window of `window_s`
  seconds (sign-in attempts per client address, runs started per person per minute);
  one upserted row per key and window, so the count is exact however many instances
  count at once;
- a **lease** (`Limits.lease`): at most `cap` held at once per key (live-event streams
  per person, runs in flight per person). Counting and taking happen in one database
  function under a per-key advisory lock, so twenty simultaneous opens take exactly
  `cap` leases; a holder whose process died lets go when its lease lapses (`ttl_s`),
  and a long holder renews it.

A refusal is `RateLimited`, which carries how long to wait (the edge's `Retry-After`).
Each check is one statement on the pool: no lock is held between requests. The server
gives the limiter a pool of its own whose connections skip asyncpg's reset
(database.create_pool's `single_statements`): every statement here is one statement
outside a transaction, and the reset was a second round trip on each.

A window this process saw over its count is remembered until it ends: a window's count
only grows, so on every instance it refuses until then, and a flood's later hits are
refused here without a round trip (and without being counted, which changes nothing: the
window already refuses). A crash of the database may empty the window sooner (the tables
are unlogged); the remembered refusal then lasts to the window's end, as it would have.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg

from chat.errors import ChatError, RateLimited

# The window's bounds come from the database's clock, the one every instance shares.
_HIT_SQL = """
INSERT INTO limit_windows (key, window_at, ends_at, hits)
VALUES ($1, to_timestamp(floor(extract(epoch FROM now()) / $2) * $2),
        to_timestamp(floor(extract(epoch FROM now()) / $2) * $2 + $2), 1)
ON CONFLICT (key, window_at) DO UPDATE SET hits = limit_windows.hits + 1
RETURNING hits, extract(epoch FROM ends_at - now())::float8 AS left_s
"""
_PEEK_SQL = """
SELECT hits, extract(epoch FROM ends_at - now())::float8 AS left_s FROM limit_windows
WHERE key = $1 AND window_at = to_timestamp(floor(extract(epoch FROM now()) / $2) * $2)
"""
_TAKE_SQL = "SELECT take_limit_lease($1, $2, $3, $4)"
_RENEW_SQL = "UPDATE limit_leases SET expires_at = now() + make_interval(secs => $2) WHERE id = $1"
_RELEASE_SQL = "DELETE FROM limit_leases WHERE id = $1"
_RELEASE_MANY_SQL = "DELETE FROM limit_leases WHERE id = ANY($1::text[])"
# Leases whose release met a lost database, kept to be let go on the next take (a bound on memory).
_UNRELEASED_MAX = 10_000
_SWEEP_SQL = """
WITH windows AS (DELETE FROM limit_windows WHERE ends_at < now() RETURNING 1),
     leases AS (DELETE FROM limit_leases WHERE expires_at < now() RETURNING 1)
SELECT (SELECT count(*) FROM windows) + (SELECT count(*) FROM leases)
"""
# Counting windows are swept every this many hits (one process's share of the work).
SWEEP_EVERY_HITS = 1_000
# Windows remembered as full (a bound on memory, about 200 bytes each): a flood from more
# keys than this at once is still refused, by the database; the oldest are let go first.
FULL_WINDOWS_MAX = 10_000


@dataclass(frozen=True, slots=True)
class Rate:
    """At most `max` hits per `window_s` seconds."""

    max: int
    window_s: int

    def __post_init__(self) -> None:
        assert self.max >= 1, "a rate allows at least one hit"
        assert self.window_s >= 1, "a window lasts at least a second"


def _refusal(rate: Rate, what: str, left_s: float) -> RateLimited:
    return RateLimited(
        f"At most {rate.max} {what} per {rate.window_s} s; try again later.",
        retry_after_s=max(1, math.ceil(left_s)),
    )


class Lease:
    """A held place under a cap; renew it while holding longer than its time to live."""

    def __init__(self, pool: asyncpg.Pool, lease_id: str, ttl_s: float) -> None:
        self._pool = pool
        self.id = lease_id
        self.ttl_s = ttl_s

    async def renew(self) -> None:
        await self._pool.execute(_RENEW_SQL, self.id, self.ttl_s)


class Limits:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._hits = 0
        # Why: the lease tables are unlogged, so a clean database restart keeps them, and a
        # release lost to the outage held its place for the lease's whole time to live: a
        # person whose turns were cut off got 429 for up to RUN_LEASE_S after the database
        # came back (tests/faults/test_external_restart.py).
        self._unreleased: set[str] = set()
        # (key, window length) -> (when its window ends, on this process's clock; the hits
        # it held), for windows seen holding at least their `max`.
        self._full: dict[tuple[str, int], tuple[float, int]] = {}

    @property
    def pool(self) -> asyncpg.Pool:
        """The connections its statements run on (their use is reported with the other pools')."""
        return self._pool

    async def hit(self, key: str, rate: Rate, *, what: str) -> None:
        """Count one hit on `key`; raises `RateLimited` once the window holds more than `rate.max`."""
        self._refuse_if_known_full(key, rate, what=what)
        row = await self._pool.fetchrow(_HIT_SQL, key, rate.window_s)
        assert row is not None
        self._hits += 1
        if self._hits % SWEEP_EVERY_HITS == 0:
            await self._pool.fetchval(_SWEEP_SQL)
        self._remember(key, rate, row)
        if row["hits"] > rate.max:
            raise _refusal(rate, what, row["left_s"])

    async def check(self, key: str, rate: Rate, *, what: str) -> None:
        """Raise `RateLimited` if `key`'s window already holds `rate.max` hits, counting
        nothing (for limits counted only on failure, such as wrong codes)."""
        self._refuse_if_known_full(key, rate, what=what)
        row = await self._pool.fetchrow(_PEEK_SQL, key, rate.window_s)
        if row is not None:
            self._remember(key, rate, row)
            if row["hits"] >= rate.max:
                raise _refusal(rate, what, row["left_s"])

    def _refuse_if_known_full(self, key: str, rate: Rate, *, what: str) -> None:
        """Refuse without a round trip if this process saw the window holding `rate.max`
        hits: one more (a hit) or none (a check) is refused by the database too."""
        known = self._full.get((key, rate.window_s))
        if known is None:
            return
        ends_at, hits = known
        left_s = ends_at - time.monotonic()
        if left_s <= 0:
            del self._full[(key, rate.window_s)]
        elif hits >= rate.max:
            raise _refusal(rate, what, left_s)

    def _remember(self, key: str, rate: Rate, row: asyncpg.Record) -> None:
        if row["hits"] < rate.max:
            return
        self._full.pop((key, rate.window_s), None)
        while len(self._full) >= FULL_WINDOWS_MAX:
            del self._full[next(iter(self._full))]
        self._full[(key, rate.window_s)] = (time.monotonic() + row["left_s"], row["hits"])

    @contextlib.asynccontextmanager
    async def lease(self, key: str, *, cap: int, ttl_s: float, refused: ChatError) -> AsyncIterator[Lease]:
        """Hold one of `cap` places on `key` for the block; raises `refused` when all are held."""
        lease = await self.take(key, cap=cap, ttl_s=ttl_s, refused=refused)
        try:
            yield lease
        finally:
            await self.release(lease)

    async def take(self, key: str, *, cap: int, ttl_s: float, refused: ChatError) -> Lease:
        """Take one of `cap` places on `key` (release it with `release`); raises `refused` when all are held."""
        lease_id = f"lse_{secrets.token_hex(8)}"
        if self._unreleased:
            await self._release_lost()
        if not await self._pool.fetchval(_TAKE_SQL, key, lease_id, cap, ttl_s):
            raise refused
        return Lease(self._pool, lease_id, ttl_s)

    async def release(self, lease: Lease) -> None:
        # A release that cannot reach the database is not an error: it is let go with this
        # process's next take (or, if the process dies first, the lease lapses).
        try:
            await self._pool.execute(_RELEASE_SQL, lease.id)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            if len(self._unreleased) < _UNRELEASED_MAX:
                self._unreleased.add(lease.id)

    async def _release_lost(self) -> None:
        lost = list(self._unreleased)
        await self._pool.execute(_RELEASE_MANY_SQL, lost)
        self._unreleased.difference_update(lost)
