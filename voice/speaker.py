"""The partner speaker door: `WS /v1/voice/speaker`, exactly the §9.2 protocol.

Handshake: a bearer token (header, or `?token=`), then a `start` frame naming the audio
format; the server answers `ready`. Then PCM16LE both ways as binary frames, and text
events from the server: `transcript`, `clear` (stop playing: the person interrupted),
`hangup` (after the last audio byte), `error`. Bad input gets an `error` event and the
close code the protocol names; nothing about it ever reaches the thread.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast
from zoneinfo import ZoneInfo

from fastapi import WebSocket
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    OutputAudioRawFrame,
    OutputTransportMessageFrame,
    OutputTransportMessageUrgentFrame,
)
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.serializers.base_serializer import FrameSerializer
from starlette.websockets import WebSocketDisconnect, WebSocketState

from voice.calls import Call, CallLimits

log = logging.getLogger(__name__)

SAMPLE_RATES = (8_000, 16_000, 24_000, 48_000)
PIPELINE_RATE_IN = 16_000  # what Silero VAD and the STT engines take


class ProtocolError(Exception):
    def __init__(self, code: str, message: str, close_code: int) -> None:
        super().__init__(message)
        self.code = code
        self.close_code = close_code


@dataclass(frozen=True, slots=True)
class Start:
    sample_rate: int
    time_zone: ZoneInfo | None


def parse_start(message: dict[str, Any], *, parse_zone: Callable[[str], ZoneInfo]) -> Start:
    """Validate the first frame; raise `ProtocolError` with the §9.2 close code."""
    text = message.get("text")
    if text is None:
        raise ProtocolError("protocol_violation", "The first frame must be a text `start` event.", 1008)
    try:
        start = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError("bad_json", "The first frame is not valid JSON.", 1008) from exc
    if not isinstance(start, dict) or start.get("type") != "start":
        raise ProtocolError("protocol_violation", "The first frame must be a `start` event.", 1008)
    rate = start.get("sample_rate")
    if not isinstance(rate, int) or isinstance(rate, bool) or rate not in SAMPLE_RATES:
        raise ProtocolError("unsupported_format", f"sample_rate must be one of {list(SAMPLE_RATES)}.", 1003)
    if start.get("encoding", "pcm_s16le") != "pcm_s16le":
        raise ProtocolError("unsupported_format", "encoding must be pcm_s16le.", 1003)
    if start.get("channels", 1) != 1:
        raise ProtocolError("unsupported_format", "channels must be 1.", 1003)
    zone_name = start.get("time_zone")
    zone = None
    if zone_name is not None:
        if not isinstance(zone_name, str):
            raise ProtocolError("time_zone_invalid", "time_zone must be an IANA name.", 1008)
        try:
            zone = parse_zone(zone_name)
        except Exception as exc:
            raise ProtocolError("time_zone_invalid", "time_zone must be an IANA name.", 1008) from exc
    return Start(sample_rate=rate, time_zone=zone)


async def send_error(websocket: WebSocket, code: str, message: str, close_code: int) -> None:
    """The error event, then the close; a peer that is already gone is not an error."""
    try:
        if websocket.application_state == WebSocketState.CONNECTED:
            await websocket.send_text(json.dumps({"type": "error", "code": code, "message": message}))
            await websocket.close(code=close_code)
    except (WebSocketDisconnect, RuntimeError, OSError):
        log.debug("peer gone before the error could be sent")


class SpeakerSerializer(FrameSerializer):
    """PCM16LE audio at the speaker's rate both ways, plus the §9.2 JSON events."""

    def __init__(self, *, wire_rate: int, call: Call) -> None:
        super().__init__()
        self._wire_rate = wire_rate
        self._call = call
        self._pipeline_rate_in = PIPELINE_RATE_IN
        self._in = create_stream_resampler()
        self._out = create_stream_resampler()

    async def setup(self, setup: FrameProcessorSetup) -> None:  # type: ignore[override]  # Pipecat narrows it
        self._pipeline_rate_in = setup.audio_in_sample_rate

    async def serialize(self, frame: Frame) -> str | bytes | None:
        if isinstance(frame, OutputAudioRawFrame):
            if frame.sample_rate == self._wire_rate:
                return frame.audio
            return await self._out.resample(frame.audio, frame.sample_rate, self._wire_rate)
        if isinstance(frame, InterruptionFrame):
            return json.dumps({"type": "clear"})
        if isinstance(frame, OutputTransportMessageFrame | OutputTransportMessageUrgentFrame):
            return json.dumps(frame.message, ensure_ascii=False)
        if isinstance(frame, EndFrame):
            return json.dumps({"type": "hangup", "reason": self._call.end_reason or "agent_ended"})
        if isinstance(frame, CancelFrame):
            return None  # the speaker hung up or vanished: nobody is listening
        return None

    async def deserialize(self, data: str | bytes) -> Frame | None:
        if isinstance(data, bytes) and data:
            if len(data) % 2:
                data = data[:-1]  # PCM16 samples are two bytes; a torn sample is dropped
            pcm = data
            if self._wire_rate != self._pipeline_rate_in:
                pcm = await self._in.resample(data, self._wire_rate, self._pipeline_rate_in)
            return InputAudioRawFrame(audio=pcm, sample_rate=self._pipeline_rate_in, num_channels=1)
        return None  # control events are read by GuardedSocket before Pipecat sees them


class GuardedSocket:
    """The WebSocket as Pipecat's transport sees it, with the protocol's rules applied to
    what the speaker sends: oversized frames close with 1009, garbage JSON with 1008, and
    `{"type":"hangup"}` ends the call at once. Everything else passes through."""

    def __init__(self, websocket: WebSocket, limits: CallLimits, *, on_hangup: Callable[[], Awaitable[None]]) -> None:
        self._websocket = websocket
        self._limits = limits
        self._on_hangup = on_hangup

    def __getattr__(self, name: str) -> Any:
        return getattr(self._websocket, name)

    async def _refuse(self, code: str, message: str, close_code: int) -> dict[str, Any]:
        await send_error(self._websocket, code, message, close_code)
        return {"type": "websocket.disconnect", "code": close_code}

    async def receive(self) -> dict[str, Any]:
        message = cast(dict[str, Any], await self._websocket.receive())
        if message["type"] != "websocket.receive":
            return message
        data = message.get("bytes")
        if data is not None and len(data) > self._limits.frame_bytes_max:
            return await self._refuse(
                "frame_too_large", f"Audio frames hold at most {self._limits.frame_bytes_max} bytes.", 1009
            )
        text = message.get("text")
        if text is not None:
            if len(text) > self._limits.frame_bytes_max:
                return await self._refuse("frame_too_large", "Text frames hold at most 64 KiB.", 1009)
            try:
                event = json.loads(text)
            except json.JSONDecodeError:
                return await self._refuse("bad_json", "Text frames must be JSON.", 1008)
            if isinstance(event, dict) and event.get("type") == "hangup":
                await self._on_hangup()
            elif not isinstance(event, dict) or event.get("type") == "start":
                return await self._refuse("protocol_violation", "Unexpected event during a call.", 1008)
        return message
