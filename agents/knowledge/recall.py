"""How the agents use what the graph learned: Ava's `recall` tool and the few facts
the session layer carries for every run (docs/agents.md#memory)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from agents.errors import ToolError
from agents.knowledge.port import QUERY_CHARS_MAX, Knowledge, KnowledgeError
from agents.model import ToolSpec
from agents.tools import Tool, object_schema

log = logging.getLogger(__name__)

RECALL_FACTS_MAX = 10
SESSION_FACTS_MAX = 10
RECALL_TIMEOUT_S = 5.0

RECALL = ToolSpec(
    name="recall",
    description=(
        "Look up what you have learned about the person in earlier conversations: their favourites, likes "
        "and dislikes, the people in their life, where they live and work, allergies, birthdays. Use it "
        'before answering a question about them ("what\'s my favourite food?", "what should I eat '
        'tonight?"). `query` is a few words about what you need, e.g. "favourite food"; an empty query '
        "returns the most recent things you know. Only facts still true are returned."
    ),
    parameters=object_schema(
        {"query": {"type": "string", "description": "What to look up, in a few words (may be empty)."}},
        ("query",),
    ),
)


def recall_tools(
    knowledge: Knowledge,
    *,
    person_id: str,
    person_name: str,
    catch_up: Callable[[], Awaitable[object]] | None = None,
) -> list[Tool]:
    """Ava's `recall`, bound to one person's graph. `catch_up` (bounded by its caller) first
    learns what the thread said since the graph last read it, so a fact stated a turn ago
    is already there."""

    async def recall(args: dict[str, Any]) -> dict[str, Any]:
        query = str(args.get("query") or "")[:QUERY_CHARS_MAX]
        if catch_up is not None:
            await catch_up()
        try:
            async with asyncio.timeout(RECALL_TIMEOUT_S):
                facts = await knowledge.search(person_id=person_id, text=query, limit=RECALL_FACTS_MAX)
        except (KnowledgeError, TimeoutError) as exc:
            raise ToolError("Memory is not reachable right now; answer without it.") from exc
        return {
            "person": person_name,
            "facts": [
                {"text": f.text, "relation": f.relation, "object": f.object, "since": f.valid_at.date().isoformat()}
                for f in facts
            ],
        }

    return [Tool(spec=RECALL, handler=recall)]


async def session_facts(knowledge: Knowledge, *, person_id: str, text: str, timeout_s: float = 1.0) -> list[str]:
    """The facts relevant to `text`, as sentences for the session layer; none if memory is slow."""
    try:
        async with asyncio.timeout(timeout_s):
            facts = await knowledge.search(person_id=person_id, text=text, limit=SESSION_FACTS_MAX)
    except (KnowledgeError, TimeoutError) as exc:
        log.warning("session facts skipped: %s", type(exc).__name__)
        return []
    return [f"{f.text} (since {f.valid_at.date().isoformat()})" for f in facts]
