"""The `Workspace` port Rafal acts through (mail, calendar, contacts), its dataclasses
and the checks every adapter shares.

One port rather than three: one Google link covers all three APIs, so they are linked,
chosen (sandbox or live) and refreshed together. Adapters: `SandboxWorkspace` (a
mailbox, calendar and contacts per person in PostgreSQL, the default) and
`GoogleWorkspace` (Gmail, Calendar and People APIs). Times are aware datetimes; the
person's zone travels with every call (Gmail's `after:2026/12/01` means a local day,
Calendar writes events in it, and the sandbox dates its first mail "today" in it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from agents.integrations.hints import InputInvalid

MESSAGES_LIMIT_MAX = 25
EVENTS_LIMIT_MAX = 50
CONTACTS_LIMIT_MAX = 100
GUESTS_MAX = 20

# Deliberately plain: one @, no spaces, a dot in the domain. Anything stranger is refused
# with a hint rather than handed to a mail server.
_EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")


@dataclass(frozen=True, slots=True)
class Email:
    id: str
    thread_id: str
    sender: str
    to: str
    subject: str
    snippet: str
    body: str
    date: datetime


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    summary: str
    description: str
    location: str
    start: datetime
    end: datetime
    attendees: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Contact:
    resource_name: str
    name: str
    emails: tuple[str, ...]
    phones: tuple[str, ...]


class Workspace(Protocol):
    async def read_messages(self, *, person_id: str, query: str, limit: int, zone: ZoneInfo) -> list[Email]: ...

    async def send_email(self, *, person_id: str, to: str, subject: str, body: str, zone: ZoneInfo) -> str: ...

    async def list_events(
        self, *, person_id: str, time_min: datetime, time_max: datetime | None, query: str, limit: int, zone: ZoneInfo
    ) -> list[Event]: ...

    async def add_event(
        self,
        *,
        person_id: str,
        summary: str,
        start: datetime,
        end: datetime,
        description: str,
        location: str,
        guests: Sequence[str],
        zone: ZoneInfo,
    ) -> Event: ...

    async def list_contacts(self, *, person_id: str, limit: int, zone: ZoneInfo) -> list[Contact]: ...

    async def add_contact(
        self, *, person_id: str, name: str, emails: Sequence[str], phones: Sequence[str], zone: ZoneInfo
    ) -> Contact: ...


def checked_address(address: str) -> str:
    address = address.strip()
    if len(address) > 254 or not _EMAIL.match(address):
        raise InputInvalid(
            f"{address[:80]!r} is not an email address. Look the person up with list_contacts, or ask for the address."
        )
    return address


def checked_span(start: datetime, end: datetime) -> None:
    if start.tzinfo is None or end.tzinfo is None:
        raise InputInvalid("Give times in RFC 3339 with the person's UTC offset, e.g. 2026-12-04T19:00:00+07:00.")
    if end <= start:
        raise InputInvalid("An event must end after it starts.")
