"""The tool loop: one agent turn from its instruction and history to its final reply.

It calls the model, runs the tools it asks for, feeds the results back and stops at the
first reply without calls. Every run is bounded (docs/agents.md#run-limits): model calls, tool calls and
handoffs each have a ceiling, and breaking one fails the run with a clear error. An
observer hears about each model call as soon as it returns, so usage can be charged per
call and a run that fails halfway is still accounted for.

A run that speaks (a call) is given a `Speech`: every model call then streams and the
speech hears the text as it arrives, so the first sentence can be said before the answer
is over. A `stop` set meanwhile (the person spoke over it) cuts the answer where it is;
the cut answer, and one that broke part-way, are charged what the provider reported, once.
A result a speaking run claimed beside its tool calls ("The bedroom light is on.") is held
until they have run; when every one reported success it is said and it is the run's reply,
so no model call is made only to write it again (docs/agents.md#streaming).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.errors import RunLimitExceeded, ToolError
from agents.handoff import ANSWERED
from agents.model import (
    Content,
    FunctionCall,
    FunctionResult,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    StopSignal,
    Usage,
    generate_streaming,
)
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


class Speech(Protocol):
    """Hears a speaking run's text as it arrives, and where each model call's answer ends
    (`calls`: the answer also asked for tools, so its text came before they ran)."""

    def text(self, piece: str) -> None: ...

    def answer_ended(self, *, calls: bool) -> None: ...

    def tools_ran(self, *, succeeded: bool) -> bool:
        """The tools of the answer that just ended have run (`succeeded`: every one reported
        success); True when the result written beside them was said, which ends the run."""
        ...


@dataclass(slots=True)
class RunOutcome:
    text: str
    model_calls: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    cut: bool = False  # stopped part-way: `text` is what had been said by then
    # A specialist's answer was said to the person as it is, so the lead ended without a reply.
    answered_directly: bool = False


def _succeeded(result: dict[str, Any]) -> bool:
    """A tool result that reports success outright ({"ok": true}); a proposal awaiting the
    person's yes, an error or a plain reading is not one."""
    return result.get("ok") is True and "error" not in result


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
    speech: Speech | None = None,
    stop: StopSignal | None = None,
    prime: bool = False,
) -> RunOutcome:
    """Run one agent turn to its final reply (which may be empty: silence is an answer).

    `prime`: the agent's primed tools run first, as if its first model call had asked
    for them, so the model starts from their results (recorded and counted like any call)."""
    by_name = {t.name: t for t in tools}
    contents = list(history)
    outcome = RunOutcome(text="", model=model_name)
    handoffs = 0
    primed = [t for t in tools if t.primed] if prime else []
    if primed:
        contents += await _prime(primed, observer, outcome)
    while True:
        if outcome.model_calls >= limits.model_calls_max:
            raise RunLimitExceeded(f"the run made {limits.model_calls_max} model calls without finishing")
        request = ModelRequest(
            model=model_name, system=system, contents=tuple(contents), tools=tuple(t.spec for t in tools)
        )
        started = time.monotonic()
        with span("model call", model=model_name, index=outcome.model_calls + 1) as called:
            try:
                response = await _answer(model, request, speech, stop)
            except ModelError as exc:
                if exc.usage != Usage():  # a stream that broke part-way: billed for what it sent
                    outcome.model_calls += 1
                    outcome.usage = outcome.usage + exc.usage
                    await observer.model_called(index=outcome.model_calls, model=model_name, usage=exc.usage)
                raise
            called.set_attribute("avagenc.output_tokens", response.usage.output_tokens)
        metrics.model_call_seconds.observe(time.monotonic() - started, model=model_name)
        outcome.model_calls += 1
        outcome.usage = outcome.usage + response.usage
        outcome.model = response.model or model_name
        await observer.model_called(index=outcome.model_calls, model=outcome.model, usage=response.usage)
        if response.cut:
            outcome.text, outcome.cut = response.text, True
            return outcome
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
        # What the answer claimed beside its tools, once they proved it, is said and is the
        # reply; never after the person spoke over the run (the next call is cut at once).
        proven = not (stop is not None and stop.is_set()) and all(_succeeded(r.response) for r in results)
        if speech is not None and speech.tools_ran(succeeded=proven):
            outcome.text = response.text
            return outcome
        if any(r.response.get(ANSWERED) is True for r in results):
            # The specialist's answer was said as it is: nothing is left for the lead to say.
            outcome.answered_directly = True
            return outcome
        contents.append(Content(role="user", results=tuple(results)))


async def _prime(primed: Sequence[Tool], observer: RunObserver, outcome: RunOutcome) -> list[Content]:
    """Runs the primed tools; the contents that show them as the model's own first calls."""
    calls = tuple(FunctionCall(id=f"primed_{t.name}", name=t.name, args={}) for t in primed)
    results: list[FunctionResult] = []
    for call, tool in zip(calls, primed, strict=True):
        outcome.tool_calls += 1
        result = await _call_tool(tool, call)
        await observer.tool_called(name=call.name, args={}, result=result)
        results.append(FunctionResult(call_id=call.id, name=call.name, response=result))
    return [Content(role="model", calls=calls), Content(role="user", results=tuple(results))]


async def _answer(model: Model, request: ModelRequest, speech: Speech | None, stop: StopSignal | None) -> ModelResponse:
    if speech is None:
        return await model.generate(request=request)
    response = await generate_streaming(model, request, speech.text, stop)
    if not response.cut:  # a cut answer's unfinished sentence is never said
        speech.answer_ended(calls=bool(response.calls))
    return response
