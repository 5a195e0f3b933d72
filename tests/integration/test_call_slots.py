"""One call per person across server processes: the slot is a PostgreSQL advisory lock,
so a second process is refused while the first holds it, and a crashed holder frees it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from voice.call_slots import CallSlots
from voice.errors import CallInProgress

ROOT = Path(__file__).resolve().parents[2]

# Another server process, reduced to what matters here: it takes the person's slot and
# holds it until it is killed (as a server would during a call).
_HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from voice.call_slots import CallSlots

    async def main() -> None:
        async with CallSlots.for_url(sys.argv[1]).hold(sys.argv[2]):
            print("held", flush=True)
            await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


async def _holder(database_url: str, person_id: str) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLDER, database_url, person_id, cwd=ROOT, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    async with asyncio.timeout(30):
        assert (await process.stdout.readline()).strip() == b"held"
    return process


async def test_a_second_process_is_refused_until_the_first_call_ends(database_url: str) -> None:
    slots = CallSlots.for_url(database_url)
    holder = await _holder(database_url, "usr_budi")
    try:
        with pytest.raises(CallInProgress) as refused:
            async with slots.hold("usr_budi"):
                pytest.fail("two calls for one person")
        assert refused.value.type == "call_in_progress"

        async with slots.hold("usr_sari"):  # someone else calls freely meanwhile
            pass
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # the other server dies mid-call
        await holder.wait()

    async with asyncio.timeout(10):  # its connection is gone, so is its lock
        while True:
            try:
                async with slots.hold("usr_budi"):
                    break
            except CallInProgress:
                await asyncio.sleep(0.1)


async def test_a_slot_is_free_again_after_the_call(database_url: str) -> None:
    slots = CallSlots.for_url(database_url)
    async with slots.hold("usr_budi"):
        with pytest.raises(CallInProgress):
            async with slots.hold("usr_budi"):  # even from the same process: one call
                pass
    async with slots.hold("usr_budi"):
        pass


async def test_a_call_that_waits_gets_the_slot_the_moment_another_process_lets_go(database_url: str) -> None:
    """Hang up on one server, call straight back through another: the new call waits a
    moment for the old one to let go instead of being refused as a second call."""
    slots = CallSlots.for_url(database_url)
    holder = await _holder(database_url, "usr_budi")

    killed = asyncio.Event()

    async def hang_up_soon() -> None:
        await asyncio.sleep(0.3)
        os.kill(holder.pid, signal.SIGKILL)
        killed.set()
        await holder.wait()

    ending = asyncio.create_task(hang_up_soon())
    async with slots.hold("usr_budi", wait_s=10.0):
        # The slot came only once the other call had let go. (Not `ending.done()`: the
        # database can free the slot before this loop hears that the process has exited.)
        assert killed.is_set()
    await ending


async def test_a_call_still_live_elsewhere_is_refused_after_the_wait(database_url: str) -> None:
    slots = CallSlots.for_url(database_url)
    async with slots.hold("usr_budi"):
        started = asyncio.get_running_loop().time()
        with pytest.raises(CallInProgress):
            async with slots.hold("usr_budi", wait_s=0.3):
                pytest.fail("two calls for one person")
        assert asyncio.get_running_loop().time() - started >= 0.3
