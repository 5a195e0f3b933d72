"""`GoogleWorkspace`: the `Workspace` port on the Gmail, Calendar and People APIs, over httpx.

Mail is read with Gmail's own query syntax (local dates in `after:`/`before:` become
epoch seconds, which Gmail reads without a zone) and sent as plain text (an RFC 5322
message, base64url, through `messages.send`). Events are read from and written to the
primary calendar with the person's zone; contacts come from the People API. Google's
errors become the agents' hints; responses are read defensively.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from agents.errors import ToolError
from agents.integrations.hints import NotAllowed, TokenExpired, rate_limited, retry_after_s
from agents.integrations.vendor import BearerApi, TokenSource, error_body
from agents.rafal.gmail_query import to_gmail
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

GMAIL_URL = "https://gmail.googleapis.com/gmail/v1/users/me"
CALENDAR_URL = "https://www.googleapis.com/calendar/v3/calendars/primary"
PEOPLE_URL = "https://people.googleapis.com/v1"
_PERSON_FIELDS = "names,emailAddresses,phoneNumbers"


# The 403 reasons Gmail and Calendar document for their usage limits (docs/integrations.md).
_RATE_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "dailyLimitExceeded", "quotaExceeded"})


def _refine(response: httpx.Response) -> ToolError | None:
    if response.status_code != 403:
        return None
    reasons = {str(e.get("reason", "")) for e in error_body(response).get("errors", []) if isinstance(e, dict)}
    if reasons & _RATE_REASONS:
        return rate_limited("Google", retry_after_s=retry_after_s(response.headers.get("retry-after")))
    if reasons & {"insufficientPermissions"} or "insufficient" in response.text.lower():
        return TokenExpired(
            "The Google link is missing a permission. Ask the person to link Google again and keep every box ticked."
        )
    if reasons & {"domainPolicy"}:
        return NotAllowed("The person's Google Workspace administrator does not allow this app; do not retry.")
    return None


def _header(payload: dict[str, Any], name: str) -> str:
    for h in payload.get("headers", []):
        if isinstance(h, dict) and str(h.get("name", "")).lower() == name:
            return str(h.get("value", ""))
    return ""


def _plain_text(part: dict[str, Any]) -> str:
    """The first text/plain body in a message's MIME tree."""
    if part.get("mimeType") == "text/plain" and (part.get("body") or {}).get("data"):
        data = str(part["body"]["data"])
        return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode("utf-8", "replace")
    for child in part.get("parts", []) or []:
        if isinstance(child, dict) and (text := _plain_text(child)):
            return text
    return ""


def _email(message: dict[str, Any]) -> Email:
    payload = message.get("payload") or {}
    millis = int(message.get("internalDate", 0) or 0)
    return Email(
        id=str(message.get("id", "")),
        thread_id=str(message.get("threadId", "")),
        sender=_header(payload, "from"),
        to=_header(payload, "to"),
        subject=_header(payload, "subject"),
        snippet=str(message.get("snippet", "")),
        body=_plain_text(payload) or str(message.get("snippet", "")),
        date=datetime.fromtimestamp(millis / 1000, tz=UTC),
    )


def _moment(value: dict[str, Any] | None, zone: ZoneInfo) -> datetime:
    value = value or {}
    if value.get("dateTime"):
        return datetime.fromisoformat(str(value["dateTime"]))
    # An all-day event: its date at midnight in the person's zone.
    return datetime.fromisoformat(str(value.get("date", "1970-01-01"))).replace(tzinfo=zone)


def _event(e: dict[str, Any], zone: ZoneInfo) -> Event:
    return Event(
        id=str(e.get("id", "")),
        summary=str(e.get("summary", "")),
        description=str(e.get("description", "")),
        location=str(e.get("location", "")),
        start=_moment(e.get("start"), zone),
        end=_moment(e.get("end"), zone),
        attendees=tuple(str(a.get("email", "")) for a in e.get("attendees", []) if isinstance(a, dict)),
    )


def _contact(p: dict[str, Any]) -> Contact:
    names = [n.get("displayName") or n.get("givenName") for n in p.get("names", []) if isinstance(n, dict)]
    return Contact(
        resource_name=str(p.get("resourceName", "")),
        name=str(next((n for n in names if n), "")),
        emails=tuple(str(e.get("value", "")) for e in p.get("emailAddresses", []) if isinstance(e, dict)),
        phones=tuple(str(e.get("value", "")) for e in p.get("phoneNumbers", []) if isinstance(e, dict)),
    )


class GoogleWorkspace:
    def __init__(
        self,
        *,
        http: httpx.AsyncClient,
        tokens: TokenSource,
        gmail_url: str = GMAIL_URL,
        calendar_url: str = CALENDAR_URL,
        people_url: str = PEOPLE_URL,
    ) -> None:
        def api(url: str) -> BearerApi:
            return BearerApi(http=http, base_url=url, tokens=tokens, service="Google", refine=_refine)

        self._gmail, self._calendar, self._people = api(gmail_url), api(calendar_url), api(people_url)

    async def read_messages(self, *, person_id: str, query: str, limit: int, zone: ZoneInfo) -> list[Email]:
        params = {
            "q": to_gmail(query, zone=zone, now=datetime.now(UTC)),
            "maxResults": max(1, min(limit, MESSAGES_LIMIT_MAX)),
        }
        listing = (await self._gmail.request("GET", "/messages", person_id=person_id, params=params)).json()
        ids = [str(m["id"]) for m in listing.get("messages", []) if isinstance(m, dict) and "id" in m]

        async def one(message_id: str) -> dict[str, Any]:
            response = await self._gmail.request(
                "GET", f"/messages/{message_id}", person_id=person_id, params={"format": "full"}
            )
            body: dict[str, Any] = response.json()
            return body

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(i)) for i in ids]
        return [_email(t.result()) for t in tasks]

    async def send_email(self, *, person_id: str, to: str, subject: str, body: str, zone: ZoneInfo) -> str:
        message = EmailMessage()
        message["To"] = checked_address(to)
        # A line break in a subject would let it write headers of its own.
        message["Subject"] = " ".join(subject.split())
        message.set_content(body)
        raw = base64.urlsafe_b64encode(message.as_bytes()).decode().rstrip("=")
        sent = (await self._gmail.request("POST", "/messages/send", person_id=person_id, json={"raw": raw})).json()
        return str(sent.get("id", ""))

    async def list_events(
        self, *, person_id: str, time_min: datetime, time_max: datetime | None, query: str, limit: int, zone: ZoneInfo
    ) -> list[Event]:
        params: dict[str, Any] = {
            "timeMin": time_min.isoformat(),
            "singleEvents": "true",
            "orderBy": "startTime",
            "maxResults": max(1, min(limit, EVENTS_LIMIT_MAX)),
            "timeZone": zone.key,
        }
        if time_max is not None:
            params["timeMax"] = time_max.isoformat()
        if query.strip():
            params["q"] = query.strip()
        body = (await self._calendar.request("GET", "/events", person_id=person_id, params=params)).json()
        return [_event(e, zone) for e in body.get("items", []) if isinstance(e, dict)]

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
        body = {
            "summary": summary,
            "description": description,
            "location": location,
            "start": {"dateTime": start.isoformat(), "timeZone": zone.key},
            "end": {"dateTime": end.isoformat(), "timeZone": zone.key},
            "attendees": [{"email": checked_address(g)} for g in guests],
        }
        params = {"sendUpdates": "all" if guests else "none"}
        created = await self._calendar.request("POST", "/events", person_id=person_id, params=params, json=body)
        return _event(created.json(), zone)

    async def list_contacts(self, *, person_id: str, limit: int, zone: ZoneInfo) -> list[Contact]:
        params = {
            "personFields": _PERSON_FIELDS,
            "pageSize": max(1, min(limit, CONTACTS_LIMIT_MAX)),
            "sortOrder": "FIRST_NAME_ASCENDING",
        }
        body = (await self._people.request("GET", "/people/me/connections", person_id=person_id, params=params)).json()
        return [_contact(p) for p in body.get("connections", []) if isinstance(p, dict)]

    async def add_contact(
        self, *, person_id: str, name: str, emails: Sequence[str], phones: Sequence[str], zone: ZoneInfo
    ) -> Contact:
        body = {
            "names": [{"givenName": name.strip()}],
            "emailAddresses": [{"value": checked_address(e)} for e in emails],
            "phoneNumbers": [{"value": p} for p in phones],
        }
        created = await self._people.request(
            "POST", "/people:createContact", person_id=person_id, params={"personFields": _PERSON_FIELDS}, json=body
        )
        return _contact(created.json())
