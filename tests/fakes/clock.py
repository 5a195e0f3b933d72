"""A clock moved by hand, for the call limits (`voice.calls.Clock`): time stands still
until a test advances it, so a limit fires exactly when the test says, on any machine."""

from __future__ import annotations

import asyncio


class ManualClock:
    def __init__(self) -> None:
        self._now = 0.0
        self._moved = asyncio.Condition()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        until = self._now + seconds
        async with self._moved:
            await self._moved.wait_for(lambda: self._now >= until)

    async def advance(self, seconds: float) -> None:
        """Move time on and let every sleeper that is due wake and act."""
        self._now += seconds
        async with self._moved:
            self._moved.notify_all()
        for _ in range(5):
            await asyncio.sleep(0)
