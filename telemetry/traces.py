"""One trace per turn: spans for routing, each agent run, each model call and each tool
call, exported by OTLP when an operator asks for it (docs/operations.md#traces).

Domains open spans through `span()`, on OpenTelemetry's API (already a dependency of
FastAPI's): with no exporter configured, every span is OpenTelemetry's non-recording one and
costs a context switch, nothing is kept and nothing leaves the process. `export_traces`
(called by the composition root when TRACES_OTLP_ENDPOINT is set) installs the SDK's
provider with a batching OTLP/HTTP exporter; the SDK is imported only then. Attributes
name things by id (run, agent, model, tool), never what anyone said.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from opentelemetry import context, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode

Attribute = str | int | float | bool | None

# Resolved at each span: whatever provider the process installed by then (none: no-op).
_tracer = trace.get_tracer("avagenc")


def here() -> Context:
    """Where the caller is in its trace, for work that runs later elsewhere (`span(within=)`)."""
    return context.get_current()


@contextlib.contextmanager
def span(name: str, *, within: Context | None = None, **attributes: Attribute) -> Iterator[Span]:
    """A child of the current span, or of `within` (a turn's charges are written by another
    task, after the run that made them), or a new trace's root, for the block; an exception
    escaping it marks the span as failed, with the exception's type only."""
    given = {f"avagenc.{key}": value for key, value in attributes.items() if value is not None}
    with _tracer.start_as_current_span(name, context=within, attributes=given, record_exception=False) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def export_traces(*, endpoint: str, service: str = "avagenc") -> Callable[[], None]:
    """Send every span to an OTLP/HTTP collector at `endpoint` (…/v1/traces); returns the
    provider's shutdown, which flushes what is still batched."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    trace.set_tracer_provider(provider)

    def shutdown() -> None:
        provider.shutdown()

    return shutdown
