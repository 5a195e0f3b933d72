"""A call's first model call begun on words the person may still change.

On a call the transcript of what the person said is often ready before their turn is
over: the end-of-turn wait is still running when the recogniser has the words
(voice.turn_end). The turn's first model call, the lead agent's, is the longest wait of a
spoken turn (docs/agents.md#streaming), so it is started there, on those words, with the
request the turn would send: the thread as it stands plus the words as its newest message.
Nothing is written to the thread and nothing it generates is said or kept until the turn
ends with the same words; the turn then adopts the call in flight as its first call
(`adopt`), after writing the person's message. When the words change, or the person goes
on speaking, the call is stopped (`drop`) and billed for what it consumed with the
person's next turn, or at the call's end with a run of its own when the call ends first
(docs/money.md#a-speculative-first-call).

A speculation is only a guess at a request: the turn adopts it only when its own first
request is equal to it, field for field; anything else (a message from another door, a
new minute on the clock, other facts) drops it. So the guess is built as the turn will
build its own, from the same reads, and the comparison stays whole rather than looking
only at what "matters": a loosened comparison could adopt a request that misses a
message the turn would have seen. In particular the turn reads the thread's newest page
after writing the words, so the guess reads the page before them one row short: on a
thread longer than a page it once read one old line more than its turn, and past about
200 messages no guess of a call was adopted (BENCHMARKS.md#speculation-adopted-along-a-long-run).
What differed is counted by part (`differs`, docs/operations.md): only `words` (the
minute turned over between hearing and writing them) is expected now, and any other
part rising says the guess and its turn read different things.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from agents import ModelRequest, ModelResponse, StopSignal, Usage

# How long a dropped call may take to report what it consumed (its first chunk carries the
# prompt's usage; the adapter's own timeout bounds it too) before it is given up on.
SETTLE_TIMEOUT_S = 30.0
# Dropped calls a person may have waiting for their next turn's bill: past it, no new
# speculation starts for them (a halting speaker never piles up unbilled calls).
DROPPED_MAX = 8
# People with dropped calls waiting in this process: past it, no one else's speculation
# starts until some of them have a turn (the waiting list is bounded whoever never returns).
DROPPED_PEOPLE_MAX = 1_000
_WORD = re.compile(r"\w+(?:'\w+)?")


def words_of(text: str) -> str:
    """The words as the turn compares them: lower case, no punctuation (Whisper writes
    "Turn on the light." and "turn on the light" for the same speech)."""
    return " ".join(_WORD.findall(text.lower()))


@dataclass(frozen=True, slots=True)
class Consumed:
    """What a dropped call consumed, as the provider reported it."""

    model: str
    usage: Usage


@dataclass
class Speculation:
    """One lead agent's first model call, begun on `text` at `now` (the clock its session
    layer reads, which the turn adopting it reads too)."""

    person_id: str
    text: str
    agent: str
    now: datetime
    facts: tuple[str, ...]
    request: ModelRequest
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _pieces: list[str] = field(default_factory=list)
    _listener: Callable[[str], None] | None = None
    _turn_stop: StopSignal | None = None
    _task: asyncio.Task[ModelResponse] | None = None

    @property
    def words(self) -> str:
        return words_of(self.text)

    def heard(self, piece: str) -> None:
        """A piece of the answer's text: kept until adopted, then passed on as it comes."""
        if self._listener is None:
            self._pieces.append(piece)
        else:
            self._listener(piece)

    def is_set(self) -> bool:
        """The stop the stream asks between pieces: dropped, or the adopting turn's stop."""
        return self._stop.is_set() or (self._turn_stop is not None and self._turn_stop.is_set())

    def begin(self, task: asyncio.Task[ModelResponse]) -> None:
        self._task = task
        task.add_done_callback(_seen)

    async def adopt(self, on_text: Callable[[str], None], stop: StopSignal | None) -> ModelResponse:
        """The call as the turn's own: what it wrote so far is heard now, the rest as it
        comes, and the turn's `stop` cuts it; its answer is the call's answer."""
        assert self._task is not None, "a speculation is begun before it is adopted"
        assert not self._stop.is_set(), "only a live speculation is adopted"
        self._turn_stop = stop
        pieces, self._pieces = self._pieces, []
        for piece in pieces:
            on_text(piece)
        self._listener = on_text
        return await self._task

    def drop(self) -> None:
        """Stop it: its stream ends at its next piece, and reports what it consumed."""
        self._stop.set()

    async def consumed(self) -> Consumed | None:
        """What the dropped call consumed (None: it failed before the provider reported
        anything, or did not report in time)."""
        assert self._task is not None, "a speculation is begun before it is billed"
        assert self._stop.is_set(), "only a dropped speculation is billed"
        task = self._task
        await asyncio.wait({task}, timeout=SETTLE_TIMEOUT_S)  # never raises the call's error
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            return None
        if task.cancelled():
            return None
        if (error := task.exception()) is not None:  # a stream that broke still reports what it sent
            usage = getattr(error, "usage", Usage())
            return Consumed(self.request.model, usage) if usage != Usage() else None
        response = task.result()
        return Consumed(response.model or self.request.model, response.usage)


# What a turn's request can differ from its guess in, first one first (`differs`): bounded,
# so it can label a counter (docs/operations.md).
PARTS = ("model", "instruction", "history", "words", "tools")


def differs(guessed: ModelRequest, real: ModelRequest) -> str | None:
    """The first part of the turn's `real` request that is not the guess's (None: none is):
    the model; the instruction (the session layer's clock, facts, last message's time);
    the history before the words (a message written meanwhile, another window); the words'
    own line (its minute: heard at :59, written at :00); the tools."""
    if guessed.model != real.model:
        return "model"
    if guessed.system != real.system:
        return "instruction"
    if guessed.contents[:-1] != real.contents[:-1]:
        return "history"
    if guessed.contents[-1:] != real.contents[-1:]:
        return "words"
    if guessed.tools != real.tools:
        return "tools"
    return None


def _seen(task: asyncio.Task[ModelResponse]) -> None:
    """A call never adopted nor billed (its call ended, no turn came) still has its outcome
    collected, so asyncio never reports it as lost."""
    if not task.cancelled():
        task.exception()
