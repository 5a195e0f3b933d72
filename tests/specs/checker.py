"""Holds the vendor fakes to our reading of each vendor's published reference.

The fakes in tests/fakes/vendors.py were written by the same hands as the live adapters,
so a misreading of a vendor's API would be encoded twice and every test would pass. Each
vendor's reference is restated here as data (tests/specs/spotify.py, google.py, tuya.py:
the endpoints the adapters call, their parameters with types and bounds, request bodies,
the response fields, and the documented error statuses and codes), and `Checker` holds
every request an adapter sends to a fake, and every answer the fake gives, to it. A fake
records what the spec does not allow in `violations`; the contract suites fail on any.

The shapes are a small schema language of our own: a Python type, `Fields` (an object
whose every key must be documented), `Many` (a list), `Maybe` (or null), `Choice` (one of
some values), `OneOf` and `Deprecated` (documented, but the reference says not to use it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import httpx


@dataclass(frozen=True)
class Maybe:
    shape: Shape


@dataclass(frozen=True)
class Choice:
    values: frozenset[Any]

    @classmethod
    def of(cls, *values: Any) -> Choice:
        return cls(frozenset(values))


@dataclass(frozen=True)
class Many:
    shape: Shape
    items_min: int = 0
    items_max: int | None = None


@dataclass(frozen=True)
class OneOf:
    shapes: tuple[Shape, ...]


@dataclass(frozen=True)
class Deprecated:
    """Documented, but marked deprecated: neither side may use it."""

    instead: str


@dataclass(frozen=True)
class Fields:
    fields: dict[str, Shape]
    required: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Number:
    low: int | None = None
    high: int | None = None


Shape = type | Fields | Many | Maybe | Choice | OneOf | Deprecated | Number


@dataclass(frozen=True)
class Param:
    """One query (or form) parameter. `kind` is how its text must read: int, bool or str."""

    kind: type = str
    low: int | None = None
    high: int | None = None
    choices: frozenset[str] | None = None
    listed: bool = False  # a comma-separated list, each item one of `choices`
    required: bool = False
    reads: Callable[[str], str | None] | None = None  # a further check: None, or what is wrong
    deprecated: str | None = None


@dataclass(frozen=True)
class Endpoint:
    name: str  # the vendor's own name for the operation
    method: str
    host: str
    path: str  # a template: "/v1/playlists/{playlist_id}/items"
    query: Mapping[str, Param] = field(default_factory=dict)
    body: Shape | None = None  # a JSON body
    form: Mapping[str, Param] | None = None  # an x-www-form-urlencoded body
    headers: frozenset[str] = frozenset()  # request headers the vendor requires
    answers: Mapping[int, Shape | None] = field(default_factory=dict)  # success status -> body (None: empty)
    scopes: tuple[str, ...] = ()
    deprecated: str | None = None  # what the reference says to call instead

    def matches(self, request: httpx.Request) -> bool:
        if request.method != self.method or request.url.host != self.host:
            return False
        pattern = re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(self.path))
        return re.fullmatch(pattern, request.url.path) is not None


@dataclass(frozen=True)
class Spec:
    vendor: str
    sources: tuple[str, ...]  # the published references this restates
    read_on: str  # when they were read
    endpoints: tuple[Endpoint, ...]
    error_statuses: frozenset[int]  # documented error statuses
    error_body: Shape | None  # the documented error body (None: any)
    error_headers: Mapping[int, frozenset[str]] = field(default_factory=dict)  # e.g. 429 -> Retry-After


def _shape(value: Any, shape: Shape, where: str) -> list[str]:
    if isinstance(shape, Deprecated):
        return [f"{where}: deprecated, use {shape.instead}"]
    if isinstance(shape, Maybe):
        return [] if value is None else _shape(value, shape.shape, where)
    if isinstance(shape, Choice):
        return [] if value in shape.values else [f"{where}: {value!r} is not one of {sorted(map(str, shape.values))}"]
    if isinstance(shape, OneOf):
        tried = [_shape(value, s, where) for s in shape.shapes]
        return [] if any(not t for t in tried) else min(tried, key=len)
    if isinstance(shape, Number):
        if isinstance(value, bool) or not isinstance(value, int):
            return [f"{where}: {value!r} is not an integer"]
        if (shape.low is not None and value < shape.low) or (shape.high is not None and value > shape.high):
            return [f"{where}: {value} is outside {shape.low}..{shape.high}"]
        return []
    if isinstance(shape, Many):
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        wrong = [] if len(value) >= shape.items_min else [f"{where}: fewer than {shape.items_min} items"]
        if shape.items_max is not None and len(value) > shape.items_max:
            wrong.append(f"{where}: more than {shape.items_max} items")
        return wrong + [w for i, v in enumerate(value) for w in _shape(v, shape.shape, f"{where}[{i}]")]
    if isinstance(shape, Fields):
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        wrong = [f"{where}.{k}: not in the reference" for k in value if k not in shape.fields]
        wrong += [f"{where}.{k}: required but missing" for k in sorted(shape.required) if k not in value]
        return wrong + [
            w for k, v in value.items() if k in shape.fields for w in _shape(v, shape.fields[k], f"{where}.{k}")
        ]
    if shape is object:
        return []
    if shape is int and isinstance(value, bool):
        return [f"{where}: expected int, got bool"]
    return [] if isinstance(value, shape) else [f"{where}: expected {shape.__name__}, got {type(value).__name__}"]


def _param(name: str, text: str, param: Param) -> list[str]:
    if param.deprecated:
        return [f"parameter {name}: deprecated, use {param.deprecated}"]
    if param.kind is int:
        if not re.fullmatch(r"-?\d+", text):
            return [f"parameter {name}: {text!r} is not an integer"]
        number = int(text)
        if (param.low is not None and number < param.low) or (param.high is not None and number > param.high):
            return [f"parameter {name}: {number} is outside {param.low}..{param.high}"]
    elif param.kind is bool and text not in ("true", "false"):
        return [f"parameter {name}: {text!r} is not true or false"]
    if param.choices is not None:
        items = text.split(",") if param.listed else [text]
        if bad := [i for i in items if i not in param.choices]:
            return [f"parameter {name}: {bad} not among {sorted(param.choices)}"]
    if param.reads is not None and (wrong := param.reads(text)):
        return [f"parameter {name}: {wrong}"]
    return []


def _params(given: list[tuple[str, str]], allowed: Mapping[str, Param]) -> list[str]:
    wrong = [f"parameter {k}: not in the reference" for k, _ in given if k not in allowed]
    names = {k for k, _ in given}
    wrong += [f"parameter {k}: required but missing" for k, p in allowed.items() if p.required and k not in names]
    return wrong + [w for k, v in given if k in allowed for w in _param(k, v, allowed[k])]


class Checker:
    """Holds one vendor's fake to its spec: call `request` before answering and `response`
    after; what the spec does not allow collects in `violations`."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.violations: list[str] = []
        self.called: set[str] = set()  # endpoint names seen, to show the suite covers each

    def endpoint(self, request: httpx.Request) -> Endpoint | None:
        return next((e for e in self.spec.endpoints if e.matches(request)), None)

    def _note(self, request: httpx.Request, wrong: list[str]) -> list[str]:
        self.violations += [f"{self.spec.vendor} {request.method} {request.url.path}: {w}" for w in wrong]
        return wrong

    def request(self, request: httpx.Request) -> list[str]:
        endpoint = self.endpoint(request)
        if endpoint is None:
            return self._note(request, ["no such endpoint in the reference"])
        self.called.add(endpoint.name)
        wrong = [f"deprecated, use {endpoint.deprecated}"] if endpoint.deprecated else []
        wrong += _params(list(request.url.params.multi_items()), endpoint.query)
        wrong += [f"header {h}: required but missing" for h in sorted(endpoint.headers) if h not in request.headers]
        if endpoint.form is not None:
            wrong += _params(parse_qsl(request.content.decode()), endpoint.form)
        elif endpoint.body is not None:
            try:
                body = json.loads(request.content) if request.content else None
            except ValueError:
                body = "<not JSON>"
            wrong += _shape(body, endpoint.body, "body")
        elif request.content:
            wrong.append("a body where the reference takes none")
        return self._note(request, wrong)

    def response(self, request: httpx.Request, response: httpx.Response) -> list[str]:
        endpoint = self.endpoint(request)
        if endpoint is None:
            return []  # already noted on the request
        status, content = response.status_code, response.content
        if status in endpoint.answers:
            shape = endpoint.answers[status]
            if shape is None:
                return self._note(request, ["a body where the reference answers none"] if content else [])
            return self._note(request, _shape(json.loads(content) if content else None, shape, "answer"))
        if status not in self.spec.error_statuses:
            return self._note(request, [f"status {status} is not documented"])
        wrong = [
            f"status {status} without the {h} header"
            for h in sorted(self.spec.error_headers.get(status, frozenset()))
            if h not in response.headers
        ]
        if self.spec.error_body is not None:
            wrong += _shape(json.loads(content) if content else None, self.spec.error_body, "error")
        return self._note(request, wrong)

    def holding(self, answer: Callable[[httpx.Request], httpx.Response]) -> Callable[[httpx.Request], httpx.Response]:
        """`answer`, with its request and response checked."""

        def handler(request: httpx.Request) -> httpx.Response:
            self.request(request)
            response = answer(request)
            response.request = request
            self.response(request, response)
            return response

        return handler
