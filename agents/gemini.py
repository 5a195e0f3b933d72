"""`GeminiModel`: the `Model` port answered by Google's Gemini API through `google-genai`.

This is the only module that imports `google.genai`. It translates our contents and tool
specs into the SDK's types and the SDK's answer back into a `ModelResponse`, so no vendor
type or vendor exception leaves it.

Guarantees:
- Every HTTP request runs under `asyncio.timeout(timeout_s)`; transient failures (429, 5xx,
  timeouts, connection errors) are retried at most `retries_max` times with exponential
  backoff, then `ModelUnavailable` is raised. Other refusals raise `ModelRejected` at once.
- Usage is taken only from answers we received, so each billed answer is counted once.
- Error messages carry the HTTP status and the provider's short reason, never the API key
  or what we sent.
- Where requests go and how they are retried is decided here, not by environment
  variables the SDK would otherwise read.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import math
import random
import ssl
from collections.abc import Iterable
from itertools import count

import httpx
from google import genai
from google.genai import errors, types
from google.genai.client import DebugConfig

from agents.model import (
    Content,
    FunctionCall,
    ModelRejected,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    ToolSpec,
    Usage,
)

BASE_URL = "https://generativelanguage.googleapis.com/"
# google-genai may default to "v1" and lets GOOGLE_GENAI_API_VERSION change it. We pin
# v1beta, where Gemini's function-calling fields (thought signatures,
# `parametersJsonSchema`) appear first, so the wire format cannot move under us.
API_VERSION = "v1beta"

# Gemini 3 rejects a history whose function calls lack the signature it issued. Calls
# carry it back in `FunctionCall.signature`; a model turn with no signature at all (e.g.
# written by another model) gets Google's documented "skip validation" sentinel. The SDK
# sends `bytes` as base64, so the sentinel is stored decoded.
_SIGNATURE_SKIP = base64.urlsafe_b64decode("skip_thought_signature_validator")

# A continuation hop is one more billed request; a reply needing more is cut off here.
_HOPS_MAX = 4
_REASON_CHARS_MAX = 200
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
        assert api_key, "GeminiModel needs an API key"
        assert timeout_s > 0, timeout_s
        assert retries_max >= 0, retries_max
        assert backoff_s >= 0, backoff_s
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._retries_max = retries_max
        self._backoff_s = backoff_s
        self._call_numbers = count(1)
        # Our own httpx client pins the transport: with aiohttp installed the SDK would
        # pick it instead, with a different set of exceptions to classify.
        self._http = httpx.AsyncClient(timeout=timeout_s, verify=_tls_context())
        self._client = genai.Client(
            vertexai=False,
            api_key=api_key,
            debug_config=DebugConfig(client_mode=None, replays_directory=None, replay_id=None),
            http_options=types.HttpOptions(
                base_url=base_url or BASE_URL,
                api_version=API_VERSION,
                # Milliseconds; the SDK also forwards it as X-Server-Timeout so Google
                # stops generating (and billing) an answer we are no longer waiting for.
                timeout=max(1, math.ceil(timeout_s * 1000)),
                # One attempt: retries are ours, under our timeout and our accounting.
                retry_options=types.HttpRetryOptions(attempts=1),
                httpx_async_client=self._http,
                # The SDK also builds a sync and a websocket client we never use; handing
                # them the shared context spares loading the CA bundle twice per instance.
                client_args={"verify": _tls_context()},
                async_client_args={"ssl": _tls_context()},
            ),
        )

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        contents = self._contents(request.contents)
        text = ""
        calls: list[FunctionCall] = []
        usage = Usage()
        model = ""
        token: bytes | None = None
        for _ in range(_HOPS_MAX):
            answer = await self._generate_with_retries(
                model=request.model,
                contents=contents,
                config=_config(request, continuation_token=token),
            )
            usage = usage + _usage(answer)
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

    async def aclose(self) -> None:
        """Closes the connection pool; call once when the program stops."""
        await self._http.aclose()

    async def _generate_with_retries(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig,
    ) -> types.GenerateContentResponse:
        # Nothing is double-billed: an attempt that failed with 429/5xx produced no
        # answer and no usage, and we count usage only from the answer we return. An
        # attempt we abandoned on timeout may still cost us at Google (X-Server-Timeout
        # asks it to stop), but its usage never reaches the ledger, so the person pays
        # for one answer only.
        failure: Exception | None = None
        for attempt in range(self._retries_max + 1):
            if attempt:
                await asyncio.sleep(self._backoff_delay_s(attempt - 1))
            try:
                async with asyncio.timeout(self._timeout_s):
                    return await self._client.aio.models.generate_content(model=model, contents=contents, config=config)
            except errors.APIError as exc:
                if not _retryable(exc.code):
                    raise ModelRejected(f"Gemini refused the request: {self._reason(exc)}") from exc
                failure = exc
            except (TimeoutError, httpx.RequestError) as exc:
                # No answer reached us (timeout, refused, reset, garbled transfer).
                failure = exc
            except ValueError as exc:
                # The SDK could not encode our request or decode the answer (pydantic
                # and JSON errors are ValueErrors); sending it again would not help.
                raise ModelRejected(f"Gemini call failed: {type(exc).__name__}") from exc
        assert failure is not None
        raise ModelUnavailable(
            f"Gemini did not answer after {self._retries_max + 1} attempts: {self._reason(failure)}"
        ) from failure

    def _backoff_delay_s(self, retry: int) -> float:
        delay_s = self._backoff_s * 2.0**retry
        # Jitter spreads out retries of calls that failed together.
        return delay_s + random.uniform(0, delay_s / 4)

    def _reason(self, exc: Exception) -> str:
        if isinstance(exc, errors.APIError):
            # The provider's own message (e.g. "API key not valid", "missing a
            # thought_signature") is the useful part; `str(exc)` would add the full body.
            message = str(exc.message or "")[:_REASON_CHARS_MAX]
            reason = f"HTTP {exc.code} {exc.status or ''} {message}".strip()
        elif isinstance(exc, TimeoutError):
            reason = f"no answer within {self._timeout_s:g} s"
        else:
            reason = type(exc).__name__
        return reason.replace(self._api_key, "[api key]")

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


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle takes about 50 ms, so every client shares one context.
    return httpx.create_ssl_context()


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


def _usage(answer: types.GenerateContentResponse) -> Usage:
    metadata = answer.usage_metadata
    if metadata is None:
        return Usage()
    return Usage(
        prompt_tokens=metadata.prompt_token_count or 0,
        cached_tokens=metadata.cached_content_token_count or 0,
        tool_use_prompt_tokens=metadata.tool_use_prompt_token_count or 0,
        output_tokens=metadata.candidates_token_count or 0,
        thinking_tokens=metadata.thoughts_token_count or 0,
    )


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500
