"""The phone door: `WS /v1/voice/phone`, a call bridged as Twilio Media Streams (docs/sockets.md#phone-stream).

Twilio opens the socket (TwiML `<Connect><Stream>`, the bidirectional form) and sends
`connected`, then `start` (stream and call ids, the audio format, and our
`<Parameter>`s as `customParameters`), then `media` events of base64 μ-law at 8 kHz
every 20 ms, `dtmf` on a keypress, and `stop` when the call's stream ends. We read
`connected` and `start` ourselves, then hand the socket to Pipecat's
`TwilioFrameSerializer` and run the same pipeline as every other door, with the turns
in the `phone` channel.

The caller is identified by the number they call from, and by nothing else: Twilio's
webhook (`voice.phone_webhook`) finds the person who verified that number and hands Twilio
a short-lived, single-use call token as `<Parameter name="call_token">`, good at this door
only. No other credential opens it: a person's 30-day session pasted into the stream's
parameters or URL, a door ticket from `POST /v1/tickets` and a device token are all refused
(4401), so what a TwiML document or a log line may hold names no session. Twilio has no error channel,
so a refusal is the speaker's error event (which Twilio ignores; other bridges may read it),
the close code and a log line, from the same translator as the speaker door
(`voice.edge.refuse`): 4401 bad or missing token, 4402 empty wallet, 4409 / 1013 no call
slot, 1003 unsupported format, 1008 protocol violation, 1009 frame too large. A refused
call writes nothing to the thread. A wallet that empties mid-call gets Ava's spoken
notice, then the call ends and the socket closes 4402.

Rates: the pipeline hears at 16 kHz (what Silero VAD and Whisper take, so the serializer
upsamples Twilio's 8 kHz once, on the way in, through a 4 ms filter: `LineUpsampler`)
and the recogniser is told the call is narrowband. Ava's voice is made at its own rate
(`SPEECH_RATE`, the neural voice's 24 kHz, so it is never resampled twice) and
`voice.phone_line.PhoneLine`, just before the output, brings it to the line: one
anti-aliased resampling to 8 kHz, the line's high-pass, a phone's loudness, and a Twilio
`mark` after each sentence. The serializer's output resampler then passes 8 kHz audio
through untouched. Twilio echoes each mark once its audio has played (or at once, for what
a `clear` dropped); `PhoneSocket` counts them.

Hanging up: `#end#` speaks the goodbye, then the worker ends; the output transport
drains the audio (paced in real time, so Twilio's buffer stays shallow), adds a second
of silence so the last word is not cut, and closes the socket with 1000. With
`<Connect><Stream>` last in the TwiML, the socket closing ends the call. Twilio REST
credentials, when given, also make Pipecat's serializer end the call over REST;
without them (offline, and in tests) there is no REST hang-up at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast
from zoneinfo import ZoneInfo

from fastapi import APIRouter, WebSocket
from pipecat.frames.frames import Frame, OutputTransportMessageFrame, OutputTransportMessageUrgentFrame
from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport
from starlette.websockets import WebSocketDisconnect, WebSocketState

from chat import Person, Unauthorized, parse_zone
from voice.calls import Call, CallLimits
from voice.edge import DOMAIN_ERRORS, HANGUP_CLOSE_CODES, parse_frame, refuse
from voice.errors import ProtocolViolation, UnsupportedFormat, VoiceError
from voice.phone_line import LineUpsampler, PhoneLine, PhoneMark
from voice.phone_webhook import add_incoming_route
from voice.session import CallSession
from voice.shared import VoiceDoors
from voice.speaker import PIPELINE_RATE_IN

log = logging.getLogger(__name__)

PHONE_RATE = 8_000  # Twilio Media Streams: μ-law, 8 kHz, mono, both ways
PHONE_ENCODING = "audio/x-mulaw"
# The rate Ava's voice is made at on a phone call: the neural voice's own (PhoneLine takes it to 8 kHz).
SPEECH_RATE = 24_000
END_SILENCE_S = 1  # Pipecat multiplies bytes by it, so it must be a whole number of seconds
MARKS_KEPT_MAX = 1_000  # a 15-minute call speaks far fewer sentences
_BEFORE_START_MAX = 4  # messages read looking for `start` (Twilio sends `connected` first)


@dataclass(frozen=True, slots=True)
class StreamStart:
    stream_sid: str
    call_sid: str | None
    parameters: Mapping[str, str]


def parse_stream_start(event: dict[str, Any]) -> StreamStart:
    """Validate Twilio's `start` event; raise the voice error that refuses it."""
    start = event.get("start")
    if not isinstance(start, dict):
        raise ProtocolViolation("The start event has no `start` object.")
    stream_sid = start.get("streamSid") or event.get("streamSid")
    if not isinstance(stream_sid, str) or not stream_sid:
        raise ProtocolViolation("The start event has no streamSid.")
    media = start.get("mediaFormat")
    wire = (media.get("encoding"), media.get("sampleRate"), media.get("channels")) if isinstance(media, dict) else None
    if wire != (PHONE_ENCODING, PHONE_RATE, 1):
        raise UnsupportedFormat("Media must be audio/x-mulaw, 8000 Hz, 1 channel.")
    call_sid = start.get("callSid")
    custom = start.get("customParameters")
    parameters = {k: v for k, v in custom.items() if isinstance(v, str)} if isinstance(custom, dict) else {}
    return StreamStart(stream_sid, call_sid if isinstance(call_sid, str) else None, parameters)


def _event(text: str | None, limits: CallLimits) -> dict[str, Any]:
    """One Twilio message as a dict, or the voice error its shape deserves."""
    if text is None:
        raise UnsupportedFormat("Media Streams messages are text frames.")
    return parse_frame(text, bytes_max=limits.frame_bytes_max)


async def read_stream_start(websocket: WebSocket, limits: CallLimits) -> StreamStart | None:
    """Read up to Twilio's `start` event; None if the peer left first."""
    for _ in range(_BEFORE_START_MAX):
        message = await websocket.receive()
        if message["type"] != "websocket.receive":
            return None
        event = _event(message.get("text"), limits)
        if event.get("event") == "connected":
            continue
        if event.get("event") == "start":
            return parse_stream_start(event)
        raise ProtocolViolation("The stream must begin with `connected` and `start`.")
    raise ProtocolViolation("No start event among the first messages.")


async def close(websocket: WebSocket, close_code: int, reason: str) -> None:
    """Close once; a peer that is already gone is not an error."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        if websocket.application_state == WebSocketState.CONNECTED:
            await websocket.close(code=close_code, reason=reason)


class PhoneSerializer(TwilioFrameSerializer):
    """Pipecat's Twilio serializer without our transcript events (Twilio takes only
    `media`, `mark` and `clear` from us, and a phone has no screen for captions), bringing
    the caller's 8 kHz up through `LineUpsampler`: Pipecat's own resampler held the last
    52 ms of what the caller said behind its filter, so the VAD heard them stop that late
    (voice/phone_line.py)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._input_resampler = LineUpsampler()

    async def serialize(self, frame: Frame) -> str | bytes | None:
        if isinstance(frame, PhoneMark):
            return json.dumps({"event": "mark", "streamSid": self._stream_sid, "mark": {"name": frame.name}})
        if isinstance(frame, OutputTransportMessageFrame | OutputTransportMessageUrgentFrame):
            return None
        result: str | bytes | None = await super().serialize(frame)
        return result


def phone_serializer(stream: StreamStart) -> PhoneSerializer:
    # No hang-up over Twilio's REST API: the webhook's TwiML ends with the <Stream>, so
    # closing the socket ends the call (docs/sockets.md#phone-stream), and the serializer
    # would otherwise refuse to start without REST credentials.
    return PhoneSerializer(
        stream_sid=stream.stream_sid,
        call_sid=stream.call_sid,
        params=TwilioFrameSerializer.InputParams(twilio_sample_rate=PHONE_RATE, auto_hang_up=False),
    )


class PhoneSocket:
    """The WebSocket as Pipecat's transport sees it once the call runs: Twilio's `stop`
    ends the call (it looks like the peer leaving), and a frame that breaks the protocol
    closes the socket with its code. Everything else passes through to the serializer."""

    def __init__(self, websocket: WebSocket, limits: CallLimits, call: Call) -> None:
        self._websocket = websocket
        self._limits = limits
        self._call = call
        # The names of the marks Twilio echoed: played to the caller, or dropped by a `clear`.
        self.marks_echoed: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._websocket, name)

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        # Pipecat closes on teardown even after we closed with a protocol code; a call
        # that ended for an empty wallet closes 4402.
        await close(self._websocket, HANGUP_CLOSE_CODES.get(self._call.end_reason or "", code), reason or "")

    async def receive(self) -> dict[str, Any]:
        message = cast(dict[str, Any], await self._websocket.receive())
        if message["type"] != "websocket.receive":
            return message
        try:
            event = _event(message.get("text"), self._limits)
            if event.get("event") in ("connected", "start"):
                raise ProtocolViolation("The stream has already started.")
        except VoiceError as exc:
            self._call.end_reason = self._call.end_reason or exc.type
            log.warning("phone call closed: %s", exc.type, extra={"call": self._call.id})
            close_code = await refuse(self._websocket, exc)
            return {"type": "websocket.disconnect", "code": close_code}
        if event.get("event") == "mark":
            mark = event.get("mark")
            name = mark.get("name") if isinstance(mark, dict) else None
            if isinstance(name, str) and len(self.marks_echoed) < MARKS_KEPT_MAX:
                self.marks_echoed.append(name[:64])
        if event.get("event") == "stop":
            self._call.end_reason = self._call.end_reason or "caller_hangup"
            return {"type": "websocket.disconnect", "code": 1000}
        return message


def add_phone_route(router: APIRouter, doors: VoiceDoors) -> None:
    """Mount `WS /phone` and Twilio's webhook, `POST /phone/incoming`, on the voice router."""
    add_incoming_route(router, doors.phone_webhook)

    @router.websocket("/phone")
    async def phone(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            admitted = await _admit(doors, websocket)
            if admitted is None:
                return  # Twilio hung up before the stream started
            stream, person, zone = admitted
            async with doors.registry.claim_everywhere(person, "phone") as call:
                log.info("phone call started", extra={"call": call.id, "person": person.id, "sid": stream.call_sid})
                await _run_phone_call(doors, websocket, call, stream, zone)
        except DOMAIN_ERRORS as exc:
            log.warning("phone call refused: %s", getattr(exc, "type", ""))
            await refuse(websocket, exc)


async def _admit(doors: VoiceDoors, websocket: WebSocket) -> tuple[StreamStart, Person, ZoneInfo] | None:
    """The stream's start, its caller and their zone (None: the peer left first), or the
    domain error that refuses the call (a bad token or zone, an empty wallet, a broken
    stream)."""
    try:
        async with asyncio.timeout(doors.limits.start_timeout_s):
            stream = await read_stream_start(websocket, doors.limits)
    except TimeoutError as exc:
        raise ProtocolViolation("No start event arrived in time.") from exc
    if stream is None:
        return None
    # Only the phone webhook's call token names the caller (a verified number): a person's
    # token or any other ticket is refused, never looked at (docs/sockets.md#authentication).
    if stream.parameters.get("token") or websocket.query_params.get("token"):
        raise Unauthorized("Tokens do not open the phone door; a call from a verified number does.")
    person = await doors.person_for(None, ticket=stream.parameters.get("call_token"), door="phone")
    if person is None:
        raise Unauthorized("The phone door takes only the call token the phone webhook gives; none valid came.")
    # A `<Parameter name="time_zone">` must name an IANA zone, as the speaker's `start` must.
    zone = parse_zone(stream.parameters.get("time_zone") or person.time_zone)
    if doors.guard is not None:
        await doors.guard(person)
    return stream, person, zone


async def _run_phone_call(
    doors: VoiceDoors,
    websocket: WebSocket,
    call: Call,
    stream: StreamStart,
    zone: ZoneInfo,
) -> None:
    session = CallSession(doors, call, zone=zone)
    socket = PhoneSocket(websocket, doors.limits, call)
    transport = FastAPIWebsocketTransport(
        websocket=cast(WebSocket, socket),
        params=FastAPIWebsocketParams(
            audio_in_enabled=True,
            audio_out_enabled=True,
            audio_in_sample_rate=PIPELINE_RATE_IN,
            audio_out_sample_rate=PHONE_RATE,
            audio_out_end_silence_secs=END_SILENCE_S,
            serializer=phone_serializer(stream),
            allowed_origins=[],  # Twilio sends no Origin header
        ),
    )
    line = PhoneLine()
    session.build(transport, rate_in=PIPELINE_RATE_IN, rate_out=SPEECH_RATE, extra=[line], narrowband=True)

    async def gone(_transport: Any, _client: Any) -> None:
        await session.end_now("caller_gone")

    transport.add_event_handler("on_client_disconnected", gone)
    await session.run()
    await close(websocket, 1000, "")
    log.info(
        "phone call ended",
        extra={
            "call": call.id,
            "person": call.person.id,
            "reason": call.end_reason,
            "sentences": line.sentences,
            "marks_echoed": len(socket.marks_echoed),
        },
    )
