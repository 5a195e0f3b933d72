"""`OfflineModel`: plays Ava, Zee, Yori and Rafal from rules, with no network and no
randomness. It reads only the request (instruction layers, thread, this run's tool
results), so it exercises the same protocol as Gemini, and it estimates token usage so
billing runs end to end."""

from __future__ import annotations

import json

from agents.model import Content, FunctionCall, ModelRequest, ModelResponse, Usage
from agents.offline.memory import memory_turn
from agents.offline.situation import read_situation
from agents.offline.skills import lead_turn, specialist_turn

MODEL_NAME = "offline-1"


def _estimate_chars(chars: int) -> int:
    return max(1, (chars + 3) // 4)


def _content_chars(content: Content) -> int:
    """How long the content is as the model reads it (text, call arguments, tool results)."""
    chars = len(content.text)
    if not content.calls and not content.results:
        return chars  # a history line, nearly every content of a long thread
    chars += sum(len(json.dumps(c.args)) for c in content.calls)
    chars += sum(len(json.dumps(r.response, default=str)) for r in content.results)
    return chars


class OfflineModel:
    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        situation = read_situation(request)
        remembered = memory_turn(situation, frozenset(t.name for t in request.tools))
        if remembered is not None:
            text, calls = remembered
        else:
            text, calls = lead_turn(situation) if situation.lead else specialist_turn(situation)
        return ModelResponse(text=text, calls=tuple(calls), usage=_usage(request, text, calls), model=MODEL_NAME)


def _usage(request: ModelRequest, text: str, calls: list[FunctionCall]) -> Usage:
    # Lengths summed rather than the whole request joined: the same estimate, without
    # building a copy of the history on every call.
    seen = len(request.system) + sum(map(_content_chars, request.contents))
    seen += sum(len(json.dumps(t.parameters)) + len(t.description) for t in request.tools)
    said = len(text) + sum(len(json.dumps(c.args)) + len(c.name) for c in calls)
    return Usage(prompt_tokens=_estimate_chars(seen), output_tokens=_estimate_chars(said))
