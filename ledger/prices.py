"""What a model call costs: versioned prices per model, and the arithmetic.

Prices are rupiah per million tokens, so rate times tokens is exactly micro-rupiah and the
whole computation stays in integers. A price row is never edited; a change is a new row
with a later `valid_from`, and each receipt names the row it was billed at.

Billing follows docs/money.md#prices: input is prompt + tool-use prompt, of which the cached part is
billed at the cached rate; output includes thinking; a call with any usage costs at
least 1 µRp (so its receipt still records the usage); a call with none costs nothing.

`PriceBook` keeps the rows it has read in process: a turn charges several model calls, and
reading the same append-only rows for each was a round trip per call. Because rows are
never edited, a cached row stays right forever; what the cache can miss is a row added
since it read, so it reads a model's rows again once they are `refresh_s` old, and at once
after `add` in this process. So a price meant for every server process from its first
moment is added at least `PRICE_REFRESH_S` before its `valid_from` (the migrations' rows
are there before any process reads).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Protocol

import asyncpg

from ledger.errors import PriceMissing

_COLUMNS = "id, model, input_per_mtok_idr, cached_input_per_mtok_idr, output_per_mtok_idr, valid_from"
# Every row that can price the model: its own and the default's ('*').
_ROWS_FOR_SQL = f"SELECT {_COLUMNS} FROM prices WHERE model IN ($1, '*')"
# How long a process bills from the price rows it has read before reading them again.
PRICE_REFRESH_S = 60.0
_ADD_SQL = f"""
INSERT INTO prices (model, input_per_mtok_idr, cached_input_per_mtok_idr, output_per_mtok_idr, valid_from)
VALUES ($1, $2, $3, $4, $5)
RETURNING {_COLUMNS}
"""

TOKENS_MAX = 10**9  # per call; far above any model's context, far below overflow

# The most one billed model call can use, for the most one call can cost (`wallet verify`,
# docs/money.md#the-guard): a call is at most four requests (the Gemini adapter follows at
# most four continuation hops), each reading at most a full context window (1,048,576
# tokens for the Gemini 3 models we price) and writing at most 65,536 tokens (thinking
# included). Input is priced at the full rate (cached input is never dearer).
CALL_INPUT_TOKENS_MAX = 4 * 1_048_576
CALL_OUTPUT_TOKENS_MAX = 4 * 65_536


@dataclass(frozen=True, slots=True)
class Price:
    id: int
    model: str  # an exact model name, or '*' for the default
    input_per_mtok_idr: int
    cached_input_per_mtok_idr: int
    output_per_mtok_idr: int
    valid_from: datetime

    def as_receipt(self) -> dict[str, int]:
        return {
            "id": self.id,
            "input_per_mtok_idr": self.input_per_mtok_idr,
            "cached_input_per_mtok_idr": self.cached_input_per_mtok_idr,
            "output_per_mtok_idr": self.output_per_mtok_idr,
        }


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """One model call's usage as the model reported it (Gemini's counting)."""

    prompt_tokens: int = 0  # includes the cached tokens
    cached_tokens: int = 0
    tool_use_prompt_tokens: int = 0
    output_tokens: int = 0  # excludes thinking
    thinking_tokens: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value) is not int or not 0 <= value <= TOKENS_MAX:
                raise ValueError(f"{f.name} must be an int from 0 to {TOKENS_MAX}, not {value!r}")

    @property
    def is_zero(self) -> bool:
        return not any(getattr(self, f.name) for f in fields(self))

    def as_receipt(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def cost_micros(*, price: Price, tokens: TokenUsage) -> int:
    """The charge for one call in micro-rupiah: exact, never negative, ≥ 1 with usage."""
    input_tokens = tokens.prompt_tokens + tokens.tool_use_prompt_tokens
    # Cached tokens are part of the input; a report claiming more cached than sent is
    # clamped, so no token is ever billed that was not sent.
    cached_tokens = min(tokens.cached_tokens, input_tokens)
    output_tokens = tokens.output_tokens + tokens.thinking_tokens
    micros = (
        (input_tokens - cached_tokens) * price.input_per_mtok_idr
        + cached_tokens * price.cached_input_per_mtok_idr
        + output_tokens * price.output_per_mtok_idr
    )
    if micros == 0 and not tokens.is_zero:
        return 1
    return micros


class Prices(Protocol):
    """Where charging looks up the price of a model at a moment."""

    async def price_for(self, model: str, at: datetime) -> Price: ...


def _price(row: asyncpg.Record) -> Price:
    return Price(
        id=row["id"],
        model=row["model"],
        input_per_mtok_idr=row["input_per_mtok_idr"],
        cached_input_per_mtok_idr=row["cached_input_per_mtok_idr"],
        output_per_mtok_idr=row["output_per_mtok_idr"],
        valid_from=row["valid_from"],
    )


def pick(rows: list[Price], model: str, at: datetime) -> Price | None:
    """The model's own newest row valid at `at`, else the newest default ('*') row valid then."""
    valid = [p for p in rows if p.model in (model, "*") and p.valid_from <= at]
    return max(valid, key=lambda p: (p.model == model, p.valid_from), default=None)


class PriceBook:
    """The `prices` table, read once per model and kept (see the module doc)."""

    def __init__(
        self, pool: asyncpg.Pool, *, refresh_s: float = PRICE_REFRESH_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._pool = pool
        self._refresh_s = refresh_s
        self._clock = clock
        # model -> (when read, its rows and the default's)
        self._rows: dict[str, tuple[float, list[Price]]] = {}

    async def price_for(self, model: str, at: datetime) -> Price:
        assert at.tzinfo is not None, "prices are looked up at an aware time"
        price = pick(await self._rows_for(model), model, at)
        if price is None:
            raise PriceMissing(f"no price for {model!r} (nor a default) was valid at {at.isoformat()}")
        return price

    async def _rows_for(self, model: str) -> list[Price]:
        now = self._clock()
        cached = self._rows.get(model)
        if cached is not None and now - cached[0] < self._refresh_s:
            return cached[1]
        rows = [_price(r) for r in await self._pool.fetch(_ROWS_FOR_SQL, model)]
        self._rows[model] = (now, rows)
        return rows

    async def add(
        self,
        *,
        model: str,
        input_per_mtok_idr: int,
        cached_input_per_mtok_idr: int,
        output_per_mtok_idr: int,
        valid_from: datetime,
    ) -> Price:
        """A new price for `model` ('*' for the default) from `valid_from` on."""
        assert valid_from.tzinfo is not None, "a price starts at an aware time"
        row = await self._pool.fetchrow(
            _ADD_SQL, model, input_per_mtok_idr, cached_input_per_mtok_idr, output_per_mtok_idr, valid_from
        )
        assert row is not None
        self._rows.clear()  # this process bills from the new row at once
        return _price(row)
