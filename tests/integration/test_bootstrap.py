"""Startup that fails part-way closes everything it had opened, whichever step fails.

Each `build_*` step of the composition root is made to fail right after it did its work
(so what it opened is really open), on the embedded PostgreSQL of a fresh state folder.
After the failure no pool may be open, no task left running, no thread of ours alive
and no PostgreSQL process serving the folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from pydantic import SecretStr

import app.database
import app.model
import app.server
from settings import Settings

STEPS = [
    "build_database",
    "build_pool",
    "build_migrations",
    "build_model",
    "build_specialists_on",
    "build_ledger",
    "build_knowledge",
    "build_turns",
    "build_listener",
    "build_event_hub",
    "settle_crash",
    "start_learning",
    "build_voice",
]

pytestmark = pytest.mark.timeout(180)


class Injected(Exception):
    """The failure a test injects after a step."""


def postgres_of(state: Path) -> list[str]:
    listing = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines() if f"-D {(state / 'pg').resolve()}" in line]


def failing_after(step: Callable[..., Any]) -> Callable[..., Any]:
    """`step`, doing its work, then raising."""
    if asyncio.iscoroutinefunction(step):

        @functools.wraps(step)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            await step(*args, **kwargs)
            raise Injected(step.__name__)

        return async_wrapper

    @functools.wraps(step)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        step(*args, **kwargs)
        raise Injected(step.__name__)

    return wrapper


@pytest.mark.parametrize("step", STEPS)
async def test_a_startup_failing_at_any_step_leaves_nothing_open(
    step: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=None,
        avagenc_home=state,
        session_secret=SecretStr("bootstrap-" + "x" * 40),
        gemini_api_key=None,
        voice_preload=True,
    )
    pools: list[asyncpg.Pool] = []
    real_create_pool = app.database.create_pool  # type: ignore[attr-defined]

    async def recorded_pool(dsn: str, *, size_max: int, single_statements: bool = False) -> asyncpg.Pool:
        pool = await real_create_pool(dsn, size_max=size_max, single_statements=single_statements)
        pools.append(pool)
        return pool

    monkeypatch.setattr(app.database, "create_pool", recorded_pool)
    monkeypatch.setattr(app.server, step, failing_after(getattr(app.server, step)))
    threads_before = set(threading.enumerate())

    with pytest.raises(Injected):
        async with app.server.running(settings):
            pytest.fail("startup should have failed")

    assert pools or step == "build_database"
    assert all(pool.is_closing() for pool in pools)
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}
    # The loop's own idle executor workers (asyncio_N) are the loop's, not ours.
    started = set(threading.enumerate()) - threads_before
    assert [t.name for t in started if t.is_alive() and not t.name.startswith("asyncio_")] == []
    assert postgres_of(state) == []


async def test_the_configured_model_is_closed_with_the_stack_and_a_given_one_is_left_to_its_owner() -> None:
    from agents import ScriptedModel
    from agents.gemini import GeminiModel

    settings = Settings(_env_file=None, gemini_api_key=SecretStr("test-key"))  # type: ignore[call-arg]
    async with contextlib.AsyncExitStack() as stack:
        built = app.model.build_model(settings, stack, None)
        assert isinstance(built, GeminiModel)
    assert built._client.is_closed
    given = ScriptedModel()
    async with contextlib.AsyncExitStack() as stack:
        assert app.model.build_model(settings, stack, given) is given
