"""What the operator's tools get from the server's root: the levels `/metrics` reads at
each scrape, and the trace exporter.

Counters are recorded where their events happen (telemetry.metrics); levels such as
connections in use, live calls and the reminder queue's backlog are read here just
before a scrape instead, from the pools, the call registry and the `wake_notes` table,
and the reading stops when the server closes (docs/operations.md#metrics).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import asyncpg

from reminders import Notes
from settings import Settings
from telemetry import export_traces, metrics

if TYPE_CHECKING:
    from voice import VoiceDoors


def _pool_levels(name: str, pool: asyncpg.Pool) -> None:
    size, idle = pool.get_size(), pool.get_idle_size()
    metrics.db_connections.set(size - idle, pool=name, state="in_use")
    metrics.db_connections.set(idle, pool=name, state="idle")
    metrics.db_connections.set(pool.get_max_size(), pool=name, state="max")


def read_levels_on_scrape(
    stack: contextlib.AsyncExitStack,
    *,
    pools: dict[str, asyncpg.Pool],
    doors: Callable[[], VoiceDoors | None],
    notes: Notes | None,
) -> None:
    """Before each scrape: pool use, live calls and the wake-note backlog; until `stack` closes.
    `doors` gives the call doors, None while they are still being built (no call is live)."""

    async def refresh() -> None:
        for name, pool in pools.items():
            _pool_levels(name, pool)
        voice = doors()
        metrics.calls_active.set(0 if voice is None else len(voice.registry))
        if notes is not None:
            count, lag_s = await notes.backlog()
            metrics.wake_backlog.set(count)
            metrics.wake_lag_seconds.set(lag_s)

    stack.callback(metrics.registry.on_scrape(refresh))


def build_tracing(settings: Settings, stack: contextlib.AsyncExitStack) -> str:
    """Export traces where TRACES_OTLP_ENDPOINT says (flushed when the server closes); the
    adapter's name for the startup line."""
    if settings.traces_otlp_endpoint is None:
        return "off"
    stack.callback(export_traces(endpoint=settings.traces_otlp_endpoint))
    return "OTLP/HTTP"
