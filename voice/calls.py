"""Calls in this process: who is on one, how long they may last, and the bridge from a
call to a text-style turn.

A person has at most one live call and a process at most `per_process_max`; a call
lasts at most `duration_max_s`, and after `idle_s / 2` of silence Ava asks whether the
person is still there, hanging up at `idle_s`. Turns from a call run detached from the
call itself: a caller who vanishes mid-sentence never leaves a half-written turn.

Someone who hangs up and calls straight back reaches the server while their last call is
still letting go (its pipeline ends a few milliseconds after the socket closes): a new
call waits up to `handover_s` for the person's previous one, here and in other processes,
before it is refused as a second call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from pipecat.frames.frames import (
    BotSpeakingFrame,
    BotStartedSpeakingFrame,
    Frame,
    OutputAudioRawFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from agents import Segment, SpokenReply
from chat import Person, Turns, detach
from telemetry import metrics, span
from voice.agent import VoiceTurn, live_speech
from voice.edge import DOMAIN_ERRORS, notice_for
from voice.errors import CallInProgress, CallsBusy

log = logging.getLogger(__name__)

_PERSON_SPEAKING = (TranscriptionFrame, UserStartedSpeakingFrame, UserStoppedSpeakingFrame)
_AVA_SPEAKING = (BotSpeakingFrame, BotStartedSpeakingFrame)


@dataclass(frozen=True, slots=True)
class CallLimits:
    duration_max_s: float = 15 * 60
    idle_s: float = 120.0
    frame_bytes_max: int = 64 * 1024
    per_process_max: int = 16
    start_timeout_s: float = 10.0
    # How long a new call waits for the person's previous call to let go before refusing.
    handover_s: float = 2.0


# Ends a live call for a reason, with a spoken goodbye where the call can still speak.
CallEnder = Callable[[str], Awaitable[None]]


@dataclass
class Call:
    id: str
    person: Person
    channel: str
    started_at: float = field(default_factory=time.monotonic)
    end_reason: str | None = None
    # The paired device the call came through (speaker door, device token); its
    # revocation ends the call (docs/sockets.md#authentication).
    device_id: str | None = None
    # Set by the call's session once it runs: how to end it from outside (a shutdown),
    # with a goodbye (`ender`) or at once (`cutter`).
    ender: CallEnder | None = None
    cutter: Callable[[], Awaitable[None]] | None = None
    # Says something on the call unprompted (a wake note firing mid-call); set by the session.
    speak: Callable[[SpokenReply], Awaitable[None]] | None = None


class CallSlot(Protocol):
    """Holds a person's one call slot beyond this process (see `voice.call_slots`)."""

    def hold(self, person_id: str, *, wait_s: float = 0.0) -> contextlib.AbstractAsyncContextManager[None]: ...


class CallRegistry:
    """Live calls of this process, by person (and, with `slots`, across processes)."""

    def __init__(self, limits: CallLimits) -> None:
        self.limits = limits
        self._calls: dict[str, Call] = {}
        self._released: dict[str, asyncio.Event] = {}  # set when that person's call has let go
        self._empty = asyncio.Event()
        self._empty.set()
        # Set by the composition root to make "one call per person" hold across instances.
        self.slots: CallSlot | None = None

    def __len__(self) -> int:
        return len(self._calls)

    def live(self) -> list[Call]:
        return list(self._calls.values())

    def live_for(self, person_id: str) -> Call | None:
        """The person's call in this process, if one is live and can be spoken on."""
        call = self._calls.get(person_id)
        return call if call is not None and call.end_reason is None and call.speak is not None else None

    async def emptied(self, *, timeout_s: float) -> bool:
        """Wait until no call is live, for at most `timeout_s`; whether none is."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(timeout_s, 0)):
                await self._empty.wait()
        return not self._calls

    @contextlib.contextmanager
    def claim(self, person: Person, channel: str) -> Any:
        if person.id in self._calls:
            raise CallInProgress("You are already on a call.")
        if len(self._calls) >= self.limits.per_process_max:
            raise CallsBusy("Too many calls right now; try again shortly.")
        call = Call(id=f"call_{secrets.token_hex(8)}", person=person, channel=channel)
        self._calls[person.id] = call
        released = self._released[person.id] = asyncio.Event()
        self._empty.clear()
        try:
            yield call
        finally:
            self._calls.pop(person.id, None)
            if self._released.get(person.id) is released:
                del self._released[person.id]
            released.set()
            if not self._calls:
                self._empty.set()

    async def _previous_call_ended(self, person_id: str) -> None:
        """Wait up to `handover_s` for the person's call in this process to let go."""
        released = self._released.get(person_id)
        if released is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.limits.handover_s):
                await released.wait()

    @contextlib.asynccontextmanager
    async def claim_everywhere(self, person: Person, channel: str) -> AsyncIterator[Call]:
        """`claim`, and also the person's slot across server processes when `slots` is set,
        each after waiting a moment for a previous call that is letting go."""
        await self._previous_call_ended(person.id)
        with self.claim(person, channel) as call:
            if self.slots is None:
                yield call
                return
            async with self.slots.hold(person.id, wait_s=self.limits.handover_s):
                yield call


def _report_after_reply(said: asyncio.Future[SpokenReply], call_id: str) -> Callable[[asyncio.Future[Any]], None]:
    """A turn that fails after its reply was spoken has nobody left to tell: it is logged."""

    def report(turn: asyncio.Future[Any]) -> None:
        if turn.cancelled():
            return
        # Read in every case (so asyncio never warns); before the reply, `run` raises it.
        if (exc := turn.exception()) is not None and said.done():
            log.error("voice turn failed after its reply was spoken", exc_info=exc, extra={"call": call_id})

    return report


class CallForesight:
    """The words of a call's turn about to end, handed to the chat before the turn ends, so
    Ava's first model call begins on them (chat.speculation; voice.turn_end's `Foresight`).
    A guess that cannot be made (the database away) is logged and the turn runs as before."""

    def __init__(self, turns: Turns, call: Call, *, zone: ZoneInfo) -> None:
        self._turns = turns
        self._call = call
        self._zone = zone
        self._guess: asyncio.Task[bool] | None = None  # the newest guess being made
        # Billing the guesses the call dropped, started by `close` and left to run on its own.
        self.billing: asyncio.Task[int] | None = None

    def heard(self, text: str) -> None:
        if self._call.end_reason is not None:
            return
        self._guess = asyncio.get_running_loop().create_task(self._foresee(text[:4000]), name="call-foresight")

    def resumed(self) -> None:
        self._turns.unforeseen(self._call.person.id)

    async def close(self) -> None:
        """The call is over: a guess still out is withdrawn, and the person's guesses that
        no turn adopted are billed with a run of their own (docs/money.md#a-speculative-
        first-call), in detached work the call's end does not wait for. A dropped guess
        reports its usage when its stream next sends (up to chat.speculation's
        SETTLE_TIMEOUT_S, 30 s), and a call's end held that long kept a person who called
        straight back out of their next call (CallLimits.handover_s is 2 s). The billing
        is waited for at shutdown with the rest of the detached work (chat.detached)."""
        if self._guess is not None and not self._guess.done():
            self._guess.cancel()
        # Withdrawn now, not when the billing task first runs: the guess stops sending.
        self._turns.unforeseen(self._call.person.id)
        if self.billing is None:
            self.billing = detach(self._bill_dropped(), name="call-foresight-billing")

    async def _bill_dropped(self) -> int:
        """Billing that cannot be done now (the database away) is logged; the calls then
        wait for the person's next turn, as a dropped guess did before."""
        try:
            return await self._turns.bill_dropped(self._call.person, channel=self._call.channel)  # type: ignore[arg-type]
        except Exception as exc:
            log.warning(
                "dropped speculative calls not billed at the call's end: %s",
                type(exc).__name__,
                extra={"call": self._call.id},
            )
            return 0

    async def _foresee(self, text: str) -> bool:
        try:
            return await self._turns.foresee(
                self._call.person,
                text=text,
                channel=self._call.channel,  # type: ignore[arg-type]
                zone=self._zone,
            )
        except Exception as exc:
            log.warning("no speculative first call: %s", type(exc).__name__, extra={"call": self._call.id})
            return False


def voice_turn(turns: Turns, call: Call, *, zone: ZoneInfo) -> VoiceTurn:
    """A call's turns go through the same router, runtime, thread and wallet as text. A
    turn refused on a live call is never silence: Ava says why, and an error that ends
    the call (an empty wallet) names the hang-up reason."""

    async def run(text: str) -> SpokenReply | None:
        # Ava's reply is spoken as soon as she has said it; the turn writes it down and
        # settles its charges meanwhile (its end is still waited for by the next turn,
        # which queues on the thread). The turn itself is detached: a hang-up never cuts it.
        said: asyncio.Future[SpokenReply] = asyncio.get_running_loop().create_future()

        def heard(reply: SpokenReply) -> None:
            if not said.done():
                said.set_result(reply)

        # Spoken as it goes when the agent awaiting this turn can (voice.agent.live_speech).
        live = live_speech()
        turn = detach(
            turns.post(
                call.person,
                text=text[:4000],
                channel=call.channel,  # type: ignore[arg-type]
                zone=zone,
                on_reply=heard,
                on_say=live.say if live is not None else None,
                stop=live.stop if live is not None else None,
            ),
            name="voice-turn",
        )
        turn.add_done_callback(_report_after_reply(said, call.id))
        try:
            await asyncio.wait((turn, said), return_when=asyncio.FIRST_COMPLETED)
            if said.done():
                return said.result()
            result = turn.result()
        except DOMAIN_ERRORS as exc:
            log.info("voice turn refused: %s", getattr(exc, "type", ""), extra={"call": call.id})
            notice, reason = notice_for(exc)
        except Exception as exc:
            log.exception("voice turn failed", extra={"call": call.id})
            notice, reason = notice_for(exc)
        else:
            return result.spoken
        if reason is not None and call.end_reason is None:
            call.end_reason = reason
        return notice

    return run


class Clock(Protocol):
    """Time as the call limits see it; tests pass a clock they move by hand."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """The real clock: monotonic seconds, asyncio's sleep."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class CallClock:
    """Ends calls that run too long or fall silent, speaking before it hangs up."""

    def __init__(
        self,
        call: Call,
        limits: CallLimits,
        *,
        speak: Callable[[SpokenReply], Awaitable[None]],
        clock: Clock | None = None,
        tick_s: float = 0.5,
    ) -> None:
        self._call = call
        self._limits = limits
        self._speak = speak
        self._clock = clock or MonotonicClock()
        self._tick_s = tick_s
        self._started = self._clock.now()
        self._last_activity = self._started
        self._checked = False

    def activity(self, *, by_person: bool = True) -> None:
        """Someone spoke. Ava's own "are you still there?" must not restart the silence it
        asks about, so once the check is out only the person resets the idle clock."""
        if by_person:
            self._last_activity = self._clock.now()
            self._checked = False
        elif not self._checked:
            self._last_activity = self._clock.now()

    async def run(self) -> None:
        while self._call.end_reason is None:
            await self._clock.sleep(self._tick_s)
            now = self._clock.now()
            if self._call.end_reason is not None:
                return
            if now - self._started >= self._limits.duration_max_s:
                await self._end("max_duration", "We've been talking for a while, so I'll let you go now. Bye!")
            elif now - self._last_activity >= self._limits.idle_s:
                await self._end("idle", "I'll hang up for now. Call me anytime!")
            elif now - self._last_activity >= self._limits.idle_s / 2 and not self._checked:
                self._checked = True
                # Its own small trace: the `say` span with the sentence's tts comes under it.
                with span("idle prompt", root=True, call=self._call.id, channel=self._call.channel):
                    await self._speak(SpokenReply((Segment("Are you still there?", "thinking"),), end_call=False))

    async def _end(self, reason: str, goodbye: str) -> None:
        self._call.end_reason = reason
        await self._speak(SpokenReply((Segment(goodbye, "affectionate"),), end_call=True))


@contextlib.asynccontextmanager
async def running(coroutine: Awaitable[None]) -> AsyncIterator[None]:
    """Run a background coroutine for the length of a block."""
    task = asyncio.ensure_future(coroutine)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class ActivityTap(FrameProcessor):
    """Tells the call clock whenever either side is speaking."""

    def __init__(self, clock: CallClock, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._clock = clock

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, _PERSON_SPEAKING):
            self._clock.activity()
        elif isinstance(frame, _AVA_SPEAKING):
            self._clock.activity(by_person=False)
        await self.push_frame(frame, direction)


class ResponseTimer(FrameProcessor):
    """Measures, for /metrics, how long the person waits: from the end of their speech (the
    VAD's stop, or the turn's stop where no VAD frame comes this far) to the first frame of
    Ava's audio that follows it (docs/operations.md#metrics). Speaking again starts over."""

    def __init__(self, channel: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._channel = channel
        self._stopped_at: float | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, (VADUserStartedSpeakingFrame, UserStartedSpeakingFrame)):
            self._stopped_at = None
        elif isinstance(frame, (VADUserStoppedSpeakingFrame, UserStoppedSpeakingFrame)):
            if self._stopped_at is None:
                self._stopped_at = time.monotonic()
        elif (
            isinstance(frame, OutputAudioRawFrame)
            and direction is FrameDirection.DOWNSTREAM
            and self._stopped_at is not None
        ):
            metrics.voice_response_seconds.observe(time.monotonic() - self._stopped_at, channel=self._channel)
            self._stopped_at = None
        await self.push_frame(frame, direction)
