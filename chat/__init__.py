"""The chat: people, their one thread, routing, turns, the text API and live events.

Other domains and main.py import only what is listed here.
"""

from chat.api import ChatApi, build_router, parse_zone
from chat.detached import drain_detached, run_detached
from chat.edge import (
    BodyLimit,
    on_chat_error,
    on_http_error,
    on_ledger_error,
    on_unexpected,
    on_validation_error,
    problem,
)
from chat.errors import ChatError, Unauthorized
from chat.events import EventHub, EventLog
from chat.identity import LocalTokens, TokenVerifier
from chat.integrations_api import build_integrations_router, on_link_error
from chat.people import People, Person
from chat.routing import mentions, route
from chat.runs import Run, Runs
from chat.threads import Message, Threads
from chat.turns import TurnResult, Turns
from chat.wallet import Wallet
from chat.wallet_api import build_wallet_router

__all__ = [
    "BodyLimit",
    "ChatApi",
    "ChatError",
    "EventHub",
    "EventLog",
    "LocalTokens",
    "Message",
    "People",
    "Person",
    "Run",
    "Runs",
    "Threads",
    "TokenVerifier",
    "TurnResult",
    "Turns",
    "Unauthorized",
    "Wallet",
    "build_integrations_router",
    "build_router",
    "build_wallet_router",
    "drain_detached",
    "mentions",
    "on_chat_error",
    "on_http_error",
    "on_ledger_error",
    "on_link_error",
    "on_unexpected",
    "on_validation_error",
    "parse_zone",
    "problem",
    "route",
    "run_detached",
]
