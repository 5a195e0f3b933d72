"""Meters a call's speech for billing (docs/money.md#voice-seconds).

Pipecat's STT and TTS services report their own usage as metrics frames: seconds of
audio transcribed and characters synthesised. This processor sums them and hands a slice
to the wallet each time Ava finishes speaking, and whatever is left when the call ends,
so a dropped call is charged for what it used and nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from pipecat.frames.frames import BotStoppedSpeakingFrame, CancelFrame, EndFrame, Frame, MetricsFrame
from pipecat.metrics.metrics import STTUsageMetricsData, TTSUsageMetricsData
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from ledger import VoiceUsage

Bill = Callable[[int, VoiceUsage], Awaitable[None]]  # (slice number, usage) -> charged
_INSTANCE = re.compile(r"#\d+$")


def _engine(data: Any) -> str:
    """A stable engine name: the model the service reports, else its class name."""
    name = data.model or _INSTANCE.sub("", str(data.processor))
    return str(name)[:100] or "unknown"


class UsageMeter(FrameProcessor):
    def __init__(self, bill: Bill, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._bill = bill
        self._slice = 0
        self._stt_ms = 0.0
        self._tts_characters = 0
        self._stt_engine = "unknown"
        self._tts_engine = "unknown"

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, MetricsFrame):
            for data in frame.data:
                if isinstance(data, STTUsageMetricsData):
                    self._stt_ms += data.value.audio_seconds * 1000
                    self._stt_engine = _engine(data)
                elif isinstance(data, TTSUsageMetricsData):
                    self._tts_characters += int(data.value)
                    self._tts_engine = _engine(data)
        elif isinstance(frame, BotStoppedSpeakingFrame | EndFrame | CancelFrame):
            await self.flush()
        await self.push_frame(frame, direction)

    async def flush(self) -> None:
        """Bill what was used since the last slice (nothing when nothing was used)."""
        usage = VoiceUsage(
            stt_engine=self._stt_engine,
            stt_ms=round(self._stt_ms),
            tts_engine=self._tts_engine,
            tts_characters=self._tts_characters,
        )
        if usage.is_zero:
            return
        self._stt_ms, self._tts_characters = 0.0, 0
        self._slice += 1
        await self._bill(self._slice, usage)
