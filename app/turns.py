"""Building the turns: the one path every message, call utterance and wake note takes to
the agents, over the threads, runs, wallet, model, toolbox and knowledge it is given."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime

from agents import Model, OfflineModel, Toolbox
from app.knowledge import KnowledgeParts
from chat import Runs, Threads, Turns, Wallet
from settings import Settings


def build_turns(
    settings: Settings,
    *,
    threads: Threads,
    runs: Runs,
    wallet: Wallet,
    model: Model,
    toolbox: Toolbox,
    knowledge: KnowledgeParts,
    clock: Callable[[], datetime] | None = None,
    apart: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
) -> Turns:
    return Turns(
        threads=threads,
        runs=runs,
        wallet=wallet,
        model=model,
        model_name=settings.model_for if not isinstance(model, OfflineModel) else (lambda _: "offline-1"),
        toolbox=toolbox,
        history_tokens_max=settings.history_tokens_max,
        thread_wait_s=settings.thread_wait_s,
        facts=knowledge.facts,
        # A turn's charges and tool records are written on a connection of their own.
        apart=apart,
        # The agents' "now"; a scenario run (avagenc eval) sets its own.
        clock=clock or (lambda: datetime.now(UTC)),
    )
