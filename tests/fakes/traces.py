"""The process's spans, kept in memory for the test that reads them (the SDK's in-memory
exporter behind a gate): the provider outlives the test, since OpenTelemetry allows one per
process, and the tests after it must not fill it (docs/operations.md#traces)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import cast

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class _Gated:
    """Keeps spans only while a test that reads them runs."""

    def __init__(self) -> None:
        self.kept = InMemorySpanExporter()
        self.on = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.kept.export(spans) if self.on else SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.kept.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


_EXPORTER = _Gated()


def recording() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider, installed once, recording until the generator ends."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(cast(SpanExporter, _EXPORTER)))  # an exporter in all but name
        trace.set_tracer_provider(provider)
    _EXPORTER.kept.clear()
    _EXPORTER.on = True
    try:
        yield _EXPORTER.kept
    finally:
        _EXPORTER.on = False
        _EXPORTER.kept.clear()
