"""A trace handed to another process in a NOTIFY (telemetry/traces.py `carried`,
`continuing`): only a recorded span is carried, and the receiving side takes nothing but a
well-formed traceparent of a bounded size (docs/operations.md#traces)."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from telemetry import carried, continuing, span
from telemetry.traces import TRACEPARENT_CHARS_MAX


def _current_trace_id() -> int:
    return trace.get_current_span().get_span_context().trace_id


def test_nothing_is_carried_while_nothing_is_recorded() -> None:
    # OpenTelemetry's non-recording span, what every span is with no exporter (whatever
    # provider an earlier test of the session installed).
    with trace.use_span(trace.INVALID_SPAN):
        assert carried() is None


def test_a_carried_trace_goes_on_where_it_is_continued(spans: InMemorySpanExporter) -> None:
    with span("say elsewhere") as asked:
        traceparent = carried()
    assert traceparent is not None and len(traceparent) == 55 <= TRACEPARENT_CHARS_MAX
    with continuing(traceparent), span("say"):
        assert _current_trace_id() == asked.get_span_context().trace_id
    (said,) = [s for s in spans.get_finished_spans() if s.name == "say"]
    assert said.parent is not None and said.parent.span_id == asked.get_span_context().span_id


def test_a_malformed_or_oversized_traceparent_changes_nothing() -> None:
    well_formed = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    for bad in (None, 42, "", "not a traceparent", "00-" + "0" * 32 + "-" + "b" * 16 + "-01", well_formed + " " * 20):
        with continuing(bad):
            assert not trace.get_current_span().get_span_context().is_valid, bad
    with continuing(well_formed):
        assert _current_trace_id() == int("a" * 32, 16)
