"""Content from outside (email bodies, event descriptions, track names) is data.

Nothing in it may address an agent: an `@zee` inside an email body becomes `\uff20zee`
(a full-width at sign) before any model or person sees it, so that even a reply that
quotes it verbatim carries no mention. The runtime already hands on only from the
model's own function calls; this keeps quoted text from looking like an instruction.
"""

from __future__ import annotations

import re

from agents.roster import AGENTS

_MENTION = re.compile(r"@(?=(?:" + "|".join(sorted(AGENTS)) + r")\b)", re.IGNORECASE)
# Outside text reaching the model is also bounded: one noisy email cannot fill a context.
TEXT_CHARS_MAX = 2_000


def as_data(text: str, *, chars_max: int = TEXT_CHARS_MAX) -> str:
    cleaned = _MENTION.sub("\uff20", text)
    return cleaned if len(cleaned) <= chars_max else cleaned[:chars_max] + "…"
