"""The eval harness's composition root: the product as a scenario run drives it.

A scenario must meet the product a person meets, so this runs the whole server
(`app.server.running`, no call door in use) on the configured model, wrapped in a
recorder, with a clock each scenario sets; wake notes stay pending, since the scenario's
clock is not the wall's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from agents import Model, SandboxHome, ToolSpec
from app.model import build_model
from app.server import running
from chat import People, Runs, Threads, Turns, Wallet
from reminders import Reminders
from scenarios import RecordingModel, ScenarioClock
from settings import Settings


@dataclass(frozen=True, slots=True)
class EvalProduct:
    """The product as a scenario run drives it (scenarios.Product)."""

    turns: Turns
    people: People
    threads: Threads
    runs: Runs
    wallet: Wallet
    home: SandboxHome
    model: RecordingModel
    clock: ScenarioClock
    team: dict[str, tuple[ToolSpec, ...]]  # what every agent can do in this deployment
    reminders: Reminders | None  # the wake notes the turns scheduled (the `wake` rule reads them)


@contextlib.asynccontextmanager
async def eval_product(settings: Settings, *, model: Model | None = None) -> AsyncIterator[EvalProduct]:
    """The whole product on the configured model (or the one given), with a clock each
    scenario sets and a recorder that keeps the raw replies the thread never stores."""
    clock = ScenarioClock()
    async with contextlib.AsyncExitStack() as stack:
        recording = RecordingModel(build_model(settings, stack, model))
        quiet = settings.model_copy(update={"voice_preload": False})  # no call is placed
        async with running(quiet, model=recording, clock=clock.now, deliver_wakes=False) as (services, _):
            yield EvalProduct(
                services.turns,
                services.people,
                services.threads,
                services.runs,
                services.wallet,
                SandboxHome(services.pool),
                recording,
                clock,
                services.toolbox.team(),
                services.reminders.reminders if services.reminders is not None else None,
            )
