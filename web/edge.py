"""The HTTP edge: problem+json for every error, the statuses the OpenAPI document
lists, and the request body limit.

Every error a client can see is `application/problem+json` with a stable `type`. Domain
errors (chat, ledger, voice, reminders) carry only their type; the status each type answers with is
chosen here, in one table (`HTTP_STATUS`). Validation errors list what was wrong without
echoing input back; anything unexpected is a bare `internal_error` with no internal text.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import Any

import asyncpg
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from telemetry import metrics
from web.schemas import Problem

log = logging.getLogger(__name__)

# Where web.operations keeps the request's id in the ASGI scope, for the handlers of
# unexpected errors, which Starlette runs outside every middleware.
REQUEST_ID_SCOPE_KEY = "avagenc.request_id"

BODY_BYTES_MAX = 64 * 1024
PROBLEM = "application/problem+json"

_DESCRIPTIONS = {
    400: "Malformed request (bad JSON, unknown time zone, unusable offer)",
    401: "Missing, expired or wrong bearer token",
    402: "The wallet is empty",
    403: "Not signed by the expected sender",
    404: "Not found (or not yours)",
    409: "Conflicts with what is already there",
    413: "The request body is too large",
    415: "Unsupported media format",
    422: "Some fields are missing or wrong",
    429: "Too many requests or live connections; retry after the Retry-After seconds",
    503: "Busy; retry after the Retry-After seconds",
}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses=` entry for the problem statuses a route answers with."""
    schema = Problem.model_json_schema()
    return {
        status: {"description": _DESCRIPTIONS.get(status, "Problem"), "content": {PROBLEM: {"schema": schema}}}
        for status in sorted(statuses)
    }


def problem(status: int, type_: str, title: str, detail: str | None = None, **extra: Any) -> JSONResponse:
    metrics.errors.inc(kind=type_)  # the types are the error map's and the edges' own: a bounded set
    body: dict[str, Any] = {"type": type_, "title": title, "status": status}
    if detail:
        body["detail"] = detail
    body.update(extra)
    headers = {"Retry-After": "5"} if status == 503 else None
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


# The one table from an error's stable type to how it answers over HTTP: (status, title).
# Every domain error (chat, ledger, voice) has its type here; tests/e2e/test_error_edges.py
# walks them all. A type missing from it is a bug: 500, logged.
HTTP_STATUS: dict[str, tuple[int, str]] = {
    # chat
    "unauthorized": (401, "Sign in first"),
    "not_found": (404, "Not found"),
    "message_blank": (422, "The message is empty"),
    "message_too_long": (422, "The message is too long"),
    "text_invalid": (422, "The text has characters that cannot be kept"),
    "time_zone_invalid": (400, "Unknown time zone"),
    "date_invalid": (422, "The date is out of range"),
    "thread_busy": (503, "Your thread is busy with another request"),
    "request_timeout": (503, "The request took too long"),
    "knowledge_unavailable": (503, "Memory is not reachable right now"),
    "too_many_streams": (429, "Too many live connections"),
    "rate_limited": (429, "Too many requests; retry after the Retry-After seconds"),
    "local_sign_in_disabled": (404, "Local sign-in is not available"),
    "admin_disabled": (404, "The admin API is switched off"),
    "pairing_code_invalid": (400, "No speaker is waiting with that code"),
    "pairing_code_burnt": (400, "Too many wrong codes for this speaker; start pairing again"),
    "too_many_devices": (409, "Too many paired devices"),
    "phone_number_invalid": (422, "The phone number is not valid"),
    "phone_code_invalid": (400, "The code is wrong, used or expired"),
    "phone_taken": (409, "The number is verified on another account"),
    "too_many_phones": (409, "Too many phone numbers"),
    "phone_delivery_failed": (503, "The code could not be sent"),
    # ledger
    "insufficient_balance": (402, "The wallet is empty"),
    "ref_conflict": (409, "This ref was already used for a different amount"),
    "amount_invalid": (422, "The amount is not valid"),
    "ref_invalid": (422, "The ref is not valid"),
    "unbalanced": (422, "The postings do not balance"),
    "account_unknown": (404, "No such account"),
    "price_missing": (500, "No price is set for this usage"),
    # voice
    "call_in_progress": (409, "You are already on a call"),
    "server_busy": (503, "Too many calls right now"),
    "call_not_found": (404, "No such call"),
    "offer_invalid": (400, "The offer could not be answered"),
    "protocol_violation": (400, "The request breaks the protocol"),
    "bad_json": (400, "The body is not valid JSON"),
    "unsupported_format": (415, "The media format is not supported"),
    "frame_too_large": (413, "The frame is too large"),
    "twilio_signature_invalid": (403, "The request is not signed by Twilio"),
    "phone_webhook_disabled": (404, "The phone webhook is not configured"),
    "webhook_replayed": (409, "This call was already answered"),
    # reminders
    "time_invalid": (422, "The time is not valid"),
    "time_in_past": (422, "That time has passed"),
    "time_too_far": (422, "That time is too far ahead"),
    "too_many_pending": (409, "Too many pending notes"),
    "note_invalid": (422, "The note is not valid"),
    "reminder_not_found": (404, "No such reminder"),
    "reminder_not_pending": (409, "The reminder is no longer pending"),
    "reminder_queue_unavailable": (503, "The reminder queue is unavailable"),
    "callback_unauthorized": (401, "Not a scheduler"),
    # integrations (agents' linking)
    "integration_unknown": (404, "No such integration"),
    "link_state_invalid": (400, "The link request expired or is not yours; start linking again"),
    "linking_unavailable": (409, "This server cannot link that integration"),
    "link_rejected": (400, "The provider refused the link"),
    "provider_unavailable": (503, "The provider did not answer; try again"),
}


def _ids(request: Request, correlation: str) -> dict[str, str]:
    """A 500's log fields: its correlation id and the request's own id (web.operations)."""
    fields = {"correlation_id": correlation}
    rid = request.scope.get(REQUEST_ID_SCOPE_KEY)
    if isinstance(rid, str):
        fields["request_id"] = rid
    return fields


async def on_domain_error(request: Request, exc: Exception) -> JSONResponse:
    """Any domain error (chat, ledger, voice: anything with a stable `type`) as problem+json."""
    type_ = str(getattr(exc, "type", "") or "")
    status, title = HTTP_STATUS.get(type_, (500, ""))
    if status >= 500 and status != 503:
        correlation = correlation_id()
        log.error(
            "domain error %s answered 500 [%s]",
            type_ or type(exc).__name__,
            correlation,
            exc_info=exc,
            extra=_ids(request, correlation),
        )
        return _internal(correlation)
    response = problem(status, type_, title, str(exc) or None)
    retry_after_s = getattr(exc, "retry_after_s", None)
    if status == 429 and isinstance(retry_after_s, int):
        response.headers["Retry-After"] = str(retry_after_s)
    return response


# The names web.app registers; one translator behind them.
on_chat_error = on_domain_error
on_ledger_error = on_domain_error


async def on_validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"location": [str(p) for p in e.get("loc", ())], "message": str(e.get("msg", "")), "kind": e.get("type")}
        for e in exc.errors()
    ]
    if any(e["kind"] == "json_invalid" for e in errors):
        return problem(400, "json_invalid", "The body is not valid JSON", "Send a JSON object.")
    return problem(422, "validation_failed", "Some fields are missing or wrong", errors=errors)


async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    kinds = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large", 401: "unauthorized"}
    response = problem(exc.status_code, kinds.get(exc.status_code, "http_error"), str(exc.detail))
    for name, value in (exc.headers or {}).items():
        response.headers[name] = value
    if exc.status_code == 405:
        # RFC 9110 asks a 405 to name every method the path takes; Starlette names only
        # those of the first route that matched the path (GET and POST /v1/messages are two).
        response.headers["Allow"] = ", ".join(_allowed_methods(request))
    return response


_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def _allowed_methods(request: Request) -> list[str]:
    """The methods some route takes on this path: asked of the router itself, method by
    method, since included routers nest their routes out of a flat list's sight."""
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes)
    ]


def correlation_id() -> str:
    """A fresh id tying a 5xx answer to the server's log line about it."""
    return f"err_{secrets.token_hex(8)}"


def _internal(correlation: str) -> JSONResponse:
    # The body is generic on purpose; the id is the one thing an operator needs to find
    # the traceback the log line beside it carries.
    response = problem(500, "internal_error", "Something went wrong on our side", correlation_id=correlation)
    # Starlette re-raises after sending a 500 and the server then drops the connection;
    # saying so keeps a keep-alive client from reusing a socket that is about to close.
    response.headers["Connection"] = "close"
    return response


# The database went away under a request (a restart, a failover, a cut connection). The pool
# drops the broken connection when it comes back, so the client is told to retry (503 with
# Retry-After), not that the product broke.
DATABASE_GONE: tuple[type[Exception], ...] = (
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
    ConnectionError,
)


async def on_database_gone(request: Request, exc: Exception) -> JSONResponse:
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__)
    return problem(503, "database_unavailable", "The database is not reachable right now", "Try again in a moment.")


async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    correlation = correlation_id()
    log.error(
        "unhandled error on %s %s [%s]",
        request.method,
        request.url.path,
        correlation,
        exc_info=exc,
        extra=_ids(request, correlation),
    )
    return _internal(correlation)


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


class RequestTimeLimit:
    """Answers a request that has not begun its response within `seconds` with 503
    `request_timeout` (and `Retry-After`), so no client waits on an answer forever and no
    handler holds its resources past the limit (docs/http.md#limits).

    The clock stops once the response has started: a live-event stream runs as long as
    it is open. A turn the request was waiting for is not cut: it runs detached and is
    answered to a retry with the same `client_id` (docs/http.md#idempotency)."""

    def __init__(self, app: ASGIApp, *, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                deadline.reschedule(None)
            await send(message)

        try:
            async with asyncio.timeout(self.seconds) as deadline:
                await self.app(scope, receive, watched)
        except TimeoutError:
            if started:
                raise
            log.warning("request over %.0f s: %s %s", self.seconds, scope.get("method"), scope.get("path"))
            response = problem(
                503,
                "request_timeout",
                "The request took too long",
                f"No answer within {self.seconds:g} s; try again (with the same client_id, for a message).",
            )
            await response(scope, receive, send)
