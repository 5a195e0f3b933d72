"""What every voice door shares: who may call (people, tokens, the wallet's guard), the
turns a call runs, the speech engines, the limits, the live calls of this process and
how a call's speech is billed.

It lives apart from the doors (`voice.doors`, `voice.phone`, `voice.webrtc`) and the
call session so each of them imports it and none imports another for its type.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pipecat.processors.frame_processor import FrameProcessor

from chat import ChatError, Devices, People, Person, Tickets, TokenVerifier, Turns, is_device_token
from ledger import VoiceUsage
from telemetry import span
from voice.calls import Call, CallLimits, CallRegistry, Clock, MonotonicClock
from voice.phone_webhook import PhoneWebhook
from voice.pipeline import Engines, TurnTiming
from voice.tracing import CallTrace
from voice.usage import UsageMeter

log = logging.getLogger(__name__)

# Checked before a call starts: raises a domain error (e.g. an empty wallet) to refuse it.
Guard = Callable[[Person], Awaitable[object]]
# Charges one slice of a call's speech: (call, slice number, usage).
VoiceBill = Callable[[Call, int, VoiceUsage], Awaitable[object]]


@dataclass
class VoiceDoors:
    people: People
    verifier: TokenVerifier
    turns: Turns
    engines: Engines
    limits: CallLimits = field(default_factory=CallLimits)
    timing: TurnTiming = field(default_factory=TurnTiming)
    guard: Guard | None = None
    bill: VoiceBill | None = None
    # Single-use tickets a speaker may open its socket with instead of a token in the URL.
    tickets: Tickets | None = None
    # Paired speakers: a device token opens the speaker door (and nothing else).
    devices: Devices | None = None
    # Twilio's voice webhook: verified callers are connected, others refused (None: off).
    phone_webhook: PhoneWebhook | None = None
    # What the call limits measure time with (tests move a clock by hand).
    clock: Clock = field(default_factory=MonotonicClock)
    registry: CallRegistry = field(init=False)

    def __post_init__(self) -> None:
        self.registry = CallRegistry(self.limits)

    def meters(self, call: Call, trace: CallTrace | None = None) -> list[FrameProcessor]:
        """The processors that bill a call's speech (none when billing is off); each slice
        is a `voice charge` span under the exchange it bills (`trace`'s latest, else a root)."""
        if self.bill is None:
            return []
        bill = self.bill

        def charge(slice_index: int, usage: VoiceUsage) -> Awaitable[None]:
            # The exchange the slice bills is the latest now, when the slice ends; the
            # charge runs later, off the frame path (voice.usage), under that exchange.
            latest = trace.latest() if trace is not None else None

            async def charged() -> None:
                with span(
                    "voice charge",
                    within=latest.context if latest is not None else None,
                    root=latest is None,
                    call=call.id,
                    channel=call.channel,
                    slice=slice_index,
                    stt_ms=usage.stt_ms,
                    tts_characters=usage.tts_characters,
                ):
                    await bill(call, slice_index, usage)

            return charged()

        return [UsageMeter(charge)]

    async def person_for(self, token: str | None, *, ticket: str | None = None, door: str = "any") -> Person | None:
        """The person a bearer token (or else a door ticket good for `door`, used up here)
        names; None for anything else."""
        try:
            if token:
                return await self.people.get(await self.verifier.verify(token))
            if ticket and self.tickets is not None:
                return await self.people.get(await self.tickets.redeem(ticket, door=door))
        except ChatError:
            return None
        return None

    async def speaker_caller(self, token: str | None, *, ticket: str | None = None) -> tuple[Person, str | None] | None:
        """Who is at the speaker door: a paired device's person and its id, or a person
        by token or ticket (no device); None for anything else."""
        if token and is_device_token(token):
            if self.devices is None:
                return None
            try:
                caller = await self.devices.caller(token)
            except ChatError:
                return None
            person = await self.people.get(caller.person_id)
            return None if person is None else (person, caller.device_id)
        person = await self.person_for(token, ticket=ticket)
        return None if person is None else (person, None)

    async def end_device_calls(self, device_id: str | None) -> None:
        """End the live call of a device that was revoked (None: re-check every device
        call against the database, after a notification may have been missed). The call
        hangs up at once with `device_revoked` and closes 4401."""
        for call in self.registry.live():
            if call.device_id is None or call.end_reason is not None:
                continue
            if device_id is not None and call.device_id != device_id:
                continue
            if device_id is None and (self.devices is None or await self.devices.paired(call.device_id)):
                continue
            log.info("device revoked: ending its call", extra={"call": call.id})
            call.end_reason = "device_revoked"
            if call.cutter is not None:
                with contextlib.suppress(Exception):
                    await call.cutter()

    async def end_all_calls(self, *, reason: str, timeout_s: float) -> None:
        """End every live call of this process, on every door: Ava says a short goodbye
        (the call hangs up after it with `reason`, close 1000), and whatever has not
        ended within `timeout_s` is cut. Returns once no call is live or the time is up;
        the graceful shutdown calls it before the server stops."""
        deadline = time.monotonic() + timeout_s
        for call in self.registry.live():
            if call.ender is not None:
                with contextlib.suppress(Exception):
                    await call.ender(reason)
        # Three quarters of the time for the goodbyes; what is still live then is cut.
        if await self.registry.emptied(timeout_s=(deadline - time.monotonic()) * 3 / 4):
            return
        for call in self.registry.live():
            call.end_reason = call.end_reason or reason
            if call.cutter is not None:
                with contextlib.suppress(Exception):
                    await call.cutter()
        if not await self.registry.emptied(timeout_s=deadline - time.monotonic()):
            log.warning("%d calls still live after %.1f s", len(self.registry), timeout_s)
