"""What a crash left behind, settled when a server starts.

A process that dies mid-turn leaves runs marked `running` and model calls never charged.
Both are the chat's own records, so putting them right is the chat's job; only a serving
process does it at startup (a read-only command never writes), and it never touches a
thread another live process is turning right now.
"""

from __future__ import annotations

import logging

import asyncpg

from chat.runs import Runs
from chat.threads import Threads
from chat.wallet import Wallet

log = logging.getLogger("avagenc")


async def fail_abandoned_runs(threads: Threads, runs: Runs, pool: asyncpg.Pool) -> int:
    """Runs left `running` by a crash are failed, but only where no live turn holds the
    thread: another server process sharing the database may be running them right now."""
    failed = 0
    async with pool.acquire() as conn:
        for person_id in await runs.people_with_running():
            if await threads.is_idle(conn, person_id):
                try:
                    failed += len(await runs.abandon(conn, person_id))
                finally:
                    await threads.release(conn, person_id)
    return failed


async def settle_crash(threads: Threads, runs: Runs, wallet: Wallet, pool: asyncpg.Pool) -> None:
    """Fail the runs a crash abandoned and charge the model calls it left uncharged."""
    abandoned = await fail_abandoned_runs(threads, runs, pool)
    if abandoned:
        log.warning("marked %d abandoned runs as failed", abandoned)
    settled = await wallet.settle_uncharged()
    if settled:
        log.warning("charged %d model calls a crash had left uncharged", settled)
