"""A fake Gemini API on 127.0.0.1 that answers at a latency model's pace.

It serves `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`
in Gemini's wire format (camelCase JSON, server-sent events), over HTTP/1.1 connections it
keeps open, as Google's front end does. What to answer is decided by a `Responder` from
the request translated back into our `ModelRequest`: the offline model's decisions for the
bench (`offline_responder`: Ava hands on, Zee calls the tool), a script for a contract test.

Pacing follows `bench.cloudsim.latency`: nothing for the first-token time, then text at
the model's token rate in small events, a function call whole in one event (right after
any text before it), every event carrying the usage so far, as Gemini's stream does. A
client closing a stream is heard as it happens (the generation behind it stops then, not
at the next event), and the stream is recorded with the usage of the last event sent before
it (`Served`): what the simulated vendor bills, and the last figure the client was given
(docs/money.md#a-stream-cut-short).

    async with SimulatedGemini(offline_responder()) as gemini:
        model = GeminiModel(api_key="sim", base_url=gemini.base_url)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from agents import FunctionCall, ModelRequest, OfflineModel, ToolSpec
from agents.model import Content, FunctionResult, Role
from bench.cloudsim.latency import INSTANT, ModelLatency

_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")
_BODY_MAX = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Answer:
    """What the simulated model says to one request.

    `status` other than 200 refuses the request before anything is generated; `fail_after`
    ends a stream with an error event after that many characters of text."""

    text: str = ""
    calls: tuple[FunctionCall, ...] = ()
    prompt_tokens: int | None = None  # None: estimated from the request's size
    status: int = 200
    message: str = ""
    fail_after: int | None = None
    first_token_s: float | None = None  # None: drawn from the latency model


Responder = Callable[[ModelRequest], Awaitable[Answer]]


@dataclass(slots=True)
class Served:
    """One request as the simulator served it: what the vendor would bill."""

    model: str
    streamed: bool
    prompt_tokens: int
    output_tokens: int = 0  # billed: the usage on the last event sent (all of them unless `dropped`)
    dropped: bool = False  # the client went away before the answer ended
    failed: bool = False  # refused, or an error event ended the stream
    request: ModelRequest | None = None
    structured: bool = False  # asked for structured output (the knowledge extractor), not a turn
    # Each simulated wait as (start, end) on the monotonic clock: the floor a bench sums.
    waits: list[tuple[float, float]] = field(default_factory=list)

    async def wait(self, seconds: float) -> None:
        start = time.monotonic()
        await asyncio.sleep(seconds)
        self.waits.append((start, start + seconds))

    async def generate(self, seconds: float, reader: asyncio.StreamReader) -> bool:
        """Spend `seconds` generating a streamed answer's next event; False, at once, when
        the client has closed the connection meanwhile. Google's front end hears a closed
        stream as it happens, not at its next write, and stops the generation behind it
        (docs/money.md#a-stream-cut-short): nothing after that is sent or billed."""
        if reader.at_eof():
            return False
        # The client sends nothing while its answer streams (HTTP/1.1, no pipelining), so
        # this read ends only when the client leaves; cancelling it loses no data.
        left = asyncio.ensure_future(reader.read(1))
        start = time.monotonic()
        try:
            done, _ = await asyncio.wait({left}, timeout=seconds)
        finally:
            left.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await left
        # The floor a bench sums is the simulated time, not the loop's lateness in waking.
        self.waits.append((start, time.monotonic() if done else start + seconds))
        return not done


@dataclass
class SimulatedGemini:
    responder: Responder
    latency: ModelLatency = INSTANT
    seed: int = 28
    served: list[Served] = field(default_factory=list)
    # What answers the knowledge extractor's structured requests; None: no facts, at once.
    extractor: Responder | None = None

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.connections = 0

    @property
    def base_url(self) -> str:
        assert self._server is not None, "SimulatedGemini is not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, host="127.0.0.1", port=0)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            # Closing the connections ends their handlers (a kept-alive one waits to read).
            for writer in list(self._writers):
                writer.transport.abort()
            await asyncio.gather(*self._handlers, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        self._writers.add(writer)
        self.connections += 1
        try:
            while (head := await _read_head(reader)) is not None:  # keep-alive: many requests
                method, path, headers = head
                length = int(headers.get("content-length", "0"))
                if length > _BODY_MAX:
                    return
                raw = await reader.readexactly(length) if length else b""
                match = _PATH.match(path)
                if method != "POST" or match is None:
                    await _write_json(writer, 404, _error_body(404, f"no route for {method} {path}"))
                    continue
                if not await self._answer(reader, writer, match["model"], match["method"], json.loads(raw or b"{}")):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._handlers.discard(handler)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _answer(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, model: str, method: str, body: Any
    ) -> bool:
        """Serve one request; False when the connection is done (the client went away)."""
        request = request_from_wire(model, body)
        structured = "responseJsonSchema" in (body.get("generationConfig") or {})
        if structured and self.extractor is not None:
            answer = await self.extractor(request)
        elif structured:
            # The knowledge extractor's structured output: no facts, at once (the bench is
            # about turns; the learning worker runs beside them).
            answer = Answer(text='{"facts": []}', first_token_s=0.0)
        else:
            answer = await self.responder(request)
        prompt = answer.prompt_tokens if answer.prompt_tokens is not None else _estimate_prompt(body)
        served = Served(
            model=model,
            streamed=method == "streamGenerateContent",
            prompt_tokens=prompt,
            request=request,
            structured=structured,
        )
        self.served.append(served)
        first_s = answer.first_token_s if answer.first_token_s is not None else self.latency.first_token_s(self._rng)
        if answer.status != 200:
            served.failed = True
            await served.wait(first_s)
            await _write_json(writer, answer.status, _error_body(answer.status, answer.message))
            return True
        events = _events(answer, self.latency.tokens_per_event)
        if not served.streamed:
            output = sum(tokens for _, tokens in events)
            await served.wait(first_s + output / self.latency.tokens_per_s)
            served.output_tokens = output
            parts = [part for event, _ in events for part in event]
            await _write_json(writer, 200, _response(model, parts, prompt, output, finished=True))
            return True
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: keep-alive\r\n\r\n"
        )
        sent = 0
        text_sent = 0
        for index, (parts, tokens) in enumerate(events):
            pace_s = first_s if not index else tokens / self.latency.tokens_per_s if tokens else 0.0
            if not await served.generate(pace_s, reader):
                break  # the client left: nothing more is made, sent or billed
            if answer.fail_after is not None and text_sent >= answer.fail_after:
                served.failed = True
                await _write_chunk(writer, _sse(_error_body(500, "simulated failure mid-stream")))
                await _write_chunk(writer, b"")
                return False  # an errored stream's connection is not reused
            sent += tokens
            text_sent += sum(len(p.get("text", "")) for p in parts)
            last = index == len(events) - 1
            try:
                await _write_chunk(writer, _sse(_response(model, parts, prompt, sent, finished=last)))
            except ConnectionError:
                break  # it never reached the client
            served.output_tokens = sent
        else:
            await _write_chunk(writer, b"")
            return True
        served.dropped = True
        return False


def offline_responder() -> Responder:
    """Answers as the offline model decides (docs/agents.md#the-offline-model): the bench's
    Gemini says what the product's own twin would, only at Gemini's pace."""
    model = OfflineModel()

    async def respond(request: ModelRequest) -> Answer:
        response = await model.generate(request=request)
        return Answer(text=response.text, calls=response.calls, prompt_tokens=response.usage.prompt_tokens)

    return respond


def scripted_responder(answers: list[Answer]) -> Responder:
    """Answers with `answers` in order (a contract test's script)."""
    queue = list(answers)

    async def respond(_request: ModelRequest) -> Answer:
        assert queue, "the simulated Gemini ran out of scripted answers"
        return queue.pop(0)

    return respond


def request_from_wire(model: str, body: Any) -> ModelRequest:
    """Gemini's request JSON back into our `ModelRequest` (what the adapter translated)."""
    system = " ".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", []))
    contents: list[Content] = []
    for content in body.get("contents", []):
        texts: list[str] = []
        calls: list[FunctionCall] = []
        results: list[FunctionResult] = []
        for part in content.get("parts", []):
            if "functionCall" in part:
                call = part["functionCall"]
                calls.append(FunctionCall(call.get("id", ""), call["name"], dict(call.get("args") or {})))
            elif "functionResponse" in part:
                result = part["functionResponse"]
                results.append(FunctionResult(result.get("id", ""), result["name"], dict(result.get("response") or {})))
            elif "text" in part:
                texts.append(part["text"])
        role: Role = "model" if content.get("role") == "model" else "user"
        contents.append(Content(role=role, text="".join(texts), calls=tuple(calls), results=tuple(results)))
    tools = tuple(
        ToolSpec(d["name"], d.get("description", ""), d.get("parametersJsonSchema") or d.get("parameters") or {})
        for tool in body.get("tools", [])
        for d in tool.get("functionDeclarations", [])
    )
    return ModelRequest(model=model, system=system, contents=tuple(contents), tools=tools)


def _tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def _estimate_prompt(body: Any) -> int:
    return _tokens(json.dumps(body))


def _events(answer: Answer, per_event: int) -> list[tuple[list[dict[str, Any]], int]]:
    """The answer as streamed events: (parts, output tokens they carry)."""
    events: list[tuple[list[dict[str, Any]], int]] = []
    step = per_event * 4  # characters per event, at ~4 characters a token
    text = answer.text
    for start in range(0, len(text), step):
        piece = text[start : start + step]
        events.append(([{"text": piece}], _tokens(piece)))
    if answer.calls:
        parts = [
            {"functionCall": {"name": c.name, "args": c.args, **({"id": c.id} if c.id else {})}} for c in answer.calls
        ]
        events.append((parts, sum(_tokens(c.name + json.dumps(c.args)) for c in answer.calls)))
    if not events:
        events.append(([{"text": ""}], 0))
    return events


def _response(model: str, parts: list[dict[str, Any]], prompt: int, output: int, *, finished: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finished:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
        },
        # The model asked for, so the ledger prices it as that model.
        "modelVersion": model,
        "responseId": "sim",
    }


def _error_body(status: int, message: str) -> dict[str, Any]:
    names = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
    return {"error": {"code": status, "message": message or "error", "status": names.get(status, "UNKNOWN")}}


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\r\n\r\n"


async def _write_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    await writer.drain()


async def _write_json(writer: asyncio.StreamWriter, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    reason = {200: "OK", 404: "Not Found"}.get(status, "Error")
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json; charset=UTF-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n".encode()
        + data
    )
    await writer.drain()


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str]] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    request_line, *lines = head.decode("latin-1").split("\r\n")
    method, target, _version = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method, target.split("?", 1)[0], headers
