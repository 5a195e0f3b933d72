"""Meters a call's speech for billing (docs/money.md#voice-seconds).

Pipecat's STT and TTS services report their own usage as metrics frames: seconds of
audio transcribed and characters synthesised. This processor sums them and hands a slice
to the wallet each time Ava finishes speaking, and whatever is left when the call ends,
so a dropped call is charged for what it used and nothing more.

A slice's charge is a database write, and awaiting it in frame handling held up every
frame behind it (the reply's audio included) for as long as the database took. So the
meter only queues the slice; one task per call charges the queue in order, and the call's
end waits (bounded) until every slice queued is charged. A charge that fails is logged
here and kept by the wallet for the server's sweep, which writes it with the same ref
`voice:<call>:<n>`, once (docs/money.md#voice-seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from pipecat.frames.frames import BotStoppedSpeakingFrame, CancelFrame, EndFrame, Frame, MetricsFrame
from pipecat.metrics.metrics import STTUsageMetricsData, TTSUsageMetricsData
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from ledger import VoiceUsage

# (slice number, usage) -> its charge. Called when the slice ends (so it can note which
# exchange the slice bills); what it returns is awaited later, in slice order.
Bill = Callable[[int, VoiceUsage], Awaitable[None]]
_INSTANCE = re.compile(r"#\d+$")
log = logging.getLogger(__name__)

# Slices waiting for their charge, per call: one per exchange, so a full queue means the
# database is that many exchanges behind; frames then wait for room (memory stays bounded).
SLICES_QUEUED_MAX = 32
# How long a call's end waits for its slices to be charged before leaving the rest to the
# charging task (which still finishes them: the charge itself runs detached, chat.detached).
FLUSH_WAIT_S = 10.0
# Charging tasks that outlived their call's end: held here until they finish (the event
# loop keeps only weak references to tasks, and the call's meter is let go).
_OUTLIVING: set[asyncio.Task[None]] = set()


def _outlive(task: asyncio.Task[None]) -> None:
    _OUTLIVING.add(task)
    task.add_done_callback(_OUTLIVING.discard)


def _engine(data: Any) -> str:
    """A stable engine name: the model the service reports, else its class name."""
    name = data.model or _INSTANCE.sub("", str(data.processor))
    return str(name)[:100] or "unknown"


class UsageMeter(FrameProcessor):
    def __init__(self, bill: Bill, *, flush_wait_s: float = FLUSH_WAIT_S, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._bill = bill
        self._flush_wait_s = flush_wait_s
        self._slice = 0
        self._stt_ms = 0.0
        self._tts_characters = 0
        self._stt_engine = "unknown"
        self._tts_engine = "unknown"
        self._queued: asyncio.Queue[tuple[int, Awaitable[None]] | None] = asyncio.Queue(maxsize=SLICES_QUEUED_MAX)
        self._charging: asyncio.Task[None] | None = None

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
        elif isinstance(frame, BotStoppedSpeakingFrame):
            await self.flush()
        elif isinstance(frame, EndFrame | CancelFrame):
            await self.flush()
            await self.charged()
        await self.push_frame(frame, direction)

    async def flush(self) -> None:
        """Queue for charging what was used since the last slice (nothing when nothing was
        used); the charge happens in this call's charging task, in order."""
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
        if self._charging is None or self._charging.done():
            self._charging = asyncio.create_task(self._charge_queued(), name="voice charges")
        if self._queued.full():
            log.warning("a call's charges are %d slices behind: its frames wait for room", SLICES_QUEUED_MAX)
        await self._queued.put((self._slice, self._bill(self._slice, usage)))

    async def charged(self) -> None:
        """The call is over: wait (up to `flush_wait_s`) until every slice queued is charged.
        Past that, the charging task goes on alone and ends once the queue is empty."""
        if self._charging is None or self._charging.done():
            return
        ended = False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._flush_wait_s):
                await self._queued.put(None)  # waits for room in a full queue, within the bound
                ended = True
                await asyncio.shield(self._charging)
                return
        log.warning("a call ended with its charges still being written; they go on after it")
        _outlive(self._charging)
        if not ended:  # the queue is still full: its end goes in once there is room
            _outlive(asyncio.create_task(self._queued.put(None)))

    async def _charge_queued(self) -> None:
        while True:
            queued = await self._queued.get()
            if queued is None:
                if self._queued.empty():
                    return  # the call is over and every slice charged
                continue  # a slice queued after the end (a second end frame): charged too
            slice_index, charge = queued
            try:
                await charge
            except Exception:
                # The wallet keeps a slice it could not charge for the sweep (chat.wallet).
                log.warning("voice slice %d not charged now: the sweep retries it", slice_index, exc_info=True)
