"""A pool for single statements (database.create_pool's `single_statements`, the
limiter's): a connection comes back without asyncpg's reset round trip, yet never with a
transaction left open by a use cut short."""

from __future__ import annotations

import asyncio

from database import create_pool


async def test_a_connection_comes_back_without_an_open_transaction(database_url: str) -> None:
    pool = await create_pool(database_url, size_max=1, single_statements=True)
    try:
        backend = await pool.fetchval("SELECT pg_backend_pid()")
        async with pool.acquire() as conn:
            await conn.execute("BEGIN")
            await conn.execute("CREATE TEMP TABLE left_behind (n int)")
        async with pool.acquire() as conn:
            assert await conn.fetchval("SELECT pg_backend_pid()") == backend, "the same connection, kept"
            assert not conn.is_in_transaction()
            assert await conn.fetchval("SELECT to_regclass('pg_temp.left_behind')") is None, "rolled back"
        # Statements in parallel queue for the one connection and all succeed.
        assert await asyncio.gather(*(pool.fetchval("SELECT $1::int", n) for n in range(20))) == list(range(20))
    finally:
        await pool.close()
