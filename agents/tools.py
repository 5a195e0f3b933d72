"""Tools the model may call: a declaration the model reads and the async function behind it.

Tool descriptions are written for the model. Handlers take the model's arguments as a
dict and return a JSON-able dict; a `ToolError` becomes `{"error": ...}` for the model to
read, while any other exception fails the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agents.model import ToolSpec

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Tool:
    spec: ToolSpec
    handler: Handler
    # A handoff tool runs another agent; the runtime counts those against their own limit.
    handoff: bool = False
    # A read-only tool, taking no arguments, that the agent's first step always is (Zee
    # lists the home's devices): a run that primes runs it before its first model call,
    # so the model starts from its result and one model round is saved (agents.runtime).
    primed: bool = False

    @property
    def name(self) -> str:
        return self.spec.name


def object_schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A JSON Schema object, the only top-level shape function declarations take."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema
