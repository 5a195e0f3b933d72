"""What an operator sees of a running server: log lines, metrics and the request a line
belongs to.

It sits below every domain (they all may use it; it imports none of them), so a domain
records a run, a call or a delivery where it happens, without knowing whether anyone
scrapes `/metrics` or reads the log as JSON. The composition root chooses the log format
and the edge serves the metrics (docs/operations.md).
"""

from telemetry.logs import (
    REQUEST_ID_HEADER,
    JsonFormatter,
    LogFormat,
    PlainFormatter,
    configure_logging,
    current_request_id,
    fresh_request_id,
    request_id,
)
from telemetry.metrics import (
    Counter,
    Gauge,
    Histogram,
    Registry,
    metrics,
)
from telemetry.traces import OpenSpan, begin, carried, continuing, export_traces, here, span

__all__ = [
    "REQUEST_ID_HEADER",
    "Counter",
    "Gauge",
    "Histogram",
    "JsonFormatter",
    "LogFormat",
    "OpenSpan",
    "PlainFormatter",
    "Registry",
    "begin",
    "carried",
    "configure_logging",
    "continuing",
    "current_request_id",
    "export_traces",
    "fresh_request_id",
    "here",
    "metrics",
    "request_id",
    "span",
]
