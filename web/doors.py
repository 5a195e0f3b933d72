"""Call doors that arrive after the app already serves (a cold start, issue 24).

`avagenc serve` answers text before voice has loaded (app.voice.VoiceLater). Its call
routes are added to the running app once built (`add_doors`), and until then a request to
one of them waits here for them instead of meeting a 404: a call placed in the first
seconds of an instance's life is answered late, never refused. Should the doors not come
(they failed to build, or take longer than `wait_s`), the caller is told to retry: 503
`voice_starting` over HTTP, close code 1013 (try again later) on a socket.

The same middleware tells the doors' loading what the server is doing (`Traffic`): loaded
beside a woken instance's first text turn, they made it several times slower than a warm
one (BENCHMARKS.md "Cold start: the doors load when the server is idle"), so the loading
waits for a quiet moment, or for a call, which needs the doors anyway.

Doors may come in stages (`LaterDoors`): the browser's WebRTC door costs about a third of
voice's import (aiortc, aioice, PyAV, DNS), which a speaker's or a phone's call need not
wait for (docs/scaling.md#cold-start). A path meets the first stage whose prefix it starts
with.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fastapi import APIRouter, FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from web.edge import on_domain_error, problem

# Every call door's path starts with this (voice/doors.py, voice/phone.py, voice/webrtc.py).
DOORS_PREFIX = "/v1/voice/"
# The browser's call door (voice/webrtc.py), which may come after the others (`LaterDoors`).
BROWSER_DOOR_PREFIX = "/v1/voice/webrtc"
# How long a call waits for the doors being built before it is told to retry.
DOORS_WAIT_S = 60.0
# A socket closed because the server cannot take it yet (RFC 6455 §7.4.1 "try again later").
_TRY_AGAIN_LATER = 1013


class Traffic:
    """The requests a server answers while its call doors wait to load, as the loading
    (app.voice.VoiceLater) sees them through `DoorsStarting`.

    A request counts from its arrival until its answer begins: a live-event stream, whose
    answer goes on for hours, counts only until it opens, so a client holding one open
    does not keep the doors away. Once the loading has begun (`quiet` returned), nothing
    is counted any more."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.watching = True
        self._quiet_since = time.monotonic()
        self._call = False
        self._changed = asyncio.Event()

    def arrived(self) -> None:
        self.in_flight += 1

    def answered(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._quiet_since = time.monotonic()
            self._changed.set()

    def call_arrived(self) -> None:
        """A call door was reached before the doors exist: the loading begins at once."""
        self._call = True
        self._changed.set()

    async def quiet(self, spell_s: float, *, at_most_s: float) -> str:
        """Wait until no request has been in flight for `spell_s` (counted from now at the
        earliest), a call door is reached, or `at_most_s` has passed, whichever comes
        first, and say which. Requests stop being counted."""
        now = time.monotonic()
        deadline = now + at_most_s
        self._quiet_since = max(self._quiet_since, now)
        try:
            while not self._call:
                now = time.monotonic()
                wait_s = deadline - now
                if wait_s <= 0:
                    return f"no quiet within {at_most_s:g} s"
                if self.in_flight == 0:
                    left_s = self._quiet_since + spell_s - now
                    if left_s <= 0:
                        return "the server is quiet"
                    wait_s = min(wait_s, left_s)
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait_s):
                        await self._changed.wait()
            return "a call came"
        finally:
            self.watching = False


@dataclass(frozen=True)
class LaterDoors:
    """Call routes under `prefix` that exist once `open_()` says so; `ready` is set when
    their loading has ended, built or not."""

    prefix: str
    ready: asyncio.Event
    open_: Callable[[], bool]
    # Set when a request for these doors arrives while they are not open (their loading may
    # wait for it, app.voice.VoiceLater).
    wanted: asyncio.Event | None = None


class DoorsStarting:
    """ASGI middleware: a request under `prefix` waits until `ready` is set, then goes on to
    the app if `open_()` says the doors are there, else is told to retry; a request under
    the prefix of one of `later` (more specific prefixes, looked at first) does the same
    with that stage's. Given `traffic`, such a request tells it a call has come, and every
    other HTTP request is counted in it while it watches."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        ready: asyncio.Event,
        open_: Callable[[], bool],
        prefix: str = DOORS_PREFIX,
        wait_s: float = DOORS_WAIT_S,
        traffic: Traffic | None = None,
        later: Sequence[LaterDoors] = (),
    ) -> None:
        self.app = app
        self._stages = (*later, LaterDoors(prefix, ready, open_))
        self._prefix = prefix
        self._wait_s = wait_s
        self._traffic = traffic

    def _stage(self, path: str) -> LaterDoors | None:
        """The doors `path` belongs to, while they are not open yet."""
        if not path.startswith(self._prefix):
            return None
        stage = next(s for s in self._stages if path.startswith(s.prefix))  # the last one's is `prefix`
        return None if stage.open_() else stage

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        traffic = self._traffic
        stage = self._stage(scope["path"]) if scope["type"] in ("http", "websocket") else None
        if stage is not None:
            if traffic is not None:
                traffic.call_arrived()
            if stage.wanted is not None:
                stage.wanted.set()
            try:
                async with asyncio.timeout(self._wait_s):
                    await stage.ready.wait()
            except TimeoutError:
                pass
            if not stage.open_():
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": _TRY_AGAIN_LATER, "reason": "voice is starting"})
                else:
                    answer = problem(503, "voice_starting", "Calls are starting on this server", "Try again soon.")
                    await answer(scope, receive, send)
                return
        elif traffic is not None and traffic.watching and scope["type"] == "http":
            await self._counted(traffic, scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _counted(self, traffic: Traffic, scope: Scope, receive: Receive, send: Send) -> None:
        """The request, counted in `traffic` until its answer begins (or it ends without one)."""
        answering = False

        async def sending(message: Message) -> None:
            nonlocal answering
            if not answering and message["type"] == "http.response.start":
                answering = True
                traffic.answered()
            await send(message)

        traffic.arrived()
        try:
            await self.app(scope, receive, sending)
        finally:
            if not answering:
                traffic.answered()


def add_doors(app: FastAPI, doors: Sequence[APIRouter], door_errors: Sequence[type[Exception]]) -> None:
    """Add call routes and their errors to an app that may already be serving.

    Starlette reads its routes on every request, so new ones answer at once; the error
    handlers are copied into the middleware stack when it is built, so the stack is
    dropped and the next request builds it again with them (requests in flight finish on
    the old one)."""
    for door in doors:
        app.include_router(door)
    for error in door_errors:
        app.add_exception_handler(error, on_domain_error)
    app.middleware_stack = None
