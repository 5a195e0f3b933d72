"""Where a terminal call's sound comes from and goes to: the machine's microphone and speaker,
or WAV files (docs/http.md#calling-from-the-terminal).

It exists so `/call` in `avagenc chat` can reach the sound card without a Python audio library
in the product's lock (none is needed: ALSA's own `arecord` and `aplay` carry raw PCM16 through
pipes), and so a machine without one — a server, CI — can still place a real call from a file:
`AVAGENC_CALL_INPUT` names a WAV to say, `AVAGENC_CALL_OUTPUT` one to keep Ava's voice in.
A machine with neither gets one line saying why, and the chat goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import wave
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Protocol

# The speaker door takes PCM16 mono at one of these rates (docs/sockets.md#speaker-protocol).
RATES = (8000, 16000, 24000, 48000)
DEVICE_RATE = 16_000
FRAME_S = 0.02
# After a file is said, silence for the server to hear that the person stopped speaking.
TRAILING_SILENCE_S = 1.0
# A file is said once; what is heard back is kept up to this long (then no more is kept).
RECORDED_MAX_S = 300
# At the end of a call, how long the speaker gets to play what it still holds.
PLAYED_OUT_S = 10.0
SOUND_CARDS = Path("/dev/snd")
NO_MICROPHONE = "no microphone here — /call needs a sound input device"


class NoSound(Exception):
    """The call cannot have sound here; the message is the one line the person reads."""


class Sound(Protocol):
    """One call's audio ends: frames of the person's voice in, Ava's voice out."""

    rate: int
    # A file ends; a microphone does not (the call ends by a hang-up).
    finite: bool

    def frames(self) -> AsyncIterator[bytes]: ...
    async def play(self, pcm: bytes) -> None: ...
    async def clear(self) -> None: ...
    async def close(self) -> None: ...


def open_sound(environ: Mapping[str, str], *, cards: Path | None = None) -> Sound:
    """The files the environment names, else the machine's sound card; NoSound when neither."""
    cards = SOUND_CARDS if cards is None else cards
    source = environ.get("AVAGENC_CALL_INPUT")
    if source:
        sink = environ.get("AVAGENC_CALL_OUTPUT")
        return WavSound(Path(source), Path(sink) if sink else None)
    # ALSA names capture devices pcmC<card>D<device>c; no such device, no microphone.
    if not any(cards.glob("pcmC*D*c")):
        raise NoSound(NO_MICROPHONE)
    if shutil.which("arecord") is None or shutil.which("aplay") is None:
        raise NoSound("/call records and plays through ALSA's arecord and aplay: install alsa-utils")
    return DeviceSound()


class WavSound:
    """A WAV file said at the pace of speech, and what is heard back kept in another."""

    finite = True

    def __init__(self, source: Path, sink: Path | None) -> None:
        try:
            with wave.open(str(source), "rb") as wav:
                shape = (wav.getnchannels(), wav.getsampwidth(), wav.getframerate())
                self._pcm = wav.readframes(wav.getnframes())
        except (OSError, EOFError, wave.Error) as exc:
            raise NoSound(f"cannot read {source}: {exc}") from exc
        channels, width, rate = shape
        if channels != 1 or width != 2 or rate not in RATES:
            raise NoSound(f"{source} must be 16-bit mono PCM at {', '.join(map(str, RATES))} Hz")
        self.rate = rate
        self._sink = sink
        self._heard = bytearray()

    async def frames(self) -> AsyncIterator[bytes]:
        step = int(self.rate * FRAME_S) * 2
        pcm = self._pcm + b"\x00\x00" * int(self.rate * TRAILING_SILENCE_S)
        for start in range(0, len(pcm), step):
            yield pcm[start : start + step]
            await asyncio.sleep(FRAME_S)  # as a microphone would: the server hears in real time

    async def play(self, pcm: bytes) -> None:
        if len(self._heard) < RECORDED_MAX_S * self.rate * 2:
            self._heard += pcm

    async def clear(self) -> None:
        """A file keeps everything it was sent: nothing is waiting to be played."""

    async def close(self) -> None:
        if self._sink is None:
            return
        with wave.open(str(self._sink), "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(self.rate)
            wav.writeframes(bytes(self._heard))


class DeviceSound:
    """The default ALSA capture and playback devices, through `arecord` and `aplay` as raw PCM16.
    Headphones keep Ava from hearing herself."""

    finite = False
    rate = DEVICE_RATE

    def __init__(self) -> None:
        self._recorder: asyncio.subprocess.Process | None = None
        self._player: asyncio.subprocess.Process | None = None

    async def frames(self) -> AsyncIterator[bytes]:
        self._recorder = await _pcm_process("arecord", recording=True)
        assert self._recorder.stdout is not None
        step = int(self.rate * FRAME_S) * 2
        while True:
            try:
                yield await self._recorder.stdout.readexactly(step)
            except asyncio.IncompleteReadError:
                return  # the recorder stopped (the device went away)

    async def play(self, pcm: bytes) -> None:
        if self._player is None or self._player.returncode is not None:
            self._player = await _pcm_process("aplay", recording=False)
        assert self._player.stdin is not None
        with contextlib.suppress(ConnectionError):
            self._player.stdin.write(pcm)
            await self._player.stdin.drain()

    async def clear(self) -> None:
        """The person interrupted: what the player holds is dropped with it."""
        await _stop(self._player)
        self._player = None

    async def close(self) -> None:
        """The microphone stops at once; the speaker first says what it holds (a goodbye)."""
        await _stop(self._recorder)
        player = self._player
        if player is not None and player.stdin is not None and player.returncode is None:
            player.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(player.wait(), PLAYED_OUT_S)
        await _stop(player)


async def _pcm_process(program: str, *, recording: bool) -> asyncio.subprocess.Process:
    args = ["-q", "-t", "raw", "-f", "S16_LE", "-c", "1", "-r", str(DEVICE_RATE)]
    pipe = asyncio.subprocess.PIPE
    try:
        return await asyncio.create_subprocess_exec(
            program,
            *args,
            stdin=None if recording else pipe,
            stdout=pipe if recording else asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError as exc:
        raise NoSound(f"{program} could not start: {exc}") from exc


async def _stop(process: asyncio.subprocess.Process | None) -> None:
    if process is None or process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), 2)
