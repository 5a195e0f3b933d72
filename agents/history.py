"""The slice of the thread a model call sees, and how each message is shown to it.

The window is budgeted in tokens rather than counted in messages (docs/agents.md#history-window), walking back
from the newest message. The message that triggered the run, and for a handed-on run
the person's message Ava was answering, are always included even when older than the
window, so a long exchange can never push the real request out of view.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from agents.model import Content
from agents.roster import AGENTS, HUMAN, POSTERA

# A rough, provider-neutral estimate: about four characters per token, plus the prefix.
_CHARS_PER_TOKEN = 4
_LINE_OVERHEAD_TOKENS = 8


@dataclass(frozen=True, slots=True)
class ThreadMessage:
    id: str
    seq: int
    author: str
    text: str
    created_at: datetime


def estimate_tokens(text: str) -> int:
    return (len(text) + _CHARS_PER_TOKEN - 1) // _CHARS_PER_TOKEN


def window(
    messages: Sequence[ThreadMessage], *, budget_tokens: int, pinned_ids: Iterable[str] = ()
) -> list[ThreadMessage]:
    """Newest messages that fit the budget, plus the pinned ones, in thread order."""
    pinned = set(pinned_ids)
    chosen: dict[str, ThreadMessage] = {m.id: m for m in messages if m.id in pinned}
    spent = sum(estimate_tokens(m.text) + _LINE_OVERHEAD_TOKENS for m in chosen.values())
    for message in sorted(messages, key=lambda m: m.seq, reverse=True):
        if message.id in chosen:
            continue
        cost = estimate_tokens(message.text) + _LINE_OVERHEAD_TOKENS
        if spent + cost > budget_tokens:
            break
        chosen[message.id] = message
        spent += cost
    return sorted(chosen.values(), key=lambda m: m.seq)


def display_name(author: str, person_name: str) -> str:
    if author == HUMAN:
        return person_name
    if author == POSTERA:
        return "Ava (note to self)"
    agent = AGENTS.get(author)
    return agent.display_name if agent else author


def to_contents(
    messages: Sequence[ThreadMessage],
    *,
    agent_name: str,
    person_name: str,
    time_zone: ZoneInfo,
    rendered: dict[str, str] | None = None,
) -> list[Content]:
    """History lines as the agent sees them: its own messages are its turns, all else is input.

    A line does not depend on which agent reads it (only its role does), so a turn passes
    one `rendered` map (message id -> line) to all its runs and each line is formatted once."""
    lines = rendered if rendered is not None else {}
    contents: list[Content] = []
    for m in messages:
        line = lines.get(m.id)
        if line is None:
            stamp = m.created_at.astimezone(time_zone).strftime("%Y-%m-%d %H:%M")
            line = lines[m.id] = f"[{stamp} {display_name(m.author, person_name)}] {m.text}"
        contents.append(Content(role="model" if m.author == agent_name else "user", text=line))
    return contents
