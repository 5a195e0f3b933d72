"""A real OTLP/HTTP trace receiver for end-to-end tests: what an OpenTelemetry Collector's
`otlphttp` receiver does at `/v1/traces`, on 127.0.0.1, keeping every span it is sent.

It takes what a collector takes: a POST of an `ExportTraceServiceRequest` in protobuf
(`application/x-protobuf`, gzipped or not), answered 200 with an empty
`ExportTraceServiceResponse`; any other path is 404 and any other body type 415, so a test
sees the product speak the protocol rather than something near it.
"""

from __future__ import annotations

import contextlib
import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

_PROTOBUF = "application/x-protobuf"
_BODY_MAX = 16 * 1024 * 1024


@dataclass(frozen=True, eq=False)  # each span is itself (its attributes are a dict)
class ReceivedSpan:
    service: str
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, object]
    failed: bool


def _value(value: AnyValue) -> object:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind in {"string_value", "bool_value", "int_value", "double_value"} else None


def decode(body: bytes) -> list[ReceivedSpan]:
    """Every span in one export request."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        service=str(resource.get("service.name")),
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex() or None,
                        name=span.name,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        failed=span.status.code == span.status.STATUS_CODE_ERROR,
                    )
                )
    return spans


class OtlpReceiver:
    """The spans received so far (thread-safe: the server answers on its own threads)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.requests = 0
        self._spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()

    def add(self, spans: list[ReceivedSpan]) -> None:
        with self._lock:
            self.requests += 1
            self._spans.extend(spans)

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)


@contextlib.contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """Serve OTLP/HTTP on a free loopback port for the block; yields its `/v1/traces` URL's receiver."""
    received: list[OtlpReceiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(min(length, _BODY_MAX))
            if self.path != "/v1/traces":
                self._answer(404, b"", "text/plain")
                return
            if self.headers.get("Content-Type") != _PROTOBUF:
                self._answer(415, b"", "text/plain")
                return
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            received[0].add(decode(body))
            self._answer(200, ExportTraceServiceResponse().SerializeToString(), _PROTOBUF)

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the test's output stays the test's

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    received.append(OtlpReceiver(f"http://127.0.0.1:{server.server_address[1]}/v1/traces"))
    thread = threading.Thread(target=server.serve_forever, name="otlp-receiver", daemon=True)
    thread.start()
    try:
        yield received[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
