"""`GeminiModel`: the `Model` port answered by Google's Gemini API through `google-genai`.

It translates our contents and tool specs into the SDK's types and the SDK's answer back
into a `ModelResponse`, so no vendor type or vendor exception leaves it. The client, its
timeout, retries and error mapping come from `agents.genai`, shared with every other
Gemini caller.

Guarantees:
- Every HTTP request is one bounded, retried `GeminiClient.generate`: transient failures
  end in `ModelUnavailable`, refusals and answers we cannot use in `ModelRejected`.
- Usage is taken only from answers we received, so each billed answer is counted once.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from itertools import count

from google.genai import types

from agents.genai import GeminiClient, usage_of
from agents.model import (
    Content,
    FunctionCall,
    ModelError,
    ModelRejected,
    ModelRequest,
    ModelResponse,
    StopSignal,
    ToolSpec,
    Usage,
)

# Gemini 3 rejects a history whose function calls lack the signature it issued. Calls
# carry it back in `FunctionCall.signature`; a model turn with no signature at all (e.g.
# written by another model) gets Google's documented "skip validation" sentinel. The SDK
# sends `bytes` as base64, so the sentinel is stored decoded.
_SIGNATURE_SKIP = base64.urlsafe_b64decode("skip_thought_signature_validator")

# A continuation hop is one more billed request; a reply needing more is cut off here.
_HOPS_MAX = 4
_ANSWERED_REASONS = frozenset(
    {
        types.FinishReason.STOP,
        types.FinishReason.MAX_TOKENS,
        types.FinishReason.CONTINUATION,
        types.FinishReason.FINISH_REASON_UNSPECIFIED,
    }
)


class GeminiModel:
    """Answers model calls with Gemini. Use one instance per event loop.

    `base_url` points the adapter at another endpoint (a fake in tests).
    """

    def __init__(
        self,
        *,
        api_key: str,
        timeout_s: float = 90.0,
        retries_max: int = 3,
        base_url: str | None = None,
        backoff_s: float = 0.5,
    ) -> None:
        self._client = GeminiClient(
            api_key=api_key,
            timeout_s=timeout_s,
            retries_max=retries_max,
            backoff_s=backoff_s,
            base_url=base_url,
        )
        self._call_numbers = count(1)

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        contents = self._contents(request.contents)
        text = ""
        calls: list[FunctionCall] = []
        usage = Usage()
        model = ""
        token: bytes | None = None
        for _ in range(_HOPS_MAX):
            answer = await self._client.generate(
                model=request.model,
                contents=contents,
                config=_config(request, continuation_token=token),
            )
            usage = usage + usage_of(answer)
            model = model or answer.model_version or ""
            candidate = _first_candidate(answer)
            hop_text, hop_calls = self._read_parts(candidate)
            text += hop_text
            calls.extend(hop_calls)
            token = candidate.continuation_token
            if candidate.finish_reason != types.FinishReason.CONTINUATION or not token:
                break
        if not text and not calls and candidate.finish_reason not in _ANSWERED_REASONS:
            reason = candidate.finish_reason.name if candidate.finish_reason else "unknown"
            raise ModelRejected(f"Gemini stopped without an answer (finish reason {reason})")
        return ModelResponse(text=text, calls=tuple(calls), usage=usage, model=model or request.model)

    async def stream(
        self, *, request: ModelRequest, on_text: Callable[[str], None], stop: StopSignal | None = None
    ) -> ModelResponse:
        """One streamed answer: each piece of text goes to `on_text` as it arrives, function
        calls arrive whole. Usage is the last figure Google sent (each chunk carries the
        total so far), so an answer stopped early or broken part-way is billed for what
        was sent, once: a failure carries it as `ModelError.usage`."""
        text: list[str] = []
        calls: list[FunctionCall] = []
        usage = Usage()
        model = ""
        finish: types.FinishReason | None = None
        cut = False
        chunks = self._client.stream(
            model=request.model,
            contents=self._contents(request.contents),
            config=_config(request, continuation_token=None),
        )
        try:
            async for chunk in chunks:
                if chunk.usage_metadata is not None:
                    usage = usage_of(chunk)
                model = model or chunk.model_version or ""
                if chunk.candidates:
                    candidate = _first_candidate(chunk)
                    finish = candidate.finish_reason or finish
                    piece, piece_calls = self._read_parts(candidate)
                    calls.extend(piece_calls)
                    if piece:
                        text.append(piece)
                        on_text(piece)
                else:
                    _first_candidate(chunk)  # a blocked prompt raises; a usage-only chunk passes
                if stop is not None and stop.is_set():
                    cut = True
                    break
        except ModelError as exc:
            exc.usage = usage
            raise
        finally:
            await chunks.aclose()
        if cut:
            return ModelResponse(text="".join(text), usage=usage, model=model or request.model, cut=True)
        if not text and not calls and finish is not None and finish not in _ANSWERED_REASONS:
            failure = ModelRejected(f"Gemini stopped without an answer (finish reason {finish.name})")
            failure.usage = usage
            raise failure
        return ModelResponse(text="".join(text), calls=tuple(calls), usage=usage, model=model or request.model)

    async def aclose(self) -> None:
        """Closes the connection pool; call once when the program stops."""
        await self._client.aclose()

    def _contents(self, contents: Iterable[Content]) -> list[types.Content]:
        translated: list[types.Content] = []
        for content in contents:
            parts: list[types.Part] = []
            if content.text:
                parts.append(types.Part(text=content.text))
            parts.extend(self._call_parts(content.calls))
            parts.extend(
                types.Part(
                    function_response=types.FunctionResponse(
                        id=result.call_id, name=result.name, response=result.response
                    )
                )
                for result in content.results
            )
            if parts:  # Gemini rejects a content without parts.
                translated.append(types.Content(role=content.role, parts=parts))
        return translated

    def _call_parts(self, calls: tuple[FunctionCall, ...]) -> list[types.Part]:
        signatures = [call.signature for call in calls]
        if calls and not any(signatures):
            # Gemini signs the first call of each model turn (parallel calls share it).
            signatures[0] = _SIGNATURE_SKIP
        return [
            types.Part(
                function_call=types.FunctionCall(id=call.id, name=call.name, args=call.args),
                thought_signature=signature,
            )
            for call, signature in zip(calls, signatures, strict=True)
        ]

    def _read_parts(self, candidate: types.Candidate) -> tuple[str, list[FunctionCall]]:
        texts: list[str] = []
        calls: list[FunctionCall] = []
        parts = candidate.content.parts if candidate.content else None
        for part in parts or ():
            if part.function_call is not None:
                calls.append(self._call(part.function_call, part.thought_signature))
            elif part.text and not part.thought:
                # Thought summaries are the model thinking aloud, not its reply.
                texts.append(part.text)
        return "".join(texts), calls

    def _call(self, call: types.FunctionCall, signature: bytes | None) -> FunctionCall:
        if not call.name:
            raise ModelRejected("Gemini answered with a function call without a name")
        # The Gemini API often omits call ids; the tool loop needs one to pair results.
        call_id = call.id or f"call_{next(self._call_numbers)}"
        return FunctionCall(id=call_id, name=call.name, args=dict(call.args or {}), signature=signature or None)


def _config(request: ModelRequest, *, continuation_token: bytes | None) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        system_instruction=request.system or None,
        tools=[types.Tool(function_declarations=_declarations(request.tools))] if request.tools else None,
        # We run the tool loop ourselves; the SDK must not call anything.
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        # The SDK would follow continuation tokens inside one call, so a timeout or
        # failure on a later hop would lose the usage of the hops before it. We follow
        # them in `generate`, one retried request at a time.
        automatic_continuation=False,
        continuation_token=continuation_token,
    )


def _declarations(tools: Iterable[ToolSpec]) -> list[types.FunctionDeclaration]:
    # `parameters_json_schema` takes plain JSON Schema, which is what ToolSpec holds.
    return [
        types.FunctionDeclaration(
            name=tool.name,
            description=tool.description,
            parameters_json_schema=tool.parameters,
        )
        for tool in tools
    ]


def _first_candidate(answer: types.GenerateContentResponse) -> types.Candidate:
    feedback = answer.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        raise ModelRejected(f"Gemini blocked the prompt ({feedback.block_reason.name})")
    if not answer.candidates:
        raise ModelRejected("Gemini answered without a candidate")
    return answer.candidates[0]
