"""`SandboxWorkspace`: a simulated mailbox, calendar and contacts per person, in PostgreSQL.

On first use a person finds four messages (three dated today in their zone, one from
yesterday), three events over the next days and three contacts (Budi, Sari, Rina). Sent
mail lands in the sent folder, added events and contacts stay, and every input is
checked the way Google checks it (addresses, time spans, sizes), so Rafal's whole flow
can be seen working offline and survives restarts. Sandbox mail never leaves the box.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg

from agents.integrations.hints import InputInvalid
from agents.rafal.gmail_query import MailQuery, parse
from agents.rafal.workspace import (
    CONTACTS_LIMIT_MAX,
    EVENTS_LIMIT_MAX,
    MESSAGES_LIMIT_MAX,
    Contact,
    Email,
    Event,
    checked_address,
    checked_span,
)

SANDBOX_ADDRESS = "you@sandbox.avagenc.test"
_MAIL_SCANNED_MAX = 500  # a sandbox mailbox is small; filtering in Python keeps Gmail's rules in one place

_CONTACTS = (
    ("people/sbx-budi", "Budi Santoso", ("budi@example.com",), ("+62 812 0000 0001",)),
    ("people/sbx-sari", "Sari Wulandari", ("sari@example.com",), ("+62 812 0000 0002",)),
    ("people/sbx-rina", "Rina Halim", ("rina@example.com",), ()),
)

_SEEDED_SQL = "SELECT EXISTS (SELECT 1 FROM sandbox_workspaces WHERE person_id = $1)"
_MARK_SQL = "INSERT INTO sandbox_workspaces (person_id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING person_id"
_MAIL_INSERT_SQL = """
INSERT INTO sandbox_mail (person_id, message_id, thread_id, folder, sender, recipient, subject, body, sent_at, unread)
SELECT $1, m.id, m.id, m.folder, m.sender, m.recipient, m.subject, m.body, m.sent_at, m.unread
FROM jsonb_to_recordset($2::jsonb)
    AS m(id TEXT, folder TEXT, sender TEXT, recipient TEXT, subject TEXT, body TEXT, sent_at TIMESTAMPTZ,
         unread BOOLEAN)
"""
_EVENT_INSERT_SQL = """
INSERT INTO sandbox_events (person_id, event_id, summary, description, location, start_at, end_at, attendees)
SELECT $1, e.id, e.summary, e.description, e.location, e.start_at, e.end_at, e.attendees
FROM jsonb_to_recordset($2::jsonb)
    AS e(id TEXT, summary TEXT, description TEXT, location TEXT, start_at TIMESTAMPTZ, end_at TIMESTAMPTZ,
         attendees TEXT[])
"""
_CONTACT_INSERT_SQL = """
INSERT INTO sandbox_contacts (person_id, resource_name, name, emails, phones)
SELECT $1, c.resource_name, c.name, c.emails, c.phones
FROM jsonb_to_recordset($2::jsonb) AS c(resource_name TEXT, name TEXT, emails TEXT[], phones TEXT[])
"""
_MAIL_SQL = """
SELECT message_id, thread_id, folder, sender, recipient, subject, body, sent_at, unread FROM sandbox_mail
WHERE person_id = $1 ORDER BY sent_at DESC LIMIT $2
"""
_EVENTS_SQL = """
SELECT event_id, summary, description, location, start_at, end_at, attendees FROM sandbox_events
WHERE person_id = $1 AND end_at > $2 AND ($3::timestamptz IS NULL OR start_at < $3)
    AND ($4 = '' OR summary ILIKE '%' || $4 || '%' OR description ILIKE '%' || $4 || '%'
         OR location ILIKE '%' || $4 || '%')
ORDER BY start_at LIMIT $5
"""
_CONTACTS_SQL = """
SELECT resource_name, name, emails, phones FROM sandbox_contacts WHERE person_id = $1 ORDER BY name LIMIT $2
"""


def _new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(8)}"


def _seed_mail(zone: ZoneInfo, now: datetime) -> list[dict[str, Any]]:
    """Today's mail at fixed fractions of the local day so far: always today, always past."""
    midnight = datetime.combine(now.astimezone(zone).date(), time(0), tzinfo=zone)
    elapsed = now - midnight

    def today(fraction: float) -> str:
        return (midnight + elapsed * fraction).isoformat()

    def mail(sender: str, subject: str, body: str, at: str, unread: bool = True) -> dict[str, Any]:
        return {
            "id": _new_id("sbxmsg"),
            "folder": "inbox",
            "sender": sender,
            "recipient": SANDBOX_ADDRESS,
            "subject": subject,
            "body": body,
            "sent_at": at,
            "unread": unread,
        }

    return [
        mail(
            "Bank Statement <no-reply@bank.example>",
            "Your November statement",
            "Your monthly statement is ready to view in the app.",
            (midnight - timedelta(hours=6)).isoformat(),
            False,
        ),
        mail(
            "Sari Wulandari <sari@example.com>",
            "Dinner this week?",
            "Hi! Are you free for dinner on Friday evening? Let me know. - Sari",
            today(0.35),
        ),
        mail(
            "Budi Santoso <budi@example.com>",
            "Slides for Monday",
            "I've put the slides in the shared folder. Could you look at them before Monday? - Budi",
            today(0.7),
        ),
        mail(
            "Avagenc Sandbox <hello@sandbox.avagenc.test>",
            "Welcome to your sandbox mailbox",
            "This mailbox is a sandbox: mail you send from it stays here. Link Google to use your real Gmail.",
            today(0.9),
        ),
    ]


def _seed_events(zone: ZoneInfo, now: datetime) -> list[dict[str, Any]]:
    day = now.astimezone(zone).date()

    def at(days: int, hour: int, minute: int = 0) -> str:
        return datetime.combine(day + timedelta(days=days), time(hour, minute), tzinfo=zone).isoformat()

    def event(
        summary: str, start: str, end: str, location: str = "", attendees: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        return {
            "id": _new_id("sbxevt"),
            "summary": summary,
            "description": "",
            "location": location,
            "start_at": start,
            "end_at": end,
            "attendees": list(attendees),
        }

    return [
        event("Team stand-up", at(1, 9), at(1, 9, 30), "Video call", ("budi@example.com",)),
        event("Lunch with Budi", at(1, 12, 30), at(1, 13, 30), "Warung Sate Senayan", ("budi@example.com",)),
        event("Dentist", at(2, 15), at(2, 16), "Klinik Gigi Sehat"),
    ]


def _matches(row: asyncpg.Record, q: MailQuery) -> bool:
    sender, recipient = row["sender"].lower(), row["recipient"].lower()
    subject, text = row["subject"].lower(), f"{row['subject']} {row['body']} {row['sender']}".lower()
    return (
        (q.folder is None or row["folder"] == q.folder)
        and (q.unread is None or row["unread"] == q.unread)
        and (q.after is None or row["sent_at"] >= q.after)
        and (q.before is None or row["sent_at"] < q.before)
        and all(s in sender for s in q.senders)
        and all(r in recipient for r in q.recipients)
        and all(s in subject for s in q.subjects)
        and all(w in text for w in q.words)
    )


def _email(row: asyncpg.Record) -> Email:
    body = row["body"]
    return Email(
        row["message_id"],
        row["thread_id"],
        row["sender"],
        row["recipient"],
        row["subject"],
        body[:120],
        body,
        row["sent_at"],
    )


def _event(row: asyncpg.Record) -> Event:
    return Event(
        row["event_id"],
        row["summary"],
        row["description"],
        row["location"],
        row["start_at"],
        row["end_at"],
        tuple(row["attendees"]),
    )


class SandboxWorkspace:
    """A per-person simulated Google Workspace; a real, stateful twin of the Google adapter."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def _seed(self, person_id: str, zone: ZoneInfo) -> None:
        # Read first: one round trip where the seeding transaction is three and a write
        # (see agents.yori.sandbox); the transaction still decides a race.
        if await self._pool.fetchval(_SEEDED_SQL, person_id):
            return
        async with self._pool.acquire() as conn, conn.transaction():
            if await conn.fetchval(_MARK_SQL, person_id) is None:
                return
            now = datetime.now(UTC)
            contacts = [
                {"resource_name": r, "name": n, "emails": list(e), "phones": list(p)} for r, n, e, p in _CONTACTS
            ]
            await conn.execute(_MAIL_INSERT_SQL, person_id, _seed_mail(zone, now))
            await conn.execute(_EVENT_INSERT_SQL, person_id, _seed_events(zone, now))
            await conn.execute(_CONTACT_INSERT_SQL, person_id, contacts)

    async def deliver(self, *, person_id: str, sender: str, subject: str, body: str, zone: ZoneInfo) -> str:
        """Mail arriving from outside (the sandbox's stand-in for the world writing to the person)."""
        await self._seed(person_id, zone)
        message = {
            "id": _new_id("sbxmsg"),
            "folder": "inbox",
            "sender": sender,
            "recipient": SANDBOX_ADDRESS,
            "subject": subject,
            "body": body,
            "sent_at": datetime.now(UTC).isoformat(),
            "unread": True,
        }
        await self._pool.execute(_MAIL_INSERT_SQL, person_id, [message])
        return str(message["id"])

    async def read_messages(self, *, person_id: str, query: str, limit: int, zone: ZoneInfo) -> list[Email]:
        await self._seed(person_id, zone)
        parsed = parse(query, zone=zone, now=datetime.now(UTC))
        rows = await self._pool.fetch(_MAIL_SQL, person_id, _MAIL_SCANNED_MAX)
        return [_email(r) for r in rows if _matches(r, parsed)][: max(1, min(limit, MESSAGES_LIMIT_MAX))]

    async def send_email(self, *, person_id: str, to: str, subject: str, body: str, zone: ZoneInfo) -> str:
        to = checked_address(to)
        await self._seed(person_id, zone)
        message = {
            "id": _new_id("sbxmsg"),
            "folder": "sent",
            "sender": SANDBOX_ADDRESS,
            "recipient": to,
            "subject": subject,
            "body": body,
            "sent_at": datetime.now(UTC).isoformat(),
            "unread": False,
        }
        await self._pool.execute(_MAIL_INSERT_SQL, person_id, [message])
        return str(message["id"])

    async def list_events(
        self, *, person_id: str, time_min: datetime, time_max: datetime | None, query: str, limit: int, zone: ZoneInfo
    ) -> list[Event]:
        await self._seed(person_id, zone)
        rows = await self._pool.fetch(
            _EVENTS_SQL, person_id, time_min, time_max, query.strip(), max(1, min(limit, EVENTS_LIMIT_MAX))
        )
        return [_event(r) for r in rows]

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
    ) -> Event:
        checked_span(start, end)
        guests = [checked_address(g) for g in guests]
        if not summary.strip():
            raise InputInvalid("An event needs a summary (its title).")
        await self._seed(person_id, zone)
        event = {
            "id": _new_id("sbxevt"),
            "summary": summary,
            "description": description,
            "location": location,
            "start_at": start.isoformat(),
            "end_at": end.isoformat(),
            "attendees": list(guests),
        }
        await self._pool.execute(_EVENT_INSERT_SQL, person_id, [event])
        return Event(str(event["id"]), summary, description, location, start, end, tuple(guests))

    async def list_contacts(self, *, person_id: str, limit: int, zone: ZoneInfo) -> list[Contact]:
        await self._seed(person_id, zone)
        rows = await self._pool.fetch(_CONTACTS_SQL, person_id, max(1, min(limit, CONTACTS_LIMIT_MAX)))
        return [Contact(r["resource_name"], r["name"], tuple(r["emails"]), tuple(r["phones"])) for r in rows]

    async def add_contact(
        self, *, person_id: str, name: str, emails: Sequence[str], phones: Sequence[str], zone: ZoneInfo
    ) -> Contact:
        if not name.strip():
            raise InputInvalid("A contact needs a name.")
        emails = [checked_address(e) for e in emails]
        await self._seed(person_id, zone)
        contact = {
            "resource_name": _new_id("people/sbx"),
            "name": name.strip(),
            "emails": emails,
            "phones": list(phones),
        }
        await self._pool.execute(_CONTACT_INSERT_SQL, person_id, [contact])
        return Contact(str(contact["resource_name"]), name.strip(), tuple(emails), tuple(phones))
