"""The ASGI app: every router, the error map and the operations endpoints, assembled once.

It exists so that the HTTP edge is put together at the edge, from what the composition
root hands it, and no domain has to know FastAPI. It builds nothing of the product
itself: the stores, turns and doors arrive as parameters. The call doors (voice) sit above
this package and bring their routers and error class in the same way, so the app lists
every door in one order without importing any of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from fastapi import APIRouter, FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from agents import Connections, Knowledge, LinkError
from chat import ChatError, Devices, Forgetting, Phones, Rate, Wallet
from ledger import LedgerError
from reminders import CallbackGate, Delivery, ReminderError, Reminders
from web.api import ChatApi, build_router
from web.compat import build_compat_router
from web.devices import DeviceLimits, build_devices_router
from web.edge import (
    DATABASE_GONE,
    BodyLimit,
    RequestTimeLimit,
    on_chat_error,
    on_database_gone,
    on_domain_error,
    on_http_error,
    on_ledger_error,
    on_unexpected,
    on_validation_error,
    problem,
    problem_responses,
)
from web.integrations import build_integrations_router
from web.knowledge import build_knowledge_router
from web.operations import RequestContext, build_operations_router
from web.pages import build_pages_router
from web.phones import build_phones_router
from web.redaction import redact_access_log
from web.reminders import build_callback_router, build_reminders_router
from web.wallet import build_wallet_router


@dataclass(frozen=True, slots=True)
class WakeDoors:
    """What the reminders' routes need: present only where this process delivers notes."""

    reminders: Reminders
    delivery: Delivery
    gate: CallbackGate


def build_app(
    api: ChatApi,
    *,
    pool: asyncpg.Pool,
    wallet: Wallet,
    admin_api_key: str | None,
    knowledge: Knowledge,
    forgetting: Forgetting,
    knowledge_timeout_s: float,
    wakes: WakeDoors | None,
    connections: Connections | None,
    doors: Sequence[APIRouter] = (),
    door_errors: Sequence[type[Exception]] = (),
    devices: Devices | None = None,
    device_limits: DeviceLimits | None = None,
    phones: Phones | None = None,
    phone_codes_per_person: Rate | None = None,
    phone_codes_per_address: Rate | None = None,
    request_time_max_s: float | None = None,
    metrics_enabled: bool = True,
    metrics_token: str | None = None,
    first_product_routes: bool = False,
) -> FastAPI:
    """The app over the text API, the wallet, knowledge, wake notes, the given `doors`
    (the call routers) and the integrations; `door_errors` answer as any domain error."""
    app = FastAPI(
        title="Avagenc Chat",
        version="0.1.0",
        description="A group chat where the person is the only human and every other member is an AI agent.",
        # Both of FastAPI's docs pages load from a CDN; web.pages serves /docs from a package.
        docs_url=None,
        redoc_url=None,
    )
    app.include_router(build_router(api))
    app.include_router(build_wallet_router(api, wallet, admin_api_key=admin_api_key))
    app.include_router(
        build_knowledge_router(api, knowledge=knowledge, forgetting=forgetting, timeout_s=knowledge_timeout_s)
    )
    if wakes is not None:
        app.include_router(build_reminders_router(api, wakes.reminders))
        app.include_router(build_callback_router(wakes.reminders, wakes.delivery, wakes.gate))
    if devices is not None and device_limits is not None:
        app.include_router(build_devices_router(api, devices, device_limits))
    if phones is not None:
        codes = phone_codes_per_person or Rate(max=5, window_s=3600)
        per_address = phone_codes_per_address or Rate(max=20, window_s=3600)
        app.include_router(build_phones_router(api, phones, codes_per_person=codes, codes_per_address=per_address))
    for door in doors:
        app.include_router(door)
    if connections is not None:
        app.include_router(build_integrations_router(api, connections))
    firebase_origins = api.firebase_web.origins() if api.firebase_web is not None else ()
    app.include_router(build_pages_router(connect_origins=firebase_origins))
    if first_product_routes:
        app.include_router(
            build_compat_router(
                api,
                wallet=wallet,
                knowledge=knowledge,
                forgetting=forgetting,
                reminders=wakes.reminders if wakes is not None else None,
                knowledge_timeout_s=knowledge_timeout_s,
            )
        )
    app.include_router(build_operations_router(metrics_enabled=metrics_enabled, metrics_token=metrics_token))
    app.add_exception_handler(ChatError, on_chat_error)
    app.add_exception_handler(LedgerError, on_ledger_error)
    for error in door_errors:
        app.add_exception_handler(error, on_domain_error)
    app.add_exception_handler(LinkError, on_domain_error)
    app.add_exception_handler(ReminderError, on_domain_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(HTTPException, on_http_error)
    for gone in DATABASE_GONE:
        app.add_exception_handler(gone, on_database_gone)
    app.add_exception_handler(Exception, on_unexpected)
    app.add_middleware(BodyLimit)
    if request_time_max_s is not None:
        app.add_middleware(RequestTimeLimit, seconds=request_time_max_s)
    app.add_middleware(RequestContext)  # outermost of ours: its id is on every line the others log
    redact_access_log()  # credentials some clients must put in URLs never reach the log

    @app.get("/healthz", tags=["operations"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"], response_model=None, responses=problem_responses(503))
    async def readyz() -> Any:
        try:
            async with asyncio.timeout(2):
                await pool.fetchval("SELECT 1")
        except (TimeoutError, OSError, asyncpg.PostgresError):
            return problem(503, "not_ready", "The database is not reachable")
        return {"status": "ready"}

    return app
