"""The chat: the conversation domain.

People and their one thread, who a message is for (routing), turns and the runs they
start, identity (local tokens), the wallet a turn is charged to, live events, learning
from and forgetting a person, and Ava waking on her own notes. It knows no transport: the
HTTP edge (`web`) and the call doors (`voice`) call it, and the composition root (`app`)
builds it. Other packages import only what is listed here.
"""

from chat.blank import is_unkeepable
from chat.detached import cancel_detached, detach, drain_detached, run_detached
from chat.device_tokens import DeviceCaller, KnownDeviceTokens
from chat.devices import POLL_INTERVAL_S, REVOKED_CHANNEL, Device, Devices, Pairing, is_device_token
from chat.errors import (
    AdminDisabled,
    ChatError,
    DateInvalid,
    KnowledgeUnavailable,
    NotFound,
    PairingCodeBurnt,
    PairingCodeInvalid,
    PhoneCodeInvalid,
    PhoneDeliveryFailed,
    PhoneNumberInvalid,
    PhoneTaken,
    RateLimited,
    SignInDisabled,
    TimeZoneInvalid,
    TooManyDevices,
    TooManyPhones,
    TooManyStreams,
    Unauthorized,
)
from chat.events import EVENTS_PAGE, EventHub, EventLog
from chat.forgetting import Forgetting, no_wakes
from chat.identity import LocalTokens, Session, Sessions, Tickets, TokenVerifier
from chat.learning import Learning
from chat.limits import Lease, Limits, Rate
from chat.outbox import Outbox
from chat.people import People, Person
from chat.phones import LoggedPhoneCodes, PhoneNumber, Phones, PhoneVerifier, normalise_number
from chat.ports import PeopleStore, PostgresEvents, RunStore, ThreadStore
from chat.recovery import Sweeper, settle_crash
from chat.routing import mentions, route
from chat.runs import Run, Runs
from chat.threads import Message, Threads
from chat.turns import FactLookup, TurnResult, Turns
from chat.twilio_sms import TwilioSms
from chat.wakes import CallElsewhere, LiveCall, WakeRunner
from chat.wallet import Wallet
from chat.zones import parse_zone

__all__ = [
    "EVENTS_PAGE",
    "POLL_INTERVAL_S",
    "REVOKED_CHANNEL",
    "AdminDisabled",
    "CallElsewhere",
    "ChatError",
    "DateInvalid",
    "Device",
    "DeviceCaller",
    "Devices",
    "EventHub",
    "EventLog",
    "FactLookup",
    "Forgetting",
    "KnowledgeUnavailable",
    "KnownDeviceTokens",
    "Learning",
    "Lease",
    "Limits",
    "LiveCall",
    "LocalTokens",
    "LoggedPhoneCodes",
    "Message",
    "NotFound",
    "Outbox",
    "Pairing",
    "PairingCodeBurnt",
    "PairingCodeInvalid",
    "People",
    "PeopleStore",
    "Person",
    "PhoneCodeInvalid",
    "PhoneDeliveryFailed",
    "PhoneNumber",
    "PhoneNumberInvalid",
    "PhoneTaken",
    "PhoneVerifier",
    "Phones",
    "PostgresEvents",
    "Rate",
    "RateLimited",
    "Run",
    "RunStore",
    "Runs",
    "Session",
    "Sessions",
    "SignInDisabled",
    "Sweeper",
    "ThreadStore",
    "Threads",
    "Tickets",
    "TimeZoneInvalid",
    "TokenVerifier",
    "TooManyDevices",
    "TooManyPhones",
    "TooManyStreams",
    "TurnResult",
    "Turns",
    "TwilioSms",
    "Unauthorized",
    "WakeRunner",
    "Wallet",
    "cancel_detached",
    "detach",
    "drain_detached",
    "is_device_token",
    "is_unkeepable",
    "mentions",
    "no_wakes",
    "normalise_number",
    "parse_zone",
    "route",
    "run_detached",
    "settle_crash",
]
