"""`GeminiClient`: the one door to Google's Gemini API, shared by every adapter that uses it.

The agents' model, the knowledge extractor and any later Gemini path all talk to Google
through `google-genai`. Each used to configure the SDK itself, and the copies drifted
(API version, TLS, which failures were retried). This module is the only place that
builds a `genai.Client`, so every caller gets the same wire and the same failures.

Guarantees:
- Requests go to `base_url` (Google unless a test points elsewhere) with API version
  `API_VERSION`, over one shared TLS context that verifies certificates; environment
  variables the SDK would otherwise read decide nothing.
- Every request runs under `asyncio.timeout(timeout_s)`; transient failures (429, 5xx,
  timeouts, connection errors) are retried at most `retries_max` times with exponential
  backoff, then `ModelUnavailable` is raised. Other refusals raise `ModelRejected` at once.
- Error messages carry the HTTP status and the provider's short reason, never the API key
  or what we sent; the SDK's exception is chained (`from exc`), never leaked.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import math
import random
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from typing import TypeVar

import httpx
from google import genai
from google.genai import errors, types
from google.genai.client import DebugConfig

from agents.model import ModelError, ModelRejected, ModelUnavailable, Usage

BASE_URL = "https://generativelanguage.googleapis.com/"
# google-genai may default to "v1" and lets GOOGLE_GENAI_API_VERSION change it. We pin
# v1beta, where Gemini's function-calling and structured-output fields (thought
# signatures, `parametersJsonSchema`, `responseJsonSchema`) appear first, so the wire
# format cannot move under us.
API_VERSION = "v1beta"

_REASON_CHARS_MAX = 200
# What a request can fail with once the SDK holds it: Google's answer (APIError), no
# answer (our timeout, httpx's transport errors), or a request or answer the SDK could
# not encode or decode (pydantic and JSON errors are ValueErrors).
_FAILURES = (errors.APIError, TimeoutError, httpx.RequestError, ValueError)
T = TypeVar("T")


class GeminiClient:
    """A configured `google-genai` client with our timeout, retries and errors.

    `generate` is one bounded, retried `generateContent` call. `sdk` is the configured
    SDK client for calls that are not (a streaming or live session); such callers turn
    what it raises into our errors with `error`. Use one instance per event loop.
    """

    def __init__(
        self,
        *,
        api_key: str,
        timeout_s: float,
        retries_max: int,
        backoff_s: float = 0.5,
        base_url: str | None = None,
    ) -> None:
        assert api_key, "GeminiClient needs an API key"
        assert timeout_s > 0, timeout_s
        assert retries_max >= 0, retries_max
        assert backoff_s >= 0, backoff_s
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._retries_max = retries_max
        self._backoff_s = backoff_s
        # Our own httpx client pins the transport: with aiohttp installed the SDK would
        # pick it instead, with a different set of exceptions to classify.
        self._http = httpx.AsyncClient(
            timeout=timeout_s, verify=_tls_context(), event_hooks={"response": [_note_streamed]}
        )
        self.sdk = genai.Client(
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
                # The SDK also builds a sync and a websocket client; handing them the
                # shared context spares loading the CA bundle again per instance.
                client_args={"verify": _tls_context()},
                async_client_args={"ssl": _tls_context()},
            ),
        )

    async def generate(
        self,
        *,
        model: str,
        contents: types.ContentListUnion | types.ContentListUnionDict,
        config: types.GenerateContentConfigOrDict | None = None,
    ) -> types.GenerateContentResponse:
        """One `generateContent` answer, retried while the failure is transient."""
        # Nothing is double-billed: an attempt that failed with 429/5xx produced no
        # answer and no usage, and callers count usage only from the answer returned.
        # An attempt abandoned on timeout may still cost us at Google (X-Server-Timeout
        # asks it to stop), but its usage never reaches the ledger.
        failure: Exception | None = None
        for attempt in range(self._retries_max + 1):
            if attempt:
                await asyncio.sleep(self._backoff_delay_s(attempt - 1))
            try:
                async with asyncio.timeout(self._timeout_s):
                    return await self.sdk.aio.models.generate_content(model=model, contents=contents, config=config)
            except _FAILURES as exc:
                if not _retryable(exc):
                    raise self.error(exc) from exc
                failure = exc
        assert failure is not None
        raise self.error(failure, attempts=self._retries_max + 1) from failure

    async def stream(
        self,
        *,
        model: str,
        contents: types.ContentListUnion | types.ContentListUnionDict,
        config: types.GenerateContentConfigOrDict | None = None,
    ) -> AsyncGenerator[types.GenerateContentResponse, None]:
        """The chunks of one `streamGenerateContent` answer, under the same timeout.

        A transient failure before the first chunk is retried like `generate`; once a chunk
        has arrived the answer is under way (and billed), so a failure after it is raised,
        never retried. Stopping early (closing this iterator) closes the HTTP response."""
        failure: Exception | None = None
        for attempt in range(self._retries_max + 1):
            if attempt:
                await asyncio.sleep(self._backoff_delay_s(attempt - 1))
            received = False
            opened: list[httpx.Response] = []
            try:
                async with asyncio.timeout(self._timeout_s):
                    chunks = await _noting(
                        opened,
                        self.sdk.aio.models.generate_content_stream(model=model, contents=contents, config=config),
                    )
                    try:
                        while (chunk := await _noting(opened, anext(chunks, None))) is not None:
                            received = True
                            yield chunk
                    finally:
                        await _aclose(chunks)
                        # Closing the SDK's generator leaves the generators it reads from
                        # open until they are garbage collected, and the HTTP response with
                        # them: Google went on generating (and billing) an answer a barge-in
                        # had stopped (docs/money.md#charging). The response itself is
                        # closed here, which ends the stream at Google.
                        for response in opened:
                            await response.aclose()
                return
            except _FAILURES as exc:
                if received or not _retryable(exc):
                    raise self.error(exc) from exc
                failure = exc
        assert failure is not None
        raise self.error(failure, attempts=self._retries_max + 1) from failure

    def error(self, exc: Exception, *, attempts: int = 1) -> ModelError:
        """Our error for what a Gemini call raised; the caller raises it `from exc`."""
        if not _retryable(exc):
            if isinstance(exc, errors.APIError):
                return ModelRejected(f"Gemini refused the request: {self._reason(exc)}")
            return ModelRejected(f"Gemini call failed: {type(exc).__name__}")
        return ModelUnavailable(f"Gemini did not answer after {attempts} attempts: {self._reason(exc)}")

    async def aclose(self) -> None:
        """Closes the connection pool; call once when the program stops."""
        await self._http.aclose()

    @property
    def is_closed(self) -> bool:
        return self._http.is_closed

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


# The HTTP responses opened by the streamed request under way in this task (`stream`).
_STREAMED: contextvars.ContextVar[list[httpx.Response] | None] = contextvars.ContextVar("gemini_streamed", default=None)


async def _noting(opened: list[httpx.Response], step: Awaitable[T]) -> T:
    """Await one step of the SDK's stream, noting in `opened` any HTTP response it opens
    (the request goes out on the stream's first step, not when it is made). Only while the
    SDK runs: nothing is noted while a chunk is with our caller."""
    noting = _STREAMED.set(opened)
    try:
        return await step
    finally:
        _STREAMED.reset(noting)


async def _note_streamed(response: httpx.Response) -> None:
    """httpx's response hook: a response opened for `stream` is noted so it can be closed."""
    opened = _STREAMED.get()
    if opened is not None:
        opened.append(response)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle takes about 50 ms, so every client shares one context.
    return httpx.create_ssl_context()


async def _aclose(chunks: AsyncIterator[types.GenerateContentResponse]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, errors.APIError):
        return exc.code == 429 or exc.code >= 500
    # No answer reached us (timeout, refused, reset, garbled transfer) may pass; a
    # request the SDK could not encode or an answer it could not decode will not.
    return isinstance(exc, TimeoutError | httpx.RequestError)


def usage_of(answer: types.GenerateContentResponse) -> Usage:
    """What Google reports one answer (or one streamed chunk) used, as the product counts it."""
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
