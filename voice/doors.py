"""The voice doors on the HTTP app. Each authenticates the person the same way the text
API does, refuses what the protocol refuses, claims the person's one call slot, and
runs the shared pipeline with its own transport."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast
from zoneinfo import ZoneInfo

from fastapi import APIRouter, WebSocket
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport

from chat import ChatError, People, Person, TokenVerifier, Turns, parse_zone
from ledger import LedgerError, VoiceUsage
from voice.calls import Call, CallLimits, CallRefused, CallRegistry
from voice.pipeline import Engines, TurnTiming
from voice.session import CallSession
from voice.speaker import PIPELINE_RATE_IN, GuardedSocket, ProtocolError, SpeakerSerializer, parse_start, send_error
from voice.usage import UsageMeter

log = logging.getLogger(__name__)

# Checked before a call starts: raises a ChatError-like refusal (e.g. an empty wallet).
Guard = Callable[[Person], Awaitable[None]]
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
    # Refusal types from the guard that map to a close code other than 1008.
    guard_close_codes: dict[str, int] = field(default_factory=lambda: {"insufficient_balance": 4402})
    registry: CallRegistry = field(init=False)

    def __post_init__(self) -> None:
        self.registry = CallRegistry(self.limits)

    def meters(self, call: Call) -> list[FrameProcessor]:
        """The processors that bill a call's speech (none when billing is off)."""
        if self.bill is None:
            return []
        bill = self.bill

        async def charge(slice_index: int, usage: VoiceUsage) -> None:
            await bill(call, slice_index, usage)

        return [UsageMeter(charge)]

    async def person_for(self, token: str | None) -> Person | None:
        if not token:
            return None
        try:
            person = await self.people.get(await self.verifier.verify(token))
        except ChatError:
            return None
        return person


def _token(websocket: WebSocket) -> str | None:
    header = websocket.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return websocket.query_params.get("token")


def build_voice_router(doors: VoiceDoors) -> APIRouter:
    router = APIRouter(prefix="/v1/voice")

    @router.websocket("/speaker")
    async def speaker(websocket: WebSocket) -> None:
        await websocket.accept()
        person = await doors.person_for(_token(websocket))
        if person is None:
            await send_error(websocket, "unauthorized", "A valid bearer token is required.", 4401)
            return
        try:
            async with asyncio.timeout(doors.limits.start_timeout_s):
                first = await websocket.receive()
            if first["type"] != "websocket.receive":
                return
            start = parse_start(cast(dict[str, Any], first), parse_zone=parse_zone)
            if doors.guard is not None:
                await doors.guard(person)
        except TimeoutError:
            await send_error(websocket, "protocol_violation", "No start event arrived in time.", 1008)
            return
        except ProtocolError as exc:
            await send_error(websocket, exc.code, str(exc), exc.close_code)
            return
        except ChatError as exc:
            await send_error(websocket, exc.type, str(exc), doors.guard_close_codes.get(exc.type, 1008))
            return
        except LedgerError as exc:
            code = getattr(exc, "code", "ledger_error")
            await send_error(websocket, code, str(exc), doors.guard_close_codes.get(code, 1008))
            return
        zone = start.time_zone or parse_zone(person.time_zone)
        try:
            async with doors.registry.claim_everywhere(person, "voice") as call:
                await websocket.send_json({"type": "ready", "call_id": call.id, "sample_rate": start.sample_rate})
                await _run_speaker_call(doors, websocket, call, start.sample_rate, zone)
        except CallRefused as exc:
            await send_error(websocket, exc.code, str(exc), exc.close_code)

    from voice.phone import add_phone_route  # here, not at the top: voice.phone uses VoiceDoors

    add_phone_route(router, doors)
    return router


async def _run_speaker_call(doors: VoiceDoors, websocket: WebSocket, call: Call, rate: int, zone: ZoneInfo) -> None:
    session = CallSession(doors, call, zone=zone)

    async def hang_up() -> None:
        await session.end_now("client_hangup")

    transport = FastAPIWebsocketTransport(
        websocket=cast(WebSocket, GuardedSocket(websocket, doors.limits, on_hangup=hang_up)),
        params=FastAPIWebsocketParams(
            audio_in_enabled=True,
            audio_out_enabled=True,
            audio_in_sample_rate=PIPELINE_RATE_IN,
            audio_out_sample_rate=rate,
            audio_out_end_silence_secs=0,
            serializer=SpeakerSerializer(wire_rate=rate, call=call),
            allowed_origins=[],
        ),
    )
    session.build(transport, rate_in=PIPELINE_RATE_IN, rate_out=rate)

    async def gone(_transport: Any, _client: Any) -> None:
        await session.end_now("client_gone")

    transport.add_event_handler("on_client_disconnected", gone)
    await session.run()
    with contextlib.suppress(Exception):
        if websocket.application_state.name == "CONNECTED":
            await websocket.close(code=1000)
    log.info("call ended", extra={"call": call.id, "person": call.person.id, "reason": call.end_reason})
