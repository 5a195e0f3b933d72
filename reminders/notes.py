"""A wake note (a posterum): what Ava wrote to her future self, and when it is due.

Times in and out of the tools are local (`YYYY-MM-DDTHH:MM[:SS]`) in the person's zone;
inside, every time is an aware UTC timestamp. The limits (docs/data.md#wake-notes) live here so the
tools, the API and the store refuse the same things with the same codes.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from reminders.errors import NoteInvalid, TimeInPast, TimeInvalid, TimeTooFar, ZoneInvalid

Status = Literal["pending", "delivering", "delivered", "cancelled", "failed"]
Outcome = Literal["ran", "silent", "wallet_empty", "gave_up"]

NOTE_CHARS_MAX = 1_000
PENDING_MAX = 100
# "At most a year ahead": 366 days, so the same date next year is always allowed.
AHEAD_MAX = timedelta(days=366)
_LOCAL = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$")


def new_note_id() -> str:
    """`pstr_` and 16 random bytes, base64url: the same shape as the first product's ids."""
    return "pstr_" + secrets.token_urlsafe(16)


@dataclass(frozen=True, slots=True)
class Note:
    id: str
    person_id: str
    agent: str
    text: str
    due_at: datetime
    time_zone: str
    status: Status
    created_at: datetime
    created_by_run_id: str | None = None
    attempts: int = 0
    run_id: str | None = None
    outcome: Outcome | None = None
    preview: str | None = None
    delivered_at: datetime | None = None
    cancelled_at: datetime | None = None

    def due_local(self) -> str:
        return local_text(self.due_at, ZoneInfo(self.time_zone))

    def as_json(self) -> dict[str, Any]:
        """The API's view: no internal fields (attempts, leases, errors)."""
        return {
            "id": self.id,
            "agent": self.agent,
            "text": self.text,
            "due_at": self.due_at.isoformat(),
            "due_local": self.due_local(),
            "time_zone": self.time_zone,
            "status": self.status,
            "created_at": self.created_at.isoformat(),
            "run_id": self.run_id,
            "outcome": self.outcome,
            "preview": self.preview,
            "delivered_at": self.delivered_at.isoformat() if self.delivered_at else None,
        }


def zone_named(name: str) -> ZoneInfo:
    if not name or len(name) > 64 or ".." in name or name.startswith("/"):
        raise ZoneInvalid(f"{name[:64]!r} is not an IANA time zone name (e.g. Asia/Jakarta).")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ZoneInvalid(f"{name!r} is not an IANA time zone name (e.g. Asia/Jakarta).") from exc


def local_text(at: datetime, zone: ZoneInfo) -> str:
    return at.astimezone(zone).strftime("%Y-%m-%dT%H:%M:%S")


def parse_local(text: str, zone: ZoneInfo) -> datetime:
    """A local wall-clock time in `zone` as an aware UTC instant.

    A time that the clocks skip (a daylight-saving gap) does not exist and is refused;
    one they pass twice means the first pass."""
    match = _LOCAL.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise TimeInvalid(f"{str(text)[:40]!r} is not a local time like 2026-05-01T17:30 (YYYY-MM-DDTHH:MM[:SS]).")
    year, month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups())
    try:
        naive = datetime(year, month, day, hour, minute, second)  # noqa: DTZ001 - given a zone just below
    except ValueError as exc:
        raise TimeInvalid(f"{text.strip()!r} is not a real date and time.") from exc
    local = naive.replace(tzinfo=zone, fold=0)
    instant = local.astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) != naive:
        raise TimeInvalid(f"{text.strip()} does not exist in {zone.key} (the clocks skip it).")
    return instant


def check_due(due_at: datetime, *, now: datetime) -> datetime:
    assert due_at.tzinfo is not None, "aware datetimes only"
    assert now.tzinfo is not None, "aware datetimes only"
    if due_at <= now:
        raise TimeInPast("That time has already passed; pick a time in the future.")
    if due_at - now > AHEAD_MAX:
        raise TimeTooFar("A note can be due at most one year ahead.")
    return due_at.astimezone(UTC)


def _blank(text: str) -> bool:
    return all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)


def check_text(text: object) -> str:
    if not isinstance(text, str) or _blank(text):
        raise NoteInvalid("The note is empty; write what your future self should do.")
    clean = text.strip()
    if len(clean) > NOTE_CHARS_MAX:
        raise NoteInvalid(f"A note holds at most {NOTE_CHARS_MAX} characters; this one has {len(clean)}.")
    return clean


def first_line(text: str, *, chars_max: int = 200) -> str:
    """What a notification preview shows: the first non-blank line, cut to size."""
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= chars_max else line[: chars_max - 1].rstrip() + "…"
    return ""
