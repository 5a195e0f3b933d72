"""What the tests of `FinishedWordsStop` share: the strategy set up on a clock the test moves,
with the turns it ends collected. Its waits are real asyncio sleeps of its own (0.05 s and
0.5 s here); the clock it reads is the test's, which makes its decisions exact."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pipecat.utils.asyncio.task_manager import TaskManager

from voice.turn_end import FinishedWordsStop

FINISHED_S, UNFINISHED_S = 0.05, 0.5


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def strategy(
    clock: Clock, stop: FinishedWordsStop | None = None, **kwargs: Any
) -> tuple[FinishedWordsStop, list[str]]:
    """`stop` (by default one with the waits above and `kwargs`), started, and the words of
    every turn it ends, in order."""
    stop = stop or FinishedWordsStop(finished_s=FINISHED_S, unfinished_s=UNFINISHED_S, clock=clock, **kwargs)
    await stop.setup(SimpleNamespace(task_manager=TaskManager()))  # type: ignore[arg-type]
    ended: list[str] = []

    async def on_stopped(_strategy: Any, _params: Any) -> None:
        ended.append(stop.text)
        await stop.handle_user_turn_stopped()

    stop.add_event_handler("on_user_turn_stopped", on_stopped)
    await stop.handle_user_turn_started()
    return stop, ended
