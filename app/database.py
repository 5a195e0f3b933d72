"""Building the database plumbing: the server (embedded or DATABASE_URL), pools, the
migrations and the process's one LISTEN connection.

Every root opens the database through these, each on its own exit stack, so whatever is
opened is closed in reverse order however far startup got.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable

import asyncpg

from agents import specialist_packages
from database import EmbeddedPostgres, Listener, apply_migrations, create_pool, migration_sources
from settings import Settings


async def build_database(settings: Settings, stack: contextlib.AsyncExitStack) -> tuple[str, EmbeddedPostgres | None]:
    """DATABASE_URL, or an embedded server under AVAGENC_HOME that is stopped on close."""
    if settings.database_url:
        return settings.database_url, None
    embedded = EmbeddedPostgres(settings.avagenc_home / "pg", log_path=settings.avagenc_home / "pg.log")
    # Registered first: a start that fails half-way (initdb done, pg_ctl timed out) is
    # still let go of, and `stop` does nothing if there is nothing to stop.
    stack.callback(embedded.stop)
    return await asyncio.to_thread(embedded.start), embedded


# The exit status of a server that lost its embedded PostgreSQL for good (README, "Two commands").
EXIT_DATABASE_LOST = 3


def _give_up(reason: str) -> None:
    """One clear line, then exit non-zero at once: the process's supervisor (systemd,
    Docker's restart policy, Kubernetes) starts a fresh one. No graceful stop: every
    statement would fail against the missing database anyway."""
    logging.getLogger("avagenc").critical("exiting: %s", reason)
    for handler in logging.getLogger().handlers + logging.getLogger("avagenc").handlers:
        handler.flush()
    os._exit(EXIT_DATABASE_LOST)


def supervise_database(
    embedded: EmbeddedPostgres | None,
    dsn: str,
    stack: contextlib.AsyncExitStack,
    *,
    on_give_up: Callable[[str], None] = _give_up,
) -> None:
    """A serving process brings its embedded PostgreSQL back if it dies (database.embedded);
    stopped before the server is (the stack closes in reverse). With DATABASE_URL the
    database's own operator restarts it; meanwhile requests answer 503 with Retry-After."""
    if embedded is None:
        return
    task = asyncio.create_task(embedded.supervise(url=dsn, on_give_up=on_give_up), name="embedded-postgres")

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    stack.push_async_callback(stop)


async def build_pool(
    dsn: str, stack: contextlib.AsyncExitStack, *, size_max: int, single_statements: bool = False
) -> asyncpg.Pool:
    pool = await create_pool(dsn, size_max=size_max, single_statements=single_statements)
    stack.push_async_callback(pool.close)
    return pool


async def build_migrations(pool: asyncpg.Pool) -> list[str]:
    """Every domain's migrations, and those of the installed specialist packages that have
    tables of their own (after the agents', before the chat's)."""
    async with pool.acquire() as conn:
        return await apply_migrations(conn, sources=migration_sources(specialist_packages()))


async def build_listener(dsn: str, stack: contextlib.AsyncExitStack) -> Listener:
    """The process's one LISTEN connection: the live events and the wake-note dispatcher
    both hear their notifications on it."""
    listener = Listener(dsn)
    stack.push_async_callback(listener.stop)  # before start: a start that times out leaves its task
    await listener.start()
    return listener
