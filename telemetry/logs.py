"""Log lines that keep what they were told: the fields passed as `extra=` and the request
they belong to.

A domain writes `log.info("run finished", extra={"run": ..., "agent": ..., "status": ...})`;
the standard formatter prints only the message and drops those fields. Here the same record
becomes either one JSON object per line (production: a log collector such as Cloud Logging
reads `severity`, `message` and every field) or a readable line for a terminal, with the
fields appended as `key=value`. Every line written while an HTTP request or a call door is
being served carries that request's id (`request_id`), which the edge also sends back in
the `X-Request-Id` header, so a person's report of one request finds its lines.

Field values named like credentials or message text are never written (docs/operations.md#logs):
a line may say which run or call, never what was said or with which token.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import re
import secrets
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal

REQUEST_ID_HEADER = "x-request-id"

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

# A client's own id is kept only when it is short and plain (it is written into every line).
_CLIENT_ID = re.compile(r"[A-Za-z0-9._:-]{8,64}")

# The attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}

# Field names whose values must never reach a log line, whatever a caller passes.
_NEVER_WRITTEN = frozenset(
    {"token", "access_token", "ticket", "secret", "password", "api_key", "authorization", "text", "reply", "note_text"}
)
REDACTED = "REDACTED"


def fresh_request_id() -> str:
    return f"req_{secrets.token_hex(8)}"


def current_request_id() -> str | None:
    """The id of the request (or call) being served in this task, if any."""
    return _request_id.get()


@contextlib.contextmanager
def request_id(given: str | None = None) -> Iterator[str]:
    """Lines logged inside carry this request id: the client's own `X-Request-Id` when it
    is plain and short enough, a fresh one otherwise."""
    chosen = given if given is not None and _CLIENT_ID.fullmatch(given) else fresh_request_id()
    token = _request_id.set(chosen)
    try:
        yield chosen
    finally:
        _request_id.reset(token)


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The record's `extra=` fields (credentials and message text redacted) and its request id."""
    fields = {
        key: (REDACTED if key.lower() in _NEVER_WRITTEN else value)
        for key, value in vars(record).items()
        if key not in _STANDARD and not key.startswith("_")
    }
    rid = getattr(record, "request_id", None) or _request_id.get()
    if rid is not None:
        fields["request_id"] = rid
    return fields


def _plain_value(value: Any) -> str:
    """A string bare unless it has spaces or quotes (then JSON-quoted); anything else as compact JSON."""
    if not isinstance(value, str):
        return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    plain = value and not any(c.isspace() or c in '"=' for c in value)
    return value if plain else json.dumps(value, ensure_ascii=False)


class PlainFormatter(logging.Formatter):
    """`2026-01-01 10:00:00,123 INFO chat.turns run finished run=run_1 agent=zee status=succeeded`."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = fields_of(record)
        if not fields:
            return line
        head, sep, tail = line.partition("\n")  # a traceback stays below the fields
        pairs = " ".join(f"{key}={_plain_value(value)}" for key, value in fields.items())
        return f"{head} {pairs}{sep}{tail}"


# Python's level names as Cloud Logging's severities (the same words, but WARNING and CRITICAL).
_SEVERITY = {"WARNING": "WARNING", "CRITICAL": "CRITICAL", "ERROR": "ERROR", "INFO": "INFO", "DEBUG": "DEBUG"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: `time`, `severity`, `logger`, `message`, then every field."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "severity": _SEVERITY.get(record.levelname, "DEFAULT"),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in fields_of(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False, separators=(",", ":"))


LogFormat = Literal["plain", "json"]


def configure_logging(*, level: int, form: LogFormat, quiet: tuple[str, ...] = ()) -> None:
    """The process's one handler (standard error) in the chosen form; the `quiet` loggers
    (chatty libraries) only from WARNING up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if form == "json" else PlainFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level)
    for name in quiet:
        logging.getLogger(name).setLevel(logging.WARNING)
