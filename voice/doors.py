"""The voice doors on the HTTP app. Each authenticates the person the same way the text
API does, refuses what the protocol refuses, claims the person's one call slot, and
runs the shared pipeline with its own transport.

Every refusal is a domain error (chat's, the ledger's or voice's) and goes out through
one translator, `voice.edge.refuse`: the sockets' error event, then the close code its type
names (docs/sockets.md#close-codes).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast
from zoneinfo import ZoneInfo

from fastapi import APIRouter, WebSocket
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport

from chat import Unauthorized, parse_zone
from voice.calls import Call
from voice.edge import DOMAIN_ERRORS, refuse
from voice.errors import ProtocolViolation
from voice.phone import add_phone_route
from voice.session import CallSession
from voice.shared import VoiceDoors
from voice.speaker import PIPELINE_RATE_IN, GuardedSocket, SpeakerSerializer, parse_start

log = logging.getLogger(__name__)

__all__ = ["VoiceDoors", "build_voice_router"]


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
        try:
            caller = await doors.speaker_caller(_token(websocket), ticket=websocket.query_params.get("ticket"))
            if caller is None:
                raise Unauthorized("A valid bearer token is required.")
            person, device_id = caller
            try:
                async with asyncio.timeout(doors.limits.start_timeout_s):
                    first = await websocket.receive()
            except TimeoutError as exc:
                raise ProtocolViolation("No start event arrived in time.") from exc
            if first["type"] != "websocket.receive":
                return
            start = parse_start(
                cast(dict[str, Any], first), parse_zone=parse_zone, bytes_max=doors.limits.frame_bytes_max
            )
            if doors.guard is not None:
                await doors.guard(person)
            zone = start.time_zone or parse_zone(person.time_zone)
            async with doors.registry.claim_everywhere(person, "voice") as call:
                call.device_id = device_id
                await websocket.send_json({"type": "ready", "call_id": call.id, "sample_rate": start.sample_rate})
                await _run_speaker_call(doors, websocket, call, start.sample_rate, zone)
        except DOMAIN_ERRORS as exc:
            log.info("speaker call refused: %s", getattr(exc, "type", ""))
            await refuse(websocket, exc)

    add_phone_route(router, doors)
    return router


async def _run_speaker_call(doors: VoiceDoors, websocket: WebSocket, call: Call, rate: int, zone: ZoneInfo) -> None:
    session = CallSession(doors, call, zone=zone)

    async def hang_up() -> None:
        await session.end_now("client_hangup")

    guarded = GuardedSocket(websocket, doors.limits, call, on_hangup=hang_up)
    transport = FastAPIWebsocketTransport(
        websocket=cast(WebSocket, guarded),
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
    await guarded.close(code=1000)  # 4402 when the call ended for an empty wallet
    log.info("call ended", extra={"call": call.id, "person": call.person.id, "reason": call.end_reason})
