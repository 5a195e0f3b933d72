"""The chat: people, their one thread, routing, turns, the text API and live events.

Other domains and main.py import only what is listed here.
"""

from chat.api import ChatApi, build_router, parse_zone
from chat.detached import cancel_detached, detach, drain_detached, run_detached
from chat.edge import (
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
from chat.errors import ChatError, TimeZoneInvalid, Unauthorized
from chat.events import EventHub, EventLog, publish_reminder_delivered
from chat.forgetting import Erased, Forgetting, PendingWakes, no_wakes
from chat.identity import LocalTokens, TokenVerifier
from chat.integrations_api import build_integrations_router
from chat.knowledge_api import build_knowledge_router
from chat.learning import Learning
from chat.people import People, Person
from chat.ports import EventSink, PeopleStore, PostgresEvents, RunStore, ThreadStore
from chat.reminders_api import build_callback_router, build_reminders_router
from chat.routing import mentions, route
from chat.runs import Run, Runs
from chat.schemas import KeepableStr
from chat.threads import Message, Threads
from chat.turns import FactLookup, TurnResult, Turns
from chat.wallet import Wallet
from chat.wallet_api import build_wallet_router

__all__ = [
    "DATABASE_GONE",
    "HTTP_STATUS",
    "BodyLimit",
    "ChatApi",
    "ChatError",
    "Erased",
    "EventHub",
    "EventLog",
    "EventSink",
    "FactLookup",
    "Forgetting",
    "KeepableStr",
    "Learning",
    "LocalTokens",
    "Message",
    "PendingWakes",
    "People",
    "PeopleStore",
    "Person",
    "PostgresEvents",
    "Run",
    "RunStore",
    "Runs",
    "ThreadStore",
    "Threads",
    "TimeZoneInvalid",
    "TokenVerifier",
    "TurnResult",
    "Turns",
    "Unauthorized",
    "Wallet",
    "build_callback_router",
    "build_integrations_router",
    "build_knowledge_router",
    "build_reminders_router",
    "build_router",
    "build_wallet_router",
    "cancel_detached",
    "detach",
    "drain_detached",
    "mentions",
    "no_wakes",
    "on_chat_error",
    "on_database_gone",
    "on_domain_error",
    "on_http_error",
    "on_ledger_error",
    "on_unexpected",
    "on_validation_error",
    "parse_zone",
    "problem",
    "problem_responses",
    "publish_reminder_delivered",
    "route",
    "run_detached",
]
