"""What the operator's tools read from the HTTP edge: each request's id and count, and the
`/metrics` page.

`RequestContext` wraps the whole app: every request and socket gets an id (the client's
`X-Request-Id` when it sends a plain one), carried by every log line written while it is
served and sent back in the response's `X-Request-Id`; every HTTP answer is counted by its
route *template* (`/v1/reminders/{reminder_id}`, never the id itself, so the label set stays
bounded) and status. `/metrics` serves the process's metrics in Prometheus text, behind a
bearer token when one is configured (docs/operations.md#metrics).
"""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from telemetry import REQUEST_ID_HEADER, metrics, request_id
from telemetry.metrics import CONTENT_TYPE
from web.edge import REQUEST_ID_SCOPE_KEY, problem


def route_of(scope: Scope) -> str:
    """The matched route's template, or `unmatched` (a 404 names no route)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "unmatched"


class RequestContext:
    """Gives each request an id for its log lines and counts its answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", ())).get(REQUEST_ID_HEADER.encode())
        with request_id(given.decode("latin-1") if given else None) as rid:
            scope[REQUEST_ID_SCOPE_KEY] = rid
            if scope["type"] == "websocket":
                await self.app(scope, receive, send)
                return
            status = 500  # what the client gets if the app raises before answering

            async def counted(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                    headers = list(message.get("headers", ()))
                    headers.append((REQUEST_ID_HEADER.encode(), rid.encode()))
                    message = {**message, "headers": headers}
                await send(message)

            try:
                await self.app(scope, receive, counted)
            finally:
                metrics.http_requests.inc(route=route_of(scope), method=scope.get("method", ""), status=status)


def build_operations_router(*, metrics_enabled: bool, metrics_token: str | None) -> APIRouter:
    """`GET /metrics`: Prometheus text; 404 when switched off, 401 without the token when one is set."""
    router = APIRouter(include_in_schema=False)

    @router.get("/metrics")
    async def scrape(request: Request) -> Any:
        if not metrics_enabled:
            return problem(404, "not_found", "Not found")
        if metrics_token is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {metrics_token}".encode()):
                response = problem(401, "unauthorized", "Send the metrics token as a bearer token")
                response.headers["WWW-Authenticate"] = "Bearer"
                return response
        return Response(await metrics.registry.exposition(), media_type=CONTENT_TYPE)

    return router
