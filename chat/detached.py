"""Work that must finish even when the request that started it is gone: a turn whose
client disconnected, a charge for a model call that already happened. Such tasks are
kept here (the event loop itself holds only weak references) and shutdown waits for
them, within a bound, before the database pool closes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

_TASKS: set[asyncio.Task[Any]] = set()


async def run_detached(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to its end even if the caller is cancelled; return its result."""
    return await asyncio.shield(detach(coroutine))


async def drain_detached(*, timeout_s: float) -> None:
    """Wait for detached work to finish (at shutdown); give up after `timeout_s`."""
    pending = [t for t in _TASKS if not t.done()]
    if not pending:
        return
    _, still = await asyncio.wait(pending, timeout=timeout_s)
    if still:
        log.warning("%d detached tasks still running at shutdown", len(still))


def cancel_detached() -> int:
    """Cancel detached work still running (a forced stop); returns how many were cancelled.
    What they leave half-done (a run still `running`, a call not yet charged) is what the
    next startup's sweep fails and settles."""
    pending = [t for t in _TASKS if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        log.warning("cancelled %d detached tasks at a forced stop", len(pending))
    return len(pending)


def detach(coroutine: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
    """Start `coroutine` as detached work nobody awaits yet: kept until it ends, and
    waited for (or cancelled) at shutdown like the rest."""
    task = asyncio.create_task(coroutine, name=name)
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)
    return task
