"""A fake Gemini REST endpoint on 127.0.0.1, for testing the real `GeminiModel` adapter.

It speaks just enough of `POST /v1beta/models/{model}:generateContent` for the adapter:
it answers each request with the next scripted `Reply` (a JSON body, an error status, or
no answer at all) and records what it received, so tests assert on the requests the SDK
really sent and on what the adapter made of real HTTP answers. Nothing of ours is mocked.

The server is plain asyncio (one request per connection, `Connection: close`), so it has
no dependencies and shuts down cleanly even with a request left hanging. Given a server
`ssl` context it speaks HTTPS instead, to test what clients make of its certificate. The
builders at the bottom write answers in Gemini's wire format (camelCase JSON).

    async with FakeGemini() as gemini:
        gemini.script(text_reply("hello"))
        model = GeminiModel(api_key="test-key", base_url=gemini.base_url)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import ssl
from collections import deque
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType
from typing import Any, Self

_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):generateContent$")
_UNSCRIPTED = 418  # a 4xx the adapter does not retry, so a test bug fails fast


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted answer: `status` with `body`, or, if `hang`, no answer at all."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    hang: bool = False


@dataclass(frozen=True, slots=True)
class Received:
    """One request as the fake saw it."""

    method: str
    path: str
    model: str | None
    headers: dict[str, str]
    body: dict[str, Any]


class FakeGemini:
    """Serves scripted replies in order; `requests` lists everything received.

    A request with no reply left is answered 418 and counted in `unscripted`; `stop`
    then fails the test, as `ScriptedModel` does when it runs out of script.
    """

    def __init__(self, replies: list[Reply] | None = None, *, tls: ssl.SSLContext | None = None) -> None:
        self.replies: deque[Reply] = deque(replies or ())
        self._tls = tls
        self.requests: list[Received] = []
        self.unscripted = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "FakeGemini is not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://{host}:{port}/"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, host="127.0.0.1", port=0, ssl=self._tls)

    async def stop(self) -> None:
        self._stopping.set()  # releases hanging replies
        if self._server is not None:
            self._server.close()
            # Python 3.11's wait_closed does not wait for handlers; wait for them here
            # so no task outlives the test's event loop.
            await asyncio.gather(*self._handlers)
            await self._server.wait_closed()
            self._server = None
        assert not self.unscripted, f"{self.unscripted} request(s) arrived with no reply scripted"

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            received = await _read_request(reader)
            if received is None:
                return
            self.requests.append(received)
            reply = self._reply_to(received)
            if reply.hang:
                await self._stopping.wait()
                return
            writer.write(_encode_response(reply))
            await writer.drain()
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):
            pass  # the client gave up (its timeout) or sent garbage; nothing to answer
        finally:
            self._handlers.discard(handler)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _reply_to(self, received: Received) -> Reply:
        if received.method != "POST" or received.model is None:
            return error_reply(404, f"no route for {received.method} {received.path}")
        if not self.replies:
            self.unscripted += 1
            return error_reply(_UNSCRIPTED, "FakeGemini ran out of scripted replies")
        return self.replies.popleft()


async def _read_request(reader: asyncio.StreamReader) -> Received | None:
    try:
        # The reader's default 64 KiB limit bounds the head (LimitOverrunError).
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None  # connection opened and closed without a request
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, target, _version = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    raw = await reader.readexactly(length) if length else b""
    path = target.split("?", 1)[0]
    match = _PATH.match(path)
    return Received(
        method=method,
        path=path,
        model=match["model"] if match else None,
        headers=headers,
        body=json.loads(raw) if raw else {},
    )


def _encode_response(reply: Reply) -> bytes:
    body = json.dumps(reply.body).encode()
    reason = HTTPStatus(reply.status).phrase
    head = (
        f"HTTP/1.1 {reply.status} {reason}\r\n"
        "Content-Type: application/json; charset=UTF-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


# Builders for Gemini's wire format.


def text_part(text: str, *, thought: bool = False) -> dict[str, Any]:
    return {"text": text, "thought": True} if thought else {"text": text}


def call_part(
    name: str,
    args: dict[str, Any],
    *,
    call_id: str | None = None,
    signature: str | None = None,
) -> dict[str, Any]:
    """A functionCall part; `signature` is base64, as Gemini sends thoughtSignature."""
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    part: dict[str, Any] = {"functionCall": call}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def usage(
    *,
    prompt: int = 0,
    cached: int | None = None,
    tool_use_prompt: int | None = None,
    candidates: int | None = None,
    thoughts: int | None = None,
) -> dict[str, int]:
    """usageMetadata; like Gemini, counts left as None are omitted, not sent as 0."""
    counts = {
        "promptTokenCount": prompt,
        "cachedContentTokenCount": cached,
        "toolUsePromptTokenCount": tool_use_prompt,
        "candidatesTokenCount": candidates,
        "thoughtsTokenCount": thoughts,
    }
    present = {name: count for name, count in counts.items() if count is not None}
    present["totalTokenCount"] = sum(count for name, count in present.items() if name != "cachedContentTokenCount")
    return present


def content_reply(
    parts: list[dict[str, Any]],
    *,
    finish_reason: str = "STOP",
    usage_metadata: dict[str, int] | None = None,
    model_version: str | None = "gemini-fake-001",
    continuation_token: str | None = None,
) -> Reply:
    """A 200 answer with one candidate made of `parts`."""
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": parts},
        "finishReason": finish_reason,
        "index": 0,
    }
    if continuation_token is not None:
        candidate["continuationToken"] = continuation_token
    body: dict[str, Any] = {"candidates": [candidate], "responseId": "fake-response"}
    if usage_metadata is not None:
        body["usageMetadata"] = usage_metadata
    if model_version is not None:
        body["modelVersion"] = model_version
    return Reply(body=body)


def text_reply(text: str, **kwargs: Any) -> Reply:
    return content_reply([text_part(text)], **kwargs)


def blocked_reply(reason: str = "SAFETY") -> Reply:
    """The prompt was blocked: no candidates, only promptFeedback."""
    return Reply(
        body={
            "promptFeedback": {"blockReason": reason},
            "usageMetadata": usage(prompt=12),
            "modelVersion": "gemini-fake-001",
        }
    )


def error_reply(status: int, message: str = "") -> Reply:
    """An error in Google's JSON error format."""
    status_names = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }
    error = {
        "code": status,
        "message": message or HTTPStatus(status).phrase,
        "status": status_names.get(status, "UNKNOWN"),
    }
    return Reply(status=status, body={"error": error})


HANG = Reply(hang=True)
