"""Content from outside (email bodies, event descriptions, track names) is data.

Nothing in it may address an agent: an `@zee` inside an email body becomes `\uff20zee`
(a full-width at sign) before any model or person sees it, so that even a reply that
quotes it verbatim carries no mention. The runtime already hands on only from the
model's own function calls; this keeps quoted text from looking like an instruction.
"""

from __future__ import annotations

import functools
import re

from agents.roster import Roster, current_roster

# Outside text reaching the model is also bounded: one noisy email cannot fill a context.
TEXT_CHARS_MAX = 2_000


@functools.cache
def _at_sign(team: Roster) -> re.Pattern[str]:
    """An "@" that starts a member's name (worked out once per roster)."""
    return re.compile(r"@(?=(?:" + "|".join(sorted(team.agents)) + r")\b)", re.IGNORECASE)


def as_data(text: str, *, chars_max: int = TEXT_CHARS_MAX) -> str:
    cleaned = _at_sign(current_roster()).sub("\uff20", text)
    return cleaned if len(cleaned) <= chars_max else cleaned[:chars_max] + "…"
