"""Ava's handoff tools: one per specialist, the only way work is handed on (docs/agents.md#handoff).

The tool's argument is the specialist's tag. Whoever builds the tools supplies the
`Delegate` that writes the tag to the thread as Ava's message and runs the specialist;
the specialist's final reply comes back to Ava as the tool result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agents.model import ToolSpec
from agents.roster import SPECIALISTS, AgentSpec
from agents.tools import Tool, object_schema

# (specialist, the message Ava writes) -> the specialist's final reply ("" when silent)
Delegate = Callable[[AgentSpec, str], Awaitable[str]]

# A clarifying phrase after the tag is allowed, but a handoff is never a long message.
HANDOFF_CHARS_MAX = 200


def handoff_message(specialist: AgentSpec, argument: object) -> str:
    """What Ava writes to the thread: her argument when it starts with the right tag,
    otherwise the bare tag, so a sloppy argument can never address the wrong agent."""
    tag = f"@{specialist.name}"
    text = argument.strip() if isinstance(argument, str) else ""
    if not text.lower().startswith(tag) or len(text) > HANDOFF_CHARS_MAX:
        return tag
    rest = text[len(tag) :]
    if rest and (rest[0].isalnum() or rest[0] == "_"):
        return tag  # "@zeebo" is not "@zee"
    return tag + rest


def handoff_tools(delegate: Delegate) -> list[Tool]:
    tools: list[Tool] = []
    for specialist in SPECIALISTS:

        async def run(args: dict[str, Any], specialist: AgentSpec = specialist) -> dict[str, Any]:
            reply = await delegate(specialist, handoff_message(specialist, args.get("tag")))
            return {"response": reply}

        spec = ToolSpec(
            specialist.name,
            f"{specialist.description} To hand the latest request to {specialist.display_name}, "
            f'call this with tag exactly "@{specialist.name}". Returns their reply ("" if they stayed silent).',
            object_schema({"tag": {"type": "string", "description": f'Exactly "@{specialist.name}".'}}, ("tag",)),
        )
        tools.append(Tool(spec, run, handoff=True))
    return tools
