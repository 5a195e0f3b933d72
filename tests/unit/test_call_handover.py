"""A person who hangs up and calls straight back is let in, not refused as on a second call.

The new call reaches the registry while the last one is still letting go (its pipeline
ends a few milliseconds after the socket closes). The registry waits up to `handover_s`
for the person's previous call; a call that is really still going is refused after it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from chat import Person
from voice.calls import CallLimits, CallRegistry
from voice.errors import CallInProgress


def _person(person_id: str = "usr_budi") -> Person:
    return Person(id=person_id, name="Budi", time_zone="Asia/Jakarta", created_at=datetime.now(UTC))


async def test_a_call_back_waits_for_the_last_call_to_let_go() -> None:
    registry = CallRegistry(CallLimits(handover_s=5.0))
    budi, let_go, order = _person(), asyncio.Event(), []

    async def last_call() -> None:
        async with registry.claim_everywhere(budi, "voice"):
            await let_go.wait()
        order.append("last call let go")

    first = asyncio.create_task(last_call())
    await asyncio.sleep(0)
    assert len(registry) == 1
    asyncio.get_running_loop().call_later(0.2, let_go.set)
    async with registry.claim_everywhere(budi, "voice") as call:
        order.append("new call in")
        assert call.person.id == budi.id and len(registry) == 1
    await first
    assert order == ["last call let go", "new call in"]


async def test_a_call_still_going_refuses_the_second_after_the_wait() -> None:
    registry = CallRegistry(CallLimits(handover_s=0.2))
    budi = _person()
    async with registry.claim_everywhere(budi, "voice"):
        started = asyncio.get_running_loop().time()
        with pytest.raises(CallInProgress):
            async with registry.claim_everywhere(budi, "voice"):
                pytest.fail("two calls for one person")
        assert asyncio.get_running_loop().time() - started >= 0.2
        async with registry.claim_everywhere(_person("usr_sari"), "voice"):  # others are not held up
            pass
