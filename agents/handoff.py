"""Ava's handoff tools: one per specialist, the only way work is handed on (docs/agents.md#handoff).

The tool's argument is the specialist's tag. Whoever builds the tools supplies the
`Delegate` that writes the tag to the thread as Ava's message and runs the specialist;
the specialist's final reply comes back to Ava as the tool result.

On a call Ava may ask for the specialist's answer to be said to the person as it is
(`answer_directly`) when she has nothing to add: the delegate then speaks it while it is
written, and the result tells the runtime that her turn is done (`ANSWERED`), so no
further model call is made just to repeat it (docs/agents.md#handoff). Whether the
request is honoured is the delegate's business (only a call that speaks as it goes does).
"""

from __future__ import annotations

from typing import Any, Protocol

from agents.model import ToolSpec
from agents.roster import SPECIALISTS, AgentSpec
from agents.tools import Tool, object_schema

# A tool result holding this key set to True ends the lead's run with no reply of hers.
ANSWERED = "answered_directly"


class Delegate(Protocol):
    """(specialist, the message Ava writes) -> the specialist's final reply ("" when silent),
    and whether that reply was said to the person as it is (`direct` asks for it)."""

    async def __call__(self, specialist: AgentSpec, tag: str, *, direct: bool = False) -> tuple[str, bool]: ...


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
            direct = args.get("answer_directly") is True
            reply, said = await delegate(specialist, handoff_message(specialist, args.get("tag")), direct=direct)
            return {"response": reply, ANSWERED: True} if said else {"response": reply}

        spec = ToolSpec(
            specialist.name,
            f"{specialist.description} To hand the latest request to {specialist.display_name}, "
            f'call this with tag exactly "@{specialist.name}". Returns their reply ("" if they stayed silent).',
            object_schema(
                {
                    "tag": {"type": "string", "description": f'Exactly "@{specialist.name}".'},
                    "answer_directly": {
                        "type": "boolean",
                        "description": f"On a call: true when {specialist.display_name}'s answer is all the person "
                        "needs and you have nothing to add; it is then said to them as it is and you are not asked "
                        "again. Leave it out when you will combine several answers or add your own judgement.",
                    },
                },
                ("tag",),
            ),
        )
        tools.append(Tool(spec, run, handoff=True))
    return tools
