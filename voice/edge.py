"""The voice edges: how a domain error answers on a WebSocket door and on a live call.

One vocabulary (every domain error's stable `type`: chat's, the ledger's, voice's), two
translations here, each a table so a new type is one line:

- a WebSocket door (speaker, phone) sends the error event of docs/sockets.md#speaker-protocol,
  `{"type":"error","code":<type>,"message":…}` and closes with the code `CLOSE_CODES`
  names (1008 for anything else); `refuse` is the one function every door uses;
- a live call hears a short sentence instead (`notice_for`): the person is listening, not
  reading. An empty wallet ends the call: the notice is a goodbye, the hang-up reason is
  `wallet_empty` and the socket closes 4402.

WebRTC signalling is HTTP, so it gets the HTTP translator (`chat.edge`). Every text frame
is parsed here too (`parse_frame`), with a size and a nesting limit, so a hostile frame is
a 1009 or 1008 and never a `RecursionError`.
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any

from fastapi import WebSocket
from starlette.websockets import WebSocketDisconnect, WebSocketState

from agents import Segment, SpokenReply
from chat import ChatError
from ledger import LedgerError
from voice.errors import BadJson, FrameTooLarge, ProtocolViolation, VoiceError

log = logging.getLogger(__name__)

# Every error a door may raise on purpose; anything else is a bug (1011, logged).
DOMAIN_ERRORS: tuple[type[Exception], ...] = (ChatError, LedgerError, VoiceError)

# Close codes by error type (docs/sockets.md#close-codes); every other domain error is a protocol refusal (1008).
CLOSE_CODES: dict[str, int] = {
    "unauthorized": 4401,
    "insufficient_balance": 4402,
    "call_in_progress": 4409,
    "unsupported_format": 1003,
    "frame_too_large": 1009,
    "server_busy": 1013,
}
INTERNAL_CLOSE = 1011

# How a call that ends for a reason closes its socket (docs/sockets.md#hang-up-reasons): 1000 unless named here.
HANGUP_CLOSE_CODES: dict[str, int] = {"wallet_empty": 4402, "device_revoked": 4401}
# Reasons a call is cut for, with no goodbye to drain: the door sends the `hangup` event
# itself, just before it closes.
HANGUP_ON_CLOSE: frozenset[str] = frozenset({"device_revoked"})
# The hang-up reason an error ends a live call with; an error not named here lets the call go on.
HANGUP_REASONS: dict[str, str] = {"insufficient_balance": "wallet_empty"}

# What Ava says on a live call when a turn is refused, by error type. Spoken, so short
# and in her voice; the emotion colours it like any of her sentences.
_NOTICES: dict[str, Segment] = {
    "insufficient_balance": Segment(
        "Your wallet is empty, so I have to hang up for now. Top it up and call me again!", "guilty"
    ),
    "thread_busy": Segment("I'm still working on your last request. Say that again in a moment?", "anxious"),
    "message_too_long": Segment("That was a lot at once. Could you say it in shorter pieces?", "confused"),
}
_NOTICE_OTHERWISE = Segment("Sorry, I couldn't do that just now. Could you say it again?", "guilty")

FRAME_DEPTH_MAX = 16


def close_code(exc: BaseException) -> int:
    return CLOSE_CODES.get(getattr(exc, "type", ""), 1008) if isinstance(exc, DOMAIN_ERRORS) else INTERNAL_CLOSE


def error_event(exc: BaseException, correlation: str | None = None) -> dict[str, str]:
    """The sockets' error event (docs/sockets.md#close-codes); an unexpected error says
    nothing of its insides, only the id the server's log line about it carries."""
    if isinstance(exc, DOMAIN_ERRORS):
        return {"type": "error", "code": getattr(exc, "type", "error"), "message": str(exc)}
    event = {"type": "error", "code": "internal_error", "message": "Something went wrong on our side."}
    if correlation is not None:
        event["correlation_id"] = correlation
    return event


async def refuse(websocket: WebSocket, exc: BaseException) -> int:
    """Send the error event, then close with the type's code (which is returned). A peer
    that is already gone is not an error."""
    code = close_code(exc)
    correlation = None
    if code == INTERNAL_CLOSE:
        correlation = f"err_{secrets.token_hex(8)}"
        log.error("voice door failed [%s]", correlation, exc_info=exc)
    try:
        if websocket.application_state == WebSocketState.CONNECTED:
            await websocket.send_text(json.dumps(error_event(exc, correlation)))
            await websocket.close(code=code)
    except (WebSocketDisconnect, RuntimeError, OSError):
        log.debug("peer gone before the error could be sent")
    return code


def notice_for(exc: BaseException) -> tuple[SpokenReply, str | None]:
    """What Ava says on a call when a turn is refused, and the hang-up reason when the
    error ends the call (None: the call goes on)."""
    type_ = getattr(exc, "type", "") if isinstance(exc, DOMAIN_ERRORS) else ""
    reason = HANGUP_REASONS.get(type_)
    segment = _NOTICES.get(type_, _NOTICE_OTHERWISE)
    return SpokenReply((segment,), end_call=reason is not None), reason


def _nested_deeper(text: str, depth_max: int) -> bool:
    """Whether brackets outside strings nest deeper than `depth_max`: one linear pass,
    before the parser (whose recursion a deep frame would exhaust) sees the text."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > depth_max:
                return True
        elif char in "]}":
            depth -= 1
    return False


def parse_frame(text: str | None, *, bytes_max: int, depth_max: int = FRAME_DEPTH_MAX) -> dict[str, Any]:
    """One JSON text frame as an object, within the size and nesting limits."""
    if text is None:
        raise ProtocolViolation("Control events are JSON text frames.")
    if len(text) > bytes_max or len(text.encode("utf-8", "surrogatepass")) > bytes_max:
        raise FrameTooLarge(f"Text frames hold at most {bytes_max} bytes.")
    if _nested_deeper(text, depth_max):
        raise ProtocolViolation(f"JSON nested deeper than {depth_max} levels is refused.")
    try:
        event = json.loads(text)
    except (ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError and also an integer longer than Python's
        # conversion limit (4,300 digits), which json.loads refuses with a bare ValueError.
        raise BadJson("Text frames must be JSON.") from exc
    if not isinstance(event, dict):
        raise ProtocolViolation("Text frames must be JSON objects.")
    return event
