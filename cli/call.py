"""`/call` in `avagenc chat`: a voice call with Ava through the product's own speaker door
(`WS /v1/voice/speaker`, docs/sockets.md#speaker-protocol), from the terminal.

It exists so a person at a terminal can talk instead of type, through the same door, turns,
thread and wallet as a partner speaker: nothing new on the server. The terminal shows the
call's words as the thread's messages (the live events carry them, like any other door's),
so this module only moves sound and says how the call began and ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from cli.sound import Sound

# How long the door gets to answer `start` with `ready` (the server waits 10 s for `start`).
READY_S = 10.0
# A finished file: the call waits for Ava's reply, which is over when her voice has been
# quiet this long (a handoff's acknowledgement and the specialist's answer have a gap).
QUIET_S = 3.0
# ... and gives up on a reply after this long.
REPLY_MAX_S = 90.0
# After our hang-up, how long the server gets to close the socket.
CLOSE_S = 5.0
FRAME_BYTES_MAX = 64 * 1024


class Heard:
    """When Ava's voice last arrived (loop time), and how much of it there has been."""

    def __init__(self) -> None:
        self.audio_bytes = 0
        self.last_audio_at = 0.0
        self.ending: str | None = None  # the server's hang-up reason or error


async def call(
    *, url: str, token: str, time_zone: str | None, sound: Sound, say: Callable[[str], None], hang_up: asyncio.Event
) -> None:
    """Hold one call until Ava hangs up, the person asks to (`hang_up`), or, for a file, her
    reply to it has been heard; then say how it ended. Never raises for a network problem."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import WebSocketException

    door = url.rstrip("/").replace("http", "ws", 1) + "/v1/voice/speaker"
    start: dict[str, Any] = {"type": "start", "sample_rate": sound.rate, "encoding": "pcm_s16le", "channels": 1}
    if time_zone is not None:
        start["time_zone"] = time_zone
    try:
        headers = {"Authorization": f"Bearer {token}"}
        async with connect(door, additional_headers=headers, max_size=FRAME_BYTES_MAX, open_timeout=READY_S) as ws:
            await ws.send(json.dumps(start))
            ready = json.loads(await asyncio.wait_for(ws.recv(), READY_S))
            if ready.get("type") != "ready":
                say(f"! the call was refused: {ready.get('message') or ready.get('code') or ready}")
                return
            say("(on a call with Ava: speak, and /hangup ends it)")
            ending = await _converse(ws, sound, hang_up)
    except (OSError, TimeoutError, WebSocketException, ValueError) as exc:
        say(f"! the call could not go on: {exc or type(exc).__name__}")
        return
    finally:
        await sound.close()
    say(f"(call ended: {ending})")


async def _converse(ws: Any, sound: Sound, hang_up: asyncio.Event) -> str:
    heard = Heard()
    receiving = asyncio.create_task(_receive(ws, sound, heard), name="avagenc-call-in")
    sending = asyncio.create_task(_send(ws, sound, heard, receiving), name="avagenc-call-out")
    asked = asyncio.create_task(hang_up.wait(), name="avagenc-call-hangup")
    try:
        await asyncio.wait({receiving, sending, asked}, return_when=asyncio.FIRST_COMPLETED)
        if not receiving.done():
            with contextlib.suppress(Exception):
                await ws.send(json.dumps({"type": "hangup"}))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait({receiving}, timeout=CLOSE_S)
    finally:
        for task in (receiving, sending, asked):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if heard.ending is not None:
        return heard.ending
    return "you hung up" if asked.done() and not asked.cancelled() else "the reply was heard"


async def _send(ws: Any, sound: Sound, heard: Heard, receiving: asyncio.Task[None]) -> None:
    """The person's voice, frame by frame; after a file, until Ava's reply has been heard."""
    async for frame in sound.frames():
        await ws.send(frame)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + REPLY_MAX_S
    while not receiving.done() and loop.time() < deadline:
        if heard.audio_bytes and loop.time() - heard.last_audio_at >= QUIET_S:
            return
        await asyncio.sleep(0.1)


async def _receive(ws: Any, sound: Sound, heard: Heard) -> None:
    """Ava's voice to the speaker (or file) until the server closes the call."""
    loop = asyncio.get_running_loop()
    from websockets.exceptions import ConnectionClosed

    with contextlib.suppress(ConnectionClosed):
        async for message in ws:
            if isinstance(message, bytes):
                heard.audio_bytes += len(message)
                heard.last_audio_at = loop.time()
                await sound.play(message)
                continue
            with contextlib.suppress(ValueError):
                event = json.loads(message)
                kind = event.get("type") if isinstance(event, dict) else None
                if kind == "clear":
                    await sound.clear()
                elif kind == "hangup":
                    heard.ending = str(event.get("reason"))
                elif kind == "error":
                    heard.ending = str(event.get("message") or event.get("code"))
