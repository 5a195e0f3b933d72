"""Gmail's search syntax, the subset Rafal's tools document: `from:`, `to:`, `subject:`,
`in:inbox|sent|anywhere`, `is:unread|read`, `after:`/`before:` (a local date),
`newer_than:`/`older_than:` (`3d`, `12h`, `2w`), quoted phrases and plain words.

The sandbox filters with it; the Gmail adapter uses it to turn local dates into epoch
seconds (Gmail reads `after:2026/12/01` in its own zone, not the person's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from agents.integrations.hints import InputInvalid

_TOKEN = re.compile(r'(-?)(\w+):("[^"]*"|\S+)|"([^"]*)"|(\S+)')
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1), "m": timedelta(days=30)}


@dataclass(slots=True)
class MailQuery:
    senders: list[str] = field(default_factory=list)
    recipients: list[str] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    folder: str | None = None  # "inbox" | "sent" | None (anywhere)
    unread: bool | None = None
    after: datetime | None = None
    before: datetime | None = None


def _day(value: str, zone: ZoneInfo) -> datetime:
    try:
        day = date.fromisoformat(value.replace("/", "-"))
    except ValueError as exc:
        raise InputInvalid(f"{value!r} is not a date; write after:YYYY/MM/DD.") from exc
    return datetime.combine(day, time(0), tzinfo=zone)


def _age(value: str, now: datetime) -> datetime:
    match = re.fullmatch(r"(\d{1,4})([hdwm])", value)
    if not match:
        raise InputInvalid(f"{value!r} is not an age; write newer_than:1d (h, d, w or m).")
    return now - int(match.group(1)) * _UNITS[match.group(2)]


def parse(query: str, *, zone: ZoneInfo, now: datetime) -> MailQuery:
    parsed = MailQuery()
    for match in _TOKEN.finditer(query[:500]):
        _negated, key, value, phrase, word = match.groups()
        if key is None:
            parsed.words.append((phrase if phrase is not None else word).lower())
            continue
        key, value = key.lower(), value.strip('"').lower()
        if key == "from":
            parsed.senders.append(value)
        elif key == "to":
            parsed.recipients.append(value)
        elif key == "subject":
            parsed.subjects.append(value)
        elif key == "in":
            parsed.folder = None if value in ("anywhere", "all") else value
        elif key == "is" and value in ("unread", "read"):
            parsed.unread = value == "unread"
        elif key == "after":
            parsed.after = _day(value, zone)
        elif key == "before":
            parsed.before = _day(value, zone)
        elif key == "newer_than":
            parsed.after = _age(value, now)
        elif key == "older_than":
            parsed.before = _age(value, now)
        else:
            parsed.words.append(f"{key}:{value}")
    return parsed


def to_gmail(query: str, *, zone: ZoneInfo, now: datetime) -> str:
    """The query with local dates and ages as epoch seconds, which Gmail reads without a
    zone. Ages become times too: Gmail documents only d, m and y for `newer_than:`, and its
    month is not our 30 days, so the sandbox and Gmail would otherwise disagree."""

    def replace(match: re.Match[str]) -> str:
        negated, key, value = match.group(1), match.group(2), match.group(3)
        key = (key or "").lower()
        if key in ("after", "before"):
            return f"{negated}{key}:{int(_day(value.strip(chr(34)), zone).timestamp())}"
        if key in ("newer_than", "older_than"):
            side = "after" if key == "newer_than" else "before"
            return f"{negated}{side}:{int(_age(value.strip(chr(34)).lower(), now).timestamp())}"
        return match.group(0)

    return _TOKEN.sub(replace, query[:500])
