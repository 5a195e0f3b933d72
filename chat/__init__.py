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
from chat.forgetting import Erased, Forgetting, PendingWakes, no_wakes
from chat.identity import LocalTokens, TokenVerifier
from chat.knowledge_api import build_knowledge_router
from chat.learning import Learning
from chat.people import People, Person
from chat.routing import mentions, route
from chat.runs import Run, Runs
from chat.threads import Message, Threads
from chat.turns import FactLookup, TurnResult, Turns
from chat.wallet import Wallet
from chat.wallet_api import build_wallet_router

__all__ = [
    "BodyLimit",
    "ChatApi",
    "ChatError",
    "Erased",
    "EventHub",
    "EventLog",
    "FactLookup",
    "Forgetting",
    "Learning",
    "LocalTokens",
    "Message",
    "PendingWakes",
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
    "build_knowledge_router",
    "build_router",
    "build_wallet_router",
    "drain_detached",
    "mentions",
    "no_wakes",
    "on_chat_error",
    "on_http_error",
    "on_ledger_error",
    "on_unexpected",
    "on_validation_error",
    "parse_zone",
    "problem",
    "route",
    "run_detached",
]
