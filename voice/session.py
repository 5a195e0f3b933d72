"""One call's moving parts, the same for every door: Ava's voice processor bound to the
person, the call clock, the shared pipeline around the door's transport, and the runner.

A door only makes its transport (and says what its peer leaving means); everything else
about running a call — the goodbye ending it, the idle and length limits, metering the
speech for the wallet, being ended from outside with a goodbye (a shutdown, through
`Call.ender`) — lives here once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Sequence
from zoneinfo import ZoneInfo

from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.transports.base_transport import BaseTransport
from pipecat.workers.runner import WorkerRunner

from agents import Segment, SpokenReply
from voice.agent import AvaVoiceAgent
from voice.calls import ActivityTap, Call, CallClock, CallForesight, ResponseTimer, running, voice_turn
from voice.pipeline import build_call
from voice.shared import VoiceDoors
from voice.tracing import CallTrace

# What Ava says when the server ends a call (a shutdown): short, so it fits the drain.
_GOODBYES = {"shutdown": "I have to go for a moment. Call me again soon. Bye!"}
_GOODBYE_OTHERWISE = "I have to hang up now. Bye!"
NARROWBAND_BELOW_HZ = 16_000


class CallSession:
    def __init__(self, doors: VoiceDoors, call: Call, *, zone: ZoneInfo) -> None:
        self.doors = doors
        self.call = call
        self.agent = AvaVoiceAgent(voice_turn(doors.turns, call, zone=zone), on_end_call=self._agent_ended)
        # Ava's first model call begins on the words while the person's turn ends (chat.speculation).
        self.foresight = CallForesight(doors.turns, call, zone=zone) if doors.timing.speculative_first_call else None
        self.clock = CallClock(call, doors.limits, speak=self.say, clock=doors.clock)
        # Each of the call's turns is one trace, from the person's speech to Ava's last audio.
        self.trace = CallTrace(call_id=call.id, channel=call.channel, person_id=call.person.id)
        call.speak = self.say
        self._worker: PipelineWorker | None = None
        call.ender = self.end_with_goodbye
        call.cutter = call.cutter or self._cut  # a door may know a better way to cut

    async def say(self, reply: SpokenReply) -> None:
        """Say `reply` on the call unprompted (a wake note's, the clock's), as a `say` span
        under the trace current here, its sentences' tts under it (voice.tracing)."""
        await self.agent.speak(reply, traced=self.trace.unprompted())

    def _agent_ended(self) -> None:
        if self.call.end_reason is None:
            self.call.end_reason = "agent_ended"

    def build(
        self,
        transport: BaseTransport,
        *,
        rate_in: int,
        rate_out: int,
        extra: Sequence[FrameProcessor] = (),
        narrowband: bool | None = None,
    ) -> PipelineWorker:
        """The shared pipeline around this door's transport; `narrowband` says whether the
        person's audio lost its upper band on the way (by default: the rate out is below 16 kHz)."""
        built = build_call(
            transport=transport,
            engines=self.doors.engines,
            agent=self.agent,
            sample_rate_in=rate_in,
            sample_rate_out=rate_out,
            timing=self.doors.timing,
            before_output=[
                ActivityTap(self.clock),
                ResponseTimer(self.call.channel),
                *self.doors.meters(self.call, self.trace),
                *extra,
            ],
            language=self.call.person.language,  # the recogniser and voice of the person's language
            # A door's wire rate is the person's audio's too (the speaker's and the phone's
            # one rate both ways); below 16 kHz it lost its upper band on the way.
            narrowband=rate_out < NARROWBAND_BELOW_HZ if narrowband is None else narrowband,
            trace=self.trace,
            foresight=self.foresight,
        )
        self._worker = built.worker
        return built.worker

    async def end_now(self, reason: str) -> None:
        """The peer is gone or asked to go: stop at once, no goodbye, no drain."""
        if self.call.end_reason is None:
            self.call.end_reason = reason
        if self._worker is not None:
            await self._worker.cancel()

    async def end_with_goodbye(self, reason: str) -> None:
        """End the call from outside: Ava says goodbye (not interruptible), then the call
        hangs up with `reason` after the last audio byte. A call already ending is left
        to end as it is."""
        if self.agent.ending or self._worker is None:
            return
        if self.call.end_reason is None:
            self.call.end_reason = reason
        goodbye = _GOODBYES.get(reason, _GOODBYE_OTHERWISE)
        await self.say(SpokenReply((Segment(goodbye, "affectionate"),), end_call=True))

    async def _cut(self) -> None:
        await self.end_now(self.call.end_reason or "shutdown")

    async def run(self, *alongside: Awaitable[None]) -> None:
        """Run the call to its end, with the clock (and any other watchers) beside it."""
        assert self._worker is not None, "build() the pipeline first"
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(self._worker)
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(running(self.clock.run()))
            stack.callback(self.trace.end_all)  # however the call ends, its turns' spans do
            if self.foresight is not None:
                stack.push_async_callback(self.foresight.close)  # a guess left out is withdrawn, and billed
            for watcher in alongside:
                await stack.enter_async_context(running(watcher))
            await runner.run()
