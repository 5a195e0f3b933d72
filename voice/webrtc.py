"""The browser call door (docs/sockets.md#browser-call-page): SmallWebRTC signalling at `POST`/`PATCH
/v1/voice/webrtc/offer`. The page that calls is the web app's call view (web/static/call.js).

Signalling is authenticated like the text API, and a peer connection answers only to the
person who opened it. A new offer claims the person's one call slot; the call's task
(detached from the HTTP request, kept in `_CALLS`) holds the slot until the peer leaves,
Ava says goodbye, a limit ends the call, or the peer never connects. The pipeline is the
one every door uses; captions travel on the WebRTC data channel as the same transcript
events the speaker door sends. No STUN/TURN unless `ice_servers` are given.

(No `from __future__ import annotations` here: FastAPI must evaluate the dependency
annotations of the routes, which refer to names local to the router builder.)
"""

import asyncio
import contextlib
import logging
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Header
from pipecat.frames.frames import EndFrame, Frame, OutputTransportMessageFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.transports.base_transport import TransportParams
from pipecat.transports.smallwebrtc.connection import IceServer, SmallWebRTCConnection
from pipecat.transports.smallwebrtc.request_handler import (
    IceCandidate,
    SmallWebRTCPatchRequest,
    SmallWebRTCRequest,
    SmallWebRTCRequestHandler,
)
from pipecat.transports.smallwebrtc.transport import SmallWebRTCTransport
from pydantic import BaseModel, ConfigDict, Field

from chat import Person, Unauthorized, parse_zone
from voice.calls import Call
from voice.errors import CallNotFound, OfferInvalid
from voice.session import CallSession
from voice.shared import VoiceDoors
from web import KeepableStr, problem_responses

log = logging.getLogger(__name__)

SAMPLE_RATE_IN = 16_000  # what Silero VAD and the STT engines take
SAMPLE_RATE_OUT = 24_000  # Opus resamples to 48 kHz on the wire; 24 kHz is what the TTS engines make
# Silence after the last word before the peer connection closes: closing drops whatever the
# browser's jitter buffer still holds, which would clip the end of a goodbye. Pipecat takes
# whole seconds here.
END_SILENCE_S = 1
ANSWER_TIMEOUT_S = 10.0
SDP_CHARS_MAX = 32_000
CANDIDATES_MAX = 64

# Calls outlive the request that started them; they are kept here until they end.
_CALLS: set[asyncio.Task[None]] = set()


class Offer(BaseModel):
    # Pipecat's own clients also send `requestData`; it carries nothing we use.
    model_config = ConfigDict(extra="ignore")

    sdp: KeepableStr = Field(min_length=1, max_length=SDP_CHARS_MAX)
    type: Literal["offer"]
    pc_id: KeepableStr | None = Field(default=None, max_length=200, description="Set to renegotiate a live call.")
    restart_pc: bool | None = None


class Answer(BaseModel):
    sdp: str
    type: str
    pc_id: str


class Candidate(BaseModel):
    candidate: KeepableStr = Field(max_length=1000, description="An SDP candidate line; empty marks end-of-candidates.")
    sdp_mid: KeepableStr = Field(max_length=32)
    sdp_mline_index: int = Field(ge=0, le=16)


class Candidates(BaseModel):
    pc_id: KeepableStr = Field(max_length=200)
    candidates: list[Candidate] = Field(max_length=CANDIDATES_MAX)


class HangupNotice(FrameProcessor):
    """Tells the page why the call ends, in order after the last audio (a speaker gets
    the same `hangup` event from its serializer)."""

    def __init__(self, call: Call, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._call = call

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, EndFrame):
            notice = {"type": "hangup", "reason": self._call.end_reason or "agent_ended"}
            await self.push_frame(OutputTransportMessageFrame(message=notice))
        await self.push_frame(frame, direction)


def build_webrtc_router(doors: VoiceDoors, *, ice_servers: list[str] | None = None) -> APIRouter:
    handler = SmallWebRTCRequestHandler(ice_servers=[IceServer(urls=url) for url in ice_servers or []])
    owners: dict[str, str] = {}  # live peer connection id -> the person it belongs to
    router = APIRouter()

    async def caller(authorization: Annotated[str | None, Header()] = None) -> Person:
        scheme, _, token = (authorization or "").partition(" ")
        person = await doors.person_for(token.strip() if scheme.lower() == "bearer" else None)
        if person is None:
            raise Unauthorized("Send Authorization: Bearer <token>.")
        return person

    async def call_zone(
        person: Annotated[Person, Depends(caller)],
        time_zone: Annotated[str | None, Header(alias="time-zone")] = None,
    ) -> ZoneInfo:
        return parse_zone(time_zone or person.time_zone)

    @router.post(
        "/v1/voice/webrtc/offer",
        response_model=Answer,
        tags=["voice"],
        responses=problem_responses(400, 401, 402, 404, 409, 413, 422, 503),
    )
    async def offer(
        body: Offer,
        person: Annotated[Person, Depends(caller)],
        zone: Annotated[ZoneInfo, Depends(call_zone)],
    ) -> dict[str, str]:
        """SmallWebRTC signalling: an SDP offer in, the answer (with every server candidate) out.
        With `pc_id`, renegotiates the caller's live call; without, starts a call."""
        if body.pc_id is not None:
            return await _renegotiate(handler, body, owned=owners.get(body.pc_id) == person.id)
        if not any(line.startswith("m=audio ") for line in body.sdp.splitlines()):
            raise OfferInvalid("The offer must carry audio: add the microphone track before making it.")
        if doors.guard is not None:
            await doors.guard(person)
        async with contextlib.AsyncExitStack() as stack:
            call = await stack.enter_async_context(doors.registry.claim_everywhere(person, "voice"))
            answered: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()
            slot = stack.pop_all()  # from here on the call's task releases the slot
        task = asyncio.create_task(_call(doors, handler, owners, body, call, zone, slot, answered))
        _CALLS.add(task)
        task.add_done_callback(_CALLS.discard)

        async def cut() -> None:  # cancelling the call's task ends its pipeline in order
            task.cancel()

        call.cutter = cut
        # Shielded: a client that gives up waiting leaves the call to time out on its own.
        return await asyncio.shield(answered)

    @router.patch("/v1/voice/webrtc/offer", tags=["voice"], responses=problem_responses(400, 401, 404, 413, 422))
    async def candidates(body: Candidates, person: Annotated[Person, Depends(caller)]) -> dict[str, str]:
        """Trickle ICE: the browser's candidates for a call it has an answer for."""
        if owners.get(body.pc_id) != person.id:
            raise CallNotFound("That call is not live.")
        for candidate in body.candidates:
            if candidate.candidate and len(candidate.candidate.split()) < 8:
                raise OfferInvalid("A candidate must be an SDP candidate line.")
        request = SmallWebRTCPatchRequest(
            pc_id=body.pc_id,
            candidates=[IceCandidate(c.candidate, c.sdp_mid, c.sdp_mline_index) for c in body.candidates],
        )
        try:
            await handler.handle_patch_request(request)
        except ValueError as exc:
            raise OfferInvalid("A candidate could not be read.") from exc
        return {"status": "success"}

    return router


async def end_webrtc_calls(*, timeout_s: float = 5.0) -> None:
    """Hang up every WebRTC call of this process; call it before the server's event loop
    stops. A Pipecat pipeline still running when the loop cancels all its tasks at once
    never finishes (its cancel path needs the very tasks being cancelled); cancelling the
    calls first lets each pipeline end in order."""
    calls = list(_CALLS)
    for task in calls:
        task.cancel()
    if calls:
        await asyncio.wait(calls, timeout=timeout_s)


async def _renegotiate(handler: SmallWebRTCRequestHandler, body: Offer, *, owned: bool) -> dict[str, str]:
    if not owned:
        raise CallNotFound("That call is not live.")
    if body.restart_pc:
        # A restart replaces the peer connection under the call; hanging up and calling
        # again does the same with less to go wrong.
        raise OfferInvalid("Restarting a peer connection is not supported; hang up and call again.")

    async def unexpected(_connection: SmallWebRTCConnection) -> None:
        raise AssertionError("a renegotiation makes no new connection")

    request = SmallWebRTCRequest(sdp=body.sdp, type=body.type, pc_id=body.pc_id)
    try:
        async with asyncio.timeout(ANSWER_TIMEOUT_S):
            answer = await handler.handle_web_request(request, unexpected)
    except Exception as exc:  # aiortc refuses a bad SDP with assorted exceptions
        log.info("webrtc renegotiation refused: %s", type(exc).__name__)
        raise OfferInvalid("The offer could not be answered.") from exc
    if answer is None:
        raise OfferInvalid("The offer could not be answered.")
    return answer


async def _answer(handler: SmallWebRTCRequestHandler, body: Offer) -> tuple[SmallWebRTCConnection, dict[str, str]]:
    """A new peer connection and its answer; aiortc gathers every candidate first, so the
    answer carries them all and the server never trickles."""
    made: list[SmallWebRTCConnection] = []

    async def keep(connection: SmallWebRTCConnection) -> None:
        made.append(connection)

    try:
        async with asyncio.timeout(ANSWER_TIMEOUT_S):
            answer = await handler.handle_web_request(SmallWebRTCRequest(sdp=body.sdp, type=body.type), keep)
    except Exception as exc:  # aiortc refuses a bad SDP with assorted exceptions
        for connection in made:
            await connection.disconnect()  # type: ignore[no-untyped-call]  # untyped in Pipecat 1.14
        log.info("webrtc offer refused: %s", type(exc).__name__)
        raise OfferInvalid("The offer could not be answered.") from exc
    if answer is None or not made:
        raise OfferInvalid("The offer could not be answered.")
    return made[0], answer


async def _call(
    doors: VoiceDoors,
    handler: SmallWebRTCRequestHandler,
    owners: dict[str, str],
    body: Offer,
    call: Call,
    zone: ZoneInfo,
    slot: contextlib.AsyncExitStack,
    answered: asyncio.Future[dict[str, str]],
) -> None:
    """One call from offer to hang-up; the person's call slot is released at the end."""
    async with slot:
        try:
            connection, answer = await _answer(handler, body)
        except OfferInvalid as exc:
            answered.set_exception(exc)
            return
        except BaseException:
            answered.cancel()
            raise
        owners[connection.pc_id] = call.person.id
        answered.set_result(answer)
        try:
            await _run_call(doors, connection, call, zone)
        except Exception:
            log.exception("webrtc call failed", extra={"call": call.id})
        finally:
            owners.pop(connection.pc_id, None)
            # Idempotent; covers a peer that never connected, which Pipecat does not close.
            await connection.disconnect()  # type: ignore[no-untyped-call]  # untyped in Pipecat 1.14
    log.info("call ended", extra={"call": call.id, "person": call.person.id, "reason": call.end_reason})


async def _run_call(doors: VoiceDoors, connection: SmallWebRTCConnection, call: Call, zone: ZoneInfo) -> None:
    session = CallSession(doors, call, zone=zone)
    transport = SmallWebRTCTransport(
        connection,
        TransportParams(
            audio_in_enabled=True,
            audio_out_enabled=True,
            audio_in_sample_rate=SAMPLE_RATE_IN,
            audio_out_sample_rate=SAMPLE_RATE_OUT,
            audio_out_end_silence_secs=END_SILENCE_S,
        ),
    )
    session.build(transport, rate_in=SAMPLE_RATE_IN, rate_out=SAMPLE_RATE_OUT, extra=[HangupNotice(call)])
    connected = asyncio.Event()

    async def joined(_transport: Any, _connection: Any) -> None:
        connected.set()

    async def left(_transport: Any, _connection: Any) -> None:
        await session.end_now("client_hangup")

    async def connect_deadline() -> None:
        try:
            async with asyncio.timeout(doors.limits.start_timeout_s):
                await connected.wait()
        except TimeoutError:
            await session.end_now("connect_timeout")

    transport.add_event_handler("on_client_connected", joined)
    transport.add_event_handler("on_client_disconnected", left)
    await session.run(connect_deadline())
