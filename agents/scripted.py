"""`ScriptedModel`: replays given responses in order and records every request.

Tests script exactly what the model says and then assert on what the product did with
it (thread, tools, ledger) and on what the model was shown (`requests`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from agents.model import ModelRequest, ModelResponse, Usage

Reply = ModelResponse | Exception | Callable[[ModelRequest], ModelResponse]


@dataclass
class ScriptedModel:
    """Answers each call with the next scripted reply; an exception in the script is raised.

    A callable reply computes its answer from the request, for scripts that depend on
    which agent is asking. Running out of script is a test bug, reported loudly.
    """

    replies: list[Reply] = field(default_factory=list)
    requests: list[ModelRequest] = field(default_factory=list)
    default_usage: Usage = field(default_factory=lambda: Usage(prompt_tokens=100, output_tokens=10))

    def extend(self, replies: Iterable[Reply]) -> None:
        self.replies.extend(replies)

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"ScriptedModel ran out of replies (call {len(self.requests)})")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(request)
        if reply.usage == Usage():
            return ModelResponse(reply.text, reply.calls, self.default_usage, reply.model or request.model)
        return reply
