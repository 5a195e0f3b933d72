"""A bench's own database on the PostgreSQL it was given: made fresh and migrated, dropped
after. Several benches (and both sides of one comparison) share one server, each in a
database of its own name, so a run never reads another's rows."""

from __future__ import annotations

import asyncpg

from bench.turn_overhead import with_database
from database import apply_migrations


async def recreate(admin_url: str, name: str) -> str:
    """An empty database called `name` (dropped first if a run left it); its URL."""
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return with_database(admin_url, name)


async def migrated(admin_url: str, name: str) -> str:
    """`recreate`, with the product's migrations applied."""
    url = await recreate(admin_url, name)
    conn = await asyncpg.connect(url)
    try:
        await apply_migrations(conn)
    finally:
        await conn.close()
    return url


async def drop(admin_url: str, name: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()
