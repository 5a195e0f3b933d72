"""Two things Ava's offline rules learn from the specialists' own modules:

- a short yes or no right after a specialist asked something is an answer to that
  specialist: Ava hands it back to them (with their bare tag) instead of treating it as a
  new request; only the person's own short reply counts;
- requests the general vocabulary does not know ("next", "what's playing?", "add dinner
  with Sari on Friday at 7") still belong to the specialist whose own rules know them
  (its skill set's `owns`).
"""

from __future__ import annotations

from agents.integrations.confirmations import is_plain_yes
from agents.offline.situation import Situation
from agents.offline.skillset import claiming_order
from agents.offline.words import has_any
from agents.roster import SPECIALISTS

_NO = ("no", "nope", "cancel", "don't", "dont", "jangan", "nggak", "gak", "enggak", "tidak", "batal", "batalin")


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
            name = next((a.name for a in SPECIALISTS if a.display_name == line.author), None)
            if name is None:
                continue  # Ava's tag or her spoken relay of the question, on a call
            lines = line.text.strip().splitlines()
            # A question stands on its first line (so Ava can relay it on a call) or ends the message.
            asked = bool(lines) and (lines[0].rstrip().endswith("?") or lines[-1].rstrip().endswith("?"))
            return name if asked else None
    return None


def owner_of(request: str) -> str | None:
    """The specialist whose own rules recognise this request, for one the vocabulary missed."""
    for name, skills in claiming_order():
        if skills.owns(request):
            return name
    return None
