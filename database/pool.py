"""One asyncpg pool per process, with JSON codecs so JSONB columns read as Python values."""

from __future__ import annotations

import json

import asyncpg


def _encode(value: object) -> str:
    # Timestamps and other non-JSON scalars inside payloads are written as text.
    return json.dumps(value, default=str, ensure_ascii=False)


async def _init_connection(conn: asyncpg.Connection) -> None:
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, encoder=_encode, decoder=json.loads, schema="pg_catalog")


async def create_pool(url: str, *, size_max: int) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(url, min_size=1, max_size=size_max, init=_init_connection, command_timeout=60)
    assert pool is not None
    return pool
