"""Who answers a message (docs/agents.md#routing), decided on the server for every door.

Mentions are `@name` tokens naming a known agent, case-insensitive and word-bounded:
"@Zee," counts, "me@zee.com" and "@zeebo" do not. No mention -> Ava; exactly one
distinct mention -> that agent directly; two or more -> Ava, who orders the work.
"""

from __future__ import annotations

from agents import current_roster


def mentions(text: str) -> tuple[str, ...]:
    """Distinct known agents mentioned, in order of first mention, lower-cased."""
    seen: dict[str, None] = {}
    for match in current_roster().mention.finditer(text):
        seen.setdefault(match.group(1).lower(), None)
    return tuple(seen)


def route(text: str) -> str:
    """The agent that runs for a person's message."""
    named = mentions(text)
    return named[0] if len(named) == 1 else "ava"
