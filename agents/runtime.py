"""The tool loop: one agent turn from its instruction and history to its final reply.

It calls the model, runs the tools it asks for, feeds the results back and stops at the
first reply without calls. Every run is bounded (docs/agents.md#run-limits): model calls, tool calls and
handoffs each have a ceiling, and breaking one fails the run with a clear error. An
observer hears about each model call as soon as it returns, so usage can be charged per
call and a run that fails halfway is still accounted for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.errors import RunLimitExceeded, ToolError
from agents.model import Content, FunctionCall, FunctionResult, Model, ModelRequest, Usage
from agents.tools import Tool
from telemetry import metrics, span

# A tool result larger than this is cut before the model sees it, so one noisy API
# response cannot blow the context window.
_TOOL_RESULT_CHARS_MAX = 16_000


@dataclass(frozen=True, slots=True)
class RunLimits:
    model_calls_max: int = 8
    tool_calls_max: int = 16
    handoffs_max: int = 4


class RunObserver(Protocol):
    """Hears what a run does while it does it (usage for billing, tool traffic for audit)."""

    async def model_called(self, *, index: int, model: str, usage: Usage) -> None: ...

    async def tool_called(self, *, name: str, args: dict[str, Any], result: dict[str, Any]) -> None: ...


@dataclass(slots=True)
class RunOutcome:
    text: str
    model_calls: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    model: str = ""


def _clip(result: dict[str, Any]) -> dict[str, Any]:
    encoded = json.dumps(result, ensure_ascii=False, default=str)
    if len(encoded) <= _TOOL_RESULT_CHARS_MAX:
        return result
    return {"truncated": True, "partial": encoded[:_TOOL_RESULT_CHARS_MAX]}


async def _call_tool(tool: Tool | None, call: FunctionCall) -> dict[str, Any]:
    if tool is None:
        return {"error": f"There is no tool named {call.name!r}."}
    try:
        return _clip(await tool.handler(dict(call.args)))
    except ToolError as exc:
        return {"error": str(exc)}


async def run_agent(
    *,
    model: Model,
    model_name: str,
    system: str,
    history: Sequence[Content],
    tools: Sequence[Tool],
    observer: RunObserver,
    limits: RunLimits = RunLimits(),
) -> RunOutcome:
    """Run one agent turn to its final reply (which may be empty: silence is an answer)."""
    by_name = {t.name: t for t in tools}
    contents = list(history)
    outcome = RunOutcome(text="", model=model_name)
    handoffs = 0
    while True:
        if outcome.model_calls >= limits.model_calls_max:
            raise RunLimitExceeded(f"the run made {limits.model_calls_max} model calls without finishing")
        request = ModelRequest(
            model=model_name, system=system, contents=tuple(contents), tools=tuple(t.spec for t in tools)
        )
        started = time.monotonic()
        with span("model call", model=model_name, index=outcome.model_calls + 1) as called:
            response = await model.generate(request=request)
            called.set_attribute("avagenc.output_tokens", response.usage.output_tokens)
        metrics.model_call_seconds.observe(time.monotonic() - started, model=model_name)
        outcome.model_calls += 1
        outcome.usage = outcome.usage + response.usage
        outcome.model = response.model or model_name
        await observer.model_called(index=outcome.model_calls, model=outcome.model, usage=response.usage)
        if not response.calls:
            outcome.text = response.text
            return outcome
        contents.append(Content(role="model", text=response.text, calls=response.calls))
        results: list[FunctionResult] = []
        # Calls run one after another, in the order the model gave them, so the thread
        # records handoffs in a predictable order.
        for call in response.calls:
            tool = by_name.get(call.name)
            outcome.tool_calls += 1
            if outcome.tool_calls > limits.tool_calls_max:
                raise RunLimitExceeded(f"the run asked for more than {limits.tool_calls_max} tool calls")
            if tool is not None and tool.handoff:
                handoffs += 1
                if handoffs > limits.handoffs_max:
                    raise RunLimitExceeded(f"the run handed on more than {limits.handoffs_max} times")
            with span(f"tool {call.name}", tool=call.name, handoff=bool(tool is not None and tool.handoff)):
                result = await _call_tool(tool, call)
            await observer.tool_called(name=call.name, args=dict(call.args), result=result)
            results.append(FunctionResult(call_id=call.id, name=call.name, response=result))
        contents.append(Content(role="user", results=tuple(results)))
