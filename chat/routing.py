"""Who answers a message (docs/agents.md#routing), decided on the server for every door.

Mentions are `@name` tokens naming a known agent, case-insensitive and word-bounded:
"@Zee," counts, "me@zee.com" and "@zeebo" do not. No mention -> Ava; exactly one
distinct mention -> that agent directly; two or more -> Ava, who orders the work.
"""

from __future__ import annotations

import re

from agents import AGENTS

# Not preceded by a word character, '@' or '.', so e-mail addresses and '@@zee' are text;
# not followed by a word character, so a longer name is a different (unknown) name.
_MENTION = re.compile(r"(?<![\w@.])@(" + "|".join(sorted(AGENTS)) + r")(?!\w)", re.IGNORECASE)


def mentions(text: str) -> tuple[str, ...]:
    """Distinct known agents mentioned, in order of first mention, lower-cased."""
    seen: dict[str, None] = {}
    for match in _MENTION.finditer(text):
        seen.setdefault(match.group(1).lower(), None)
    return tuple(seen)


def route(text: str) -> str:
    """The agent that runs for a person's message."""
    named = mentions(text)
    return named[0] if len(named) == 1 else "ava"
