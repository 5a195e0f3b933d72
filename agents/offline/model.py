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


def _estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def _content_text(content: Content) -> str:
    parts = [content.text]
    parts += [json.dumps(c.args) for c in content.calls]
    parts += [json.dumps(r.response, default=str) for r in content.results]
    return "".join(parts)


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
    seen = request.system + "".join(_content_text(c) for c in request.contents)
    seen += "".join(json.dumps(t.parameters) + t.description for t in request.tools)
    said = text + "".join(json.dumps(c.args) + c.name for c in calls)
    return Usage(prompt_tokens=_estimate_tokens(seen), output_tokens=_estimate_tokens(said))
