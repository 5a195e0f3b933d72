"""The partner speaker door: `WS /v1/voice/speaker`, exactly docs/sockets.md#speaker-protocol.

Handshake: a bearer token (header, or `?token=`), then a `start` frame naming the audio
format; the server answers `ready`. Then PCM16LE both ways as binary frames, and text
events from the server: `transcript`, `clear` (stop playing: the person interrupted),
`hangup` (after the last audio byte), `error`. Bad input gets an `error` event and the
close code the protocol names; nothing about it ever reaches the thread.
"""

from __future__ import annotations

import contextlib
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

from chat import TimeZoneInvalid
from voice.calls import Call, CallLimits
from voice.edge import HANGUP_CLOSE_CODES, HANGUP_ON_CLOSE, parse_frame, refuse
from voice.errors import FrameTooLarge, ProtocolViolation, UnsupportedFormat, VoiceError

log = logging.getLogger(__name__)

SAMPLE_RATES = (8_000, 16_000, 24_000, 48_000)
PIPELINE_RATE_IN = 16_000  # what Silero VAD and the STT engines take


@dataclass(frozen=True, slots=True)
class Start:
    sample_rate: int
    time_zone: ZoneInfo | None


def parse_start(message: dict[str, Any], *, parse_zone: Callable[[str], ZoneInfo], bytes_max: int) -> Start:
    """Validate the first frame; raise the domain error whose type names the refusal."""
    if message.get("text") is None:
        raise ProtocolViolation("The first frame must be a text `start` event.")
    start = parse_frame(message.get("text"), bytes_max=bytes_max)
    if start.get("type") != "start":
        raise ProtocolViolation("The first frame must be a `start` event.")
    rate = start.get("sample_rate")
    if not isinstance(rate, int) or isinstance(rate, bool) or rate not in SAMPLE_RATES:
        raise UnsupportedFormat(f"sample_rate must be one of {list(SAMPLE_RATES)}.")
    if start.get("encoding", "pcm_s16le") != "pcm_s16le":
        raise UnsupportedFormat("encoding must be pcm_s16le.")
    if start.get("channels", 1) != 1:
        raise UnsupportedFormat("channels must be 1.")
    zone_name = start.get("time_zone")
    if zone_name is not None and not isinstance(zone_name, str):
        raise TimeZoneInvalid("time_zone must be an IANA name (e.g. Asia/Jakarta).")
    return Start(sample_rate=rate, time_zone=parse_zone(zone_name) if zone_name is not None else None)


class SpeakerSerializer(FrameSerializer):
    """PCM16LE audio at the speaker's rate both ways, plus the protocol's JSON events."""

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
    what the speaker sends: oversized frames close with 1009, garbage or too deeply
    nested JSON with 1008, and `{"type":"hangup"}` ends the call at once. Everything else
    passes through. Closing after a hang-up uses the code its reason names (4402 for an
    empty wallet)."""

    def __init__(
        self, websocket: WebSocket, limits: CallLimits, call: Call, *, on_hangup: Callable[[], Awaitable[None]]
    ) -> None:
        self._websocket = websocket
        self._limits = limits
        self._call = call
        self._on_hangup = on_hangup

    def __getattr__(self, name: str) -> Any:
        return getattr(self._websocket, name)

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        code = HANGUP_CLOSE_CODES.get(self._call.end_reason or "", code)
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            if self._websocket.application_state == WebSocketState.CONNECTED:
                if self._call.end_reason in HANGUP_ON_CLOSE:
                    # A cut call drained no EndFrame, so no `hangup` went out: say why here.
                    await self._websocket.send_text(json.dumps({"type": "hangup", "reason": self._call.end_reason}))
                await self._websocket.close(code=code, reason=reason)

    async def receive(self) -> dict[str, Any]:
        message = cast(dict[str, Any], await self._websocket.receive())
        if message["type"] != "websocket.receive":
            return message
        try:
            data = message.get("bytes")
            if data is not None and len(data) > self._limits.frame_bytes_max:
                raise FrameTooLarge(f"Audio frames hold at most {self._limits.frame_bytes_max} bytes.")
            if message.get("text") is not None:
                event = parse_frame(message.get("text"), bytes_max=self._limits.frame_bytes_max)
                if event.get("type") == "hangup":
                    await self._on_hangup()
                elif event.get("type") == "start":
                    raise ProtocolViolation("Unexpected event during a call.")
        except VoiceError as exc:
            self._call.end_reason = self._call.end_reason or exc.type
            close_code = await refuse(self._websocket, exc)
            return {"type": "websocket.disconnect", "code": close_code}
        return message
