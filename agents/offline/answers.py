"""A short yes or no right after a specialist asked something is an answer to that
specialist: Ava hands it back to them (with their bare tag) instead of treating it as a
new request. Nothing else is inferred: only the person's own short reply counts."""

from __future__ import annotations

from agents.offline.situation import Situation
from agents.offline.words import has_any
from agents.rafal.confirmations import is_plain_yes
from agents.roster import SPECIALISTS

_NO = ("no", "nope", "cancel", "don't", "dont", "jangan", "nggak", "gak", "enggak", "tidak", "batal", "batalin")
_BY_DISPLAY_NAME = {a.display_name: a.name for a in SPECIALISTS}


def asked_by(s: Situation) -> str | None:
    """The specialist whose question the person's latest short yes/no answers, if any."""
    request = s.request
    if len(request.split()) > 6 or not (is_plain_yes(request) or has_any(request, _NO)):
        return None
    human_seen = False
    for line in reversed(s.lines):
        if line.by_human:
            if human_seen:
                return None
            human_seen = True
            continue
        if human_seen:
            name = _BY_DISPLAY_NAME.get(line.author)
            return name if name and line.text.rstrip().endswith("?") else None
    return None
