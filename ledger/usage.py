"""A person's usage for one local day: what they spent on model calls and voice, and on
how many tokens, summed from the charges' own entries and receipts.

The day is the person's: midnight to midnight in their zone, converted to instants, so a
charge at 23:30 UTC counts toward the next day in Jakarta. Cost comes from the money
actually posted; tokens from the receipts those postings carry. They cannot disagree,
because a charge's receipt and its amount are written in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import asyncpg

# Summed per ledger transaction first, so a charge that ever posted to the same wallet
# twice would still count once.
USAGE_FOR_DAY_SQL = """
WITH charges AS (
    SELECT e.transaction_id, sum(e.amount_micros) AS amount_micros
    FROM entries AS e
    WHERE e.account_id = $1 AND e.created_at >= $2 AND e.created_at < $3
    GROUP BY e.transaction_id
)
SELECT count(*) AS calls,
       coalesce(-sum(c.amount_micros), 0)::bigint AS cost_micros,
       coalesce(sum((t.metadata #>> '{tokens,prompt_tokens}')::bigint), 0)::bigint AS prompt_tokens,
       coalesce(sum((t.metadata #>> '{tokens,tool_use_prompt_tokens}')::bigint), 0)::bigint AS tool_use_prompt_tokens,
       coalesce(sum((t.metadata #>> '{tokens,cached_tokens}')::bigint), 0)::bigint AS cached_tokens,
       coalesce(sum((t.metadata #>> '{tokens,output_tokens}')::bigint), 0)::bigint AS output_tokens,
       coalesce(sum((t.metadata #>> '{tokens,thinking_tokens}')::bigint), 0)::bigint AS thinking_tokens
FROM charges AS c JOIN transactions AS t ON t.id = c.transaction_id
WHERE t.type = ANY($4::text[])
"""


@dataclass(frozen=True, slots=True)
class DayUsage:
    day: date
    cost_micros: int
    calls: int
    input_tokens: int  # prompt + tool-use prompt, cached included
    cached_tokens: int
    output_tokens: int  # thinking excluded
    thinking_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.thinking_tokens

    def as_json(self) -> dict[str, object]:
        return {
            "date": self.day.isoformat(),
            "cost_micros": self.cost_micros,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
            "thinking_tokens": self.thinking_tokens,
            "total_tokens": self.total_tokens,
        }


def day_bounds(day: date, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The instants a local day starts and ends (end exclusive); DST days stay whole."""
    return (
        datetime.combine(day, time(), tzinfo=zone),
        datetime.combine(day + timedelta(days=1), time(), tzinfo=zone),
    )


def day_usage(day: date, row: asyncpg.Record) -> DayUsage:
    return DayUsage(
        day=day,
        cost_micros=row["cost_micros"],
        calls=row["calls"],
        input_tokens=row["prompt_tokens"] + row["tool_use_prompt_tokens"],
        cached_tokens=row["cached_tokens"],
        output_tokens=row["output_tokens"],
        thinking_tokens=row["thinking_tokens"],
    )
