"""The HTTP edge: the FastAPI routers and their request and response bodies, the one map
from every domain error to problem+json, the body limit, and the app that puts them together.

It sits outside the domains so that none of them imports FastAPI or Starlette: a domain
raises its own typed errors and this package decides how they answer over HTTP. The call
doors (voice) use its problem helpers, so a client meets one error vocabulary at every
door. Other packages import only what is listed here.
"""

from web.api import ChatApi, EdgeLimits, FirebaseWeb, build_router
from web.app import WakeDoors, build_app
from web.devices import WRONG_CODES_WINDOW_S, DeviceLimits, build_devices_router
from web.edge import (
    DATABASE_GONE,
    HTTP_STATUS,
    BodyLimit,
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
from web.reminders import build_callback_router, build_reminders_router
from web.schemas import KeepableStr
from web.wallet import build_wallet_router

__all__ = [
    "DATABASE_GONE",
    "HTTP_STATUS",
    "WRONG_CODES_WINDOW_S",
    "BodyLimit",
    "ChatApi",
    "DeviceLimits",
    "EdgeLimits",
    "FirebaseWeb",
    "KeepableStr",
    "WakeDoors",
    "build_app",
    "build_callback_router",
    "build_devices_router",
    "build_integrations_router",
    "build_knowledge_router",
    "build_reminders_router",
    "build_router",
    "build_wallet_router",
    "on_chat_error",
    "on_database_gone",
    "on_domain_error",
    "on_http_error",
    "on_ledger_error",
    "on_unexpected",
    "on_validation_error",
    "problem",
    "problem_responses",
]
