"""The parts of a day a person asks about ("tomorrow morning", "Wednesday afternoon", "besok
sore", "tonight"), defined once: their words in English and Indonesian and the hours each
covers (docs/agents.md, "The offline model"). A question about a part of a day lists only
the events in those hours.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo


@dataclass(frozen=True, slots=True)
class DayPart:
    en: str  # "morning": "tomorrow morning", "on Wednesday ... in the morning"
    id_: str  # "pagi": "besok pagi"
    en_today: str  # "this morning", "tonight"
    id_today: str  # "pagi ini", "nanti malam"
    start: int  # first hour, inclusive
    end: int  # last hour, exclusive (24 is midnight)
    words: tuple[str, ...]


# "sore" is the late afternoon in Indonesian (15-18); "siang" the middle of the day. The
# evening runs to midnight, "tonight" is today's evening.
DAY_PARTS = (
    DayPart("morning", "pagi", "this morning", "pagi ini", 5, 12, ("morning", "pagi", "pagi2", "pagi-pagi")),
    DayPart("afternoon", "siang", "this afternoon", "siang ini", 12, 17, ("afternoon", "siang", "arvo")),
    DayPart("late afternoon", "sore", "late this afternoon", "sore ini", 15, 18, ("sore",)),
    DayPart("evening", "malam", "tonight", "nanti malam", 17, 24, ("evening", "tonight", "malam", "malem")),
)
# Words holding a part that are not a part of the day asked about: meals and greetings.
_NOT_A_PART = re.compile(
    r"\b(?:makan (?:pagi|siang|malam|malem)|sarapan pagi|(?:good|selamat) (?:morning|afternoon|evening|pagi|siang|"
    r"sore|malam))\b",
    re.IGNORECASE,
)


def day_part(text: str) -> DayPart | None:
    """The part of a day the text names, or None (a meal or a greeting is not one)."""
    said = " " + " ".join(re.findall(r"[\w-]+", _NOT_A_PART.sub(" ", text.lower()))) + " "
    for part in DAY_PARTS:
        if any(f" {w} " in said for w in part.words):
            return part
    return None


def part_span(day: date, part: DayPart, zone: tzinfo | None) -> tuple[datetime, datetime]:
    """The hours of that part of that day, in the person's time zone."""
    start = datetime.combine(day, time(0), tzinfo=zone)
    return start + timedelta(hours=part.start), start + timedelta(hours=part.end)
