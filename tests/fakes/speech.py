"""Speech for voice tests: espeak-ng saying a sentence as PCM16 at any rate, a client
that streams it over the speaker protocol in real time, and a loudness check."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pipecat.audio.utils import create_stream_resampler
from websockets.asyncio.client import ClientConnection

from voice.engines.espeak import synthesize

FRAME_S = 0.02


async def speech_pcm16(text: str, rate: int = 16_000) -> bytes:
    pcm, source_rate = await synthesize(text)
    resampler = create_stream_resampler()
    return await resampler.resample(pcm, source_rate, rate) + await resampler.flush()


def silence(seconds: float, rate: int = 16_000) -> bytes:
    return b"\x00\x00" * int(seconds * rate)


def rms(pcm: bytes) -> float:
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if len(samples) else 0.0


async def stream(ws: ClientConnection, pcm: bytes, rate: int = 16_000, *, pace: float = 1.0) -> None:
    """Send audio in 20 ms frames at (a multiple of) real time, as a microphone would.

    Each frame goes out on the microphone's own clock (its time from the first frame), not
    20 ms after the previous one: a sleep that wakes late, as they all do on a loaded
    machine whose one event loop the server shares, must not stretch the audio itself. A
    1.25 s pause sent frame-after-sleep took 2.3 to 4 s at load 14 to 19 (2026-12-03), and
    the server rightly heard a person who had stopped speaking."""
    step = int(rate * FRAME_S) * 2
    loop = asyncio.get_running_loop()
    started = loop.time()
    for index, start in enumerate(range(0, len(pcm), step)):
        await ws.send(pcm[start : start + step])
        await asyncio.sleep(max(0.0, started + (index + 1) * FRAME_S / pace - loop.time()))


@dataclass
class Heard:
    """Everything the server sent, in order: events (dicts) and audio (bytes)."""

    items: list[dict[str, Any] | bytes] = field(default_factory=list)

    @property
    def events(self) -> list[dict[str, Any]]:
        return [i for i in self.items if isinstance(i, dict)]

    @property
    def audio(self) -> bytes:
        return b"".join(i for i in self.items if isinstance(i, bytes))

    def of(self, kind: str, role: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind and (role is None or e.get("role") == role)]


async def listen(ws: ClientConnection, heard: Heard) -> None:
    """Record what the server sends until it closes the socket."""
    async for message in ws:
        heard.items.append(message if isinstance(message, bytes) else json.loads(message))


async def wait_quiet(heard: Heard, *, quiet_s: float = 1.0, timeout_s: float = 30.0) -> None:
    """Wait until no audio has arrived for `quiet_s`: the reply (paced in real time) is over."""
    async with asyncio.timeout(timeout_s):
        size, still_since = -1, asyncio.get_running_loop().time()
        while True:
            now = asyncio.get_running_loop().time()
            if len(heard.audio) != size:
                size, still_since = len(heard.audio), now
            elif now - still_since >= quiet_s:
                return
            await asyncio.sleep(0.05)


async def wait_for(heard: Heard, predicate: Any, *, timeout_s: float = 30.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate(heard):
            await asyncio.sleep(0.05)
