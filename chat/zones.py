"""Time zone names as people and their clients send them.

A zone travels with every request and every call, so the text API, the call doors and
the terminal client all read it the same way here; a bad name is the chat's own
`TimeZoneInvalid`, which each door answers in its own way.
"""

from __future__ import annotations

import functools
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from chat.errors import TimeZoneInvalid


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def parse_zone(name: str) -> ZoneInfo:
    """An IANA zone by name. Only names tzdata lists: a folder of it (`Asia`, `Etc`) or a
    path is not a zone, however the file system answers."""
    if len(name) > 64 or name not in _zone_names():
        raise TimeZoneInvalid(f"{name[:64]!r} is not an IANA time zone name (e.g. Asia/Jakarta).")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise TimeZoneInvalid(f"{name!r} is not an IANA time zone name (e.g. Asia/Jakarta).") from exc
