"""The `Model` port: what every language model adapter takes and returns.

Contents in (system instruction, thread history, this run's tool traffic) and tool
declarations; text and/or function calls and token usage out. Adapters translate to and
from their SDK at the boundary, so nothing else in the product sees a vendor type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["user", "model"]


@dataclass(frozen=True, slots=True)
class FunctionCall:
    id: str
    name: str
    args: dict[str, Any]
    # An opaque token some providers attach to a call and require back with it (Gemini 3's
    # thought signature). The tool loop hands the call back unchanged, so it round-trips.
    signature: bytes | None = None


@dataclass(frozen=True, slots=True)
class FunctionResult:
    call_id: str
    name: str
    response: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Content:
    """One turn of the conversation the model sees: text, calls it made, or their results."""

    role: Role
    text: str = ""
    calls: tuple[FunctionCall, ...] = ()
    results: tuple[FunctionResult, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the model may call; `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str
    system: str
    contents: tuple[Content, ...]
    tools: tuple[ToolSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one model call, as the provider reports them."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    tool_use_prompt_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.tool_use_prompt_tokens + self.output_tokens + self.thinking_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            tool_use_prompt_tokens=self.tool_use_prompt_tokens + other.tool_use_prompt_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            thinking_tokens=self.thinking_tokens + other.thinking_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "tool_use_prompt_tokens": self.tool_use_prompt_tokens,
            "output_tokens": self.output_tokens,
            "thinking_tokens": self.thinking_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str
    calls: tuple[FunctionCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    # The caller stopped the answer part-way (a barge-in): `text` is what arrived by then,
    # `usage` what the provider reported for it, and any calls are dropped unrun.
    cut: bool = False


class Model(Protocol):
    """Anything that can answer one model call."""

    async def generate(self, *, request: ModelRequest) -> ModelResponse: ...


class StopSignal(Protocol):
    """Asked between pieces of a streamed answer whether to stop it (an `asyncio.Event`)."""

    def is_set(self) -> bool: ...


@runtime_checkable
class StreamingModel(Protocol):
    """A model that hands over its text as it arrives (docs/agents.md#streaming).

    `on_text` hears each piece of the answer's text in order; the answer returned is the
    same as `generate` would give (with `cut` when `stop` was set before it ended)."""

    async def generate(self, *, request: ModelRequest) -> ModelResponse: ...

    async def stream(
        self, *, request: ModelRequest, on_text: Callable[[str], None], stop: StopSignal | None = None
    ) -> ModelResponse: ...


async def generate_streaming(
    model: Model, request: ModelRequest, on_text: Callable[[str], None], stop: StopSignal | None = None
) -> ModelResponse:
    """One model call whose text is heard as it arrives: streamed when the model can,
    otherwise heard whole once the answer is in (the offline and scripted models)."""
    if isinstance(model, StreamingModel):
        return await model.stream(request=request, on_text=on_text, stop=stop)
    response = await model.generate(request=request)
    if response.text:
        on_text(response.text)
    return response


class ModelError(Exception):
    """A model call failed in a way the run cannot recover from (after retries).

    `usage` is what the provider reported before it failed (a stream that broke part-way
    is billed for what it sent); the run charges it once (agents.runtime)."""

    usage: Usage = Usage()


class ModelUnavailable(ModelError):
    """The provider did not answer in time or kept failing with retryable errors."""


class ModelRejected(ModelError):
    """The provider refused the request (bad request, safety block, bad key)."""
