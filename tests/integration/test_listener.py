"""The one LISTEN connection (database.Listener) on a real PostgreSQL: each channel's
notifications reach that channel's callbacks over a single connection; every (re)start of
listening is announced with None; and after the listening backend is terminated the
listener reconnects and notifications arrive again. A whole server process (the live
events and the wake-note dispatcher together) holds just the one connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from database import Listener
from database.listener import APPLICATION_NAME
from tests.conftest import App

_BACKENDS_SQL = """
SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1
"""
_TERMINATE_SQL = """
SELECT count(*) FROM (
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = $1
) AS t
"""


class Heard:
    """A callback that remembers everything it was called with, in order."""

    def __init__(self) -> None:
        self.calls: list[str | None] = []

    def __call__(self, payload: str | None) -> None:
        self.calls.append(payload)


async def until(condition: Callable[[], bool], *, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


async def notify(pool: asyncpg.Pool, channel: str, payload: str) -> None:
    await pool.execute("SELECT pg_notify($1, $2)", channel, payload)


@pytest.fixture
async def listener(database_url: str) -> AsyncIterator[Listener]:
    listener = Listener(database_url, reconnect_s=0.05, reconnect_max_s=0.2)
    try:
        yield listener
    finally:
        await listener.stop()


async def test_each_channel_hears_its_own_notifications_on_one_connection(
    listener: Listener, pool: asyncpg.Pool
) -> None:
    events, wakes, also_events = Heard(), Heard(), Heard()
    listener.watch("test_events", events)
    listener.watch("test_wakes", wakes)
    listener.watch("test_events", also_events)
    await listener.start()
    # Listening began: everyone is told to catch up.
    assert events.calls == wakes.calls == also_events.calls == [None]

    await notify(pool, "test_events", "usr_budi")
    await notify(pool, "test_wakes", "")
    await notify(pool, "test_other", "nobody listens")
    await until(lambda: len(events.calls) == 2 and len(wakes.calls) == 2)
    await asyncio.sleep(0.05)  # nothing else is on its way
    assert events.calls == also_events.calls == [None, "usr_budi"]
    assert wakes.calls == [None, ""]
    assert len(await pool.fetch(_BACKENDS_SQL, APPLICATION_NAME)) == 1, "one connection for every channel"


async def test_after_the_backend_is_terminated_it_says_none_and_hears_again(
    listener: Listener, pool: asyncpg.Pool
) -> None:
    events, wakes = Heard(), Heard()
    listener.watch("test_events", events)
    listener.watch("test_wakes", wakes)
    await listener.start()
    first = await pool.fetchval(_BACKENDS_SQL, APPLICATION_NAME)

    assert await pool.fetchval(_TERMINATE_SQL, APPLICATION_NAME) == 1
    # Reconnected and listening again: both channels are told something may have been missed.
    await until(lambda: events.calls == [None, None] and wakes.calls == [None, None])
    second = await pool.fetchval(_BACKENDS_SQL, APPLICATION_NAME)
    assert second is not None and second != first

    await notify(pool, "test_events", "usr_budi")
    await notify(pool, "test_wakes", "note")
    await until(lambda: events.calls[-1:] == ["usr_budi"] and wakes.calls[-1:] == ["note"])
    assert events.calls == [None, None, "usr_budi"]
    assert wakes.calls == [None, None, "note"]


async def test_a_channel_first_watched_on_a_live_connection_is_listened_on(
    listener: Listener, pool: asyncpg.Pool
) -> None:
    await listener.start()
    late = Heard()
    listener.watch("test_late", late)
    await until(lambda: late.calls == [None])  # its LISTEN is in effect from here on
    await notify(pool, "test_late", "heard")
    await until(lambda: late.calls == [None, "heard"])
    assert len(await pool.fetch(_BACKENDS_SQL, APPLICATION_NAME)) == 1


async def test_a_failing_callback_does_not_silence_the_others(listener: Listener, pool: asyncpg.Pool) -> None:
    def broken(_payload: str | None) -> None:
        raise RuntimeError("a consumer's bug")

    heard = Heard()
    listener.watch("test_events", broken)
    listener.watch("test_events", heard)
    await listener.start()
    await notify(pool, "test_events", "usr_budi")
    await until(lambda: heard.calls == [None, "usr_budi"])


async def test_stop_closes_the_connection(listener: Listener, pool: asyncpg.Pool) -> None:
    listener.watch("test_events", Heard())
    await listener.start()
    await listener.stop()
    async with asyncio.timeout(5):
        while await pool.fetch(_BACKENDS_SQL, APPLICATION_NAME):
            await asyncio.sleep(0.01)


async def test_a_server_process_listens_on_one_connection(app: App) -> None:
    assert app.services.adapters["reminder_queue"] == "EmbeddedQueue", "the dispatcher listens too"
    assert len(await app.services.pool.fetch(_BACKENDS_SQL, APPLICATION_NAME)) == 1
