"""The HTTP edge: problem+json for every error, and the request body limit.

Every error a client can see is `application/problem+json` with a stable `type`. Domain
errors carry their own type and status; validation errors list what was wrong without
echoing input back; anything unexpected is a bare `internal_error` with no internal text.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chat.errors import ChatError
from ledger import LedgerError

log = logging.getLogger(__name__)

BODY_BYTES_MAX = 64 * 1024
PROBLEM = "application/problem+json"


def problem(status: int, type_: str, title: str, detail: str | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"type": type_, "title": title, "status": status}
    if detail:
        body["detail"] = detail
    body.update(extra)
    headers = {"Retry-After": "5"} if status == 503 else None
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


async def on_chat_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ChatError)
    return problem(exc.status, exc.type, exc.title, str(exc) or None)


# The ledger's stable codes and what each means at the HTTP edge.
_LEDGER_STATUS = {
    "insufficient_balance": (402, "The wallet is empty"),
    "ref_conflict": (409, "This ref was already used for a different amount"),
    "amount_invalid": (422, "The amount is not valid"),
    "ref_invalid": (422, "The ref is not valid"),
    "unbalanced": (422, "The postings do not balance"),
    "account_unknown": (404, "No such account"),
}


async def on_ledger_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LedgerError)
    code = getattr(exc, "code", "ledger_error")
    status, title = _LEDGER_STATUS.get(code, (500, "The wallet could not be updated"))
    if status == 500:
        log.error("ledger error %s", code, exc_info=exc)
        return problem(500, "internal_error", "Something went wrong on our side")
    return problem(status, code, title, str(exc) or None)


async def on_validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"location": [str(p) for p in e.get("loc", ())], "message": str(e.get("msg", "")), "kind": e.get("type")}
        for e in exc.errors()
    ]
    if any(e["kind"] == "json_invalid" for e in errors):
        return problem(400, "json_invalid", "The body is not valid JSON", "Send a JSON object.")
    return problem(422, "validation_failed", "Some fields are missing or wrong", errors=errors)


async def on_http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    kinds = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large", 401: "unauthorized"}
    return problem(exc.status_code, kinds.get(exc.status_code, "http_error"), str(exc.detail))


async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem(500, "internal_error", "Something went wrong on our side")


class BodyLimit:
    """Refuses request bodies over the limit with 413, whether or not they declare a length."""

    def __init__(self, app: ASGIApp, *, bytes_max: int = BODY_BYTES_MAX) -> None:
        self.app = app
        self.bytes_max = bytes_max

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.bytes_max):
            await self._refuse(scope, receive, send)
            return
        # Read the body up front (it is small by definition) so an oversized one is
        # refused before any handler sees a byte of it, then replay it downstream.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.bytes_max:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem(
            413,
            "body_too_large",
            "The request body is too large",
            f"A request body holds at most {self.bytes_max} bytes.",
        )
        await response(scope, receive, send)
