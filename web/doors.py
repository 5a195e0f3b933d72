"""Call doors that arrive after the app already serves (a cold start, issue 24).

`avagenc serve` answers text before voice has loaded (app.voice.VoiceLater). Its call
routes are added to the running app once built (`add_doors`), and until then a request to
one of them waits here for them instead of meeting a 404: a call placed in the first
seconds of an instance's life is answered late, never refused. Should the doors not come
(they failed to build, or take longer than `wait_s`), the caller is told to retry: 503
`voice_starting` over HTTP, close code 1013 (try again later) on a socket.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from fastapi import APIRouter, FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from web.edge import on_domain_error, problem

# Every call door's path starts with this (voice/doors.py, voice/phone.py, voice/webrtc.py).
DOORS_PREFIX = "/v1/voice/"
# How long a call waits for the doors being built before it is told to retry.
DOORS_WAIT_S = 60.0
# A socket closed because the server cannot take it yet (RFC 6455 §7.4.1 "try again later").
_TRY_AGAIN_LATER = 1013


class DoorsStarting:
    """ASGI middleware: a request under `prefix` waits until `ready` is set, then goes on to
    the app if `open_()` says the doors are there, else is told to retry."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        ready: asyncio.Event,
        open_: Callable[[], bool],
        prefix: str = DOORS_PREFIX,
        wait_s: float = DOORS_WAIT_S,
    ) -> None:
        self.app = app
        self._ready = ready
        self._open = open_
        self._prefix = prefix
        self._wait_s = wait_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"].startswith(self._prefix) and not self._open():
            try:
                async with asyncio.timeout(self._wait_s):
                    await self._ready.wait()
            except TimeoutError:
                pass
            if not self._open():
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": _TRY_AGAIN_LATER, "reason": "voice is starting"})
                else:
                    answer = problem(503, "voice_starting", "Calls are starting on this server", "Try again soon.")
                    await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


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
