"""One trace per turn: spans for routing, each agent run, each model call and each tool
call (and, on a call, the voice pipeline's stages around them), exported by OTLP when an
operator asks for it (docs/operations.md#traces).

Domains open spans through `span()`, on OpenTelemetry's API (already a dependency of
FastAPI's): with no exporter configured, every span is OpenTelemetry's non-recording one and
costs a context switch, nothing is kept and nothing leaves the process. `export_traces`
(called by the composition root when TRACES_OTLP_ENDPOINT is set) installs the SDK's
provider with a batching OTLP/HTTP exporter; the SDK is imported only then. Attributes
name things by id (run, agent, model, tool), never what anyone said.

A call's voice turn is not one block of code: it is opened when the person's turn ends,
its children (the speech, recognition, the first audio) are known only after they
happened, and it ends when its reply's audio is out, in other tasks of the pipeline.
`begin` opens such a span (`OpenSpan`) that is carried to those places and ended there.

Work handed to another process (a note said on a call another instance holds, through a
NOTIFY) carries the W3C `traceparent` of the span that handed it over (`carried`), and the
receiving process continues that trace from it (`continuing`), so the note's trace holds the
`say` made there too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from opentelemetry import context, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

Attribute = str | int | float | bool | None

# Resolved at each span: whatever provider the process installed by then (none: no-op).
_tracer = trace.get_tracer("avagenc")
# W3C Trace Context (`00-<32 hex>-<16 hex>-<2 hex>`, 55 characters in version 00); a longer
# value from another process is refused rather than parsed, so a payload bounds its cost.
_W3C = TraceContextTextMapPropagator()
_TRACEPARENT = "traceparent"
TRACEPARENT_CHARS_MAX = 64


def here() -> Context:
    """Where the caller is in its trace, for work that runs later elsewhere (`span(within=)`)."""
    return context.get_current()


@contextlib.contextmanager
def span(name: str, *, within: Context | None = None, root: bool = False, **attributes: Attribute) -> Iterator[Span]:
    """A child of the current span, or of `within` (a turn's charges are written by another
    task, after the run that made them), or a new trace's root (when nothing is current, or
    `root`), for the block; an exception escaping it marks the span as failed, with the
    exception's type only."""
    given = _attributes(attributes)
    parent = Context() if root else within
    with _tracer.start_as_current_span(name, context=parent, attributes=given, record_exception=False) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def _attributes(given: dict[str, Attribute]) -> dict[str, str | int | float | bool]:
    return {f"avagenc.{key}": value for key, value in given.items() if value is not None}


class OpenSpan:
    """A span opened now (or at `start_ns`, a moment already past) and ended later,
    wherever its work ends; work done `inside()` it is its children."""

    __slots__ = ("_span", "context")

    def __init__(self, span: Span, context: Context) -> None:
        self._span = span
        self.context = context

    @property
    def recording(self) -> bool:
        """Whether anything is kept: False with no exporter, or once ended."""
        return self._span.is_recording()

    def set(self, **attributes: Attribute) -> None:
        for key, value in _attributes(attributes).items():
            self._span.set_attribute(key, value)

    def record(self, name: str, *, start_ns: int, end_ns: int, **attributes: Attribute) -> None:
        """A child that is already over (from `start_ns` to `end_ns`, `time.time_ns()` clock)."""
        if not self._span.is_recording():
            return  # ended, or nothing is kept: no child is made
        child = _tracer.start_span(name, context=self.context, start_time=start_ns, attributes=_attributes(attributes))
        child.end(end_time=max(end_ns, start_ns))

    def end(self, *, end_ns: int | None = None, **attributes: Attribute) -> None:
        """End it (once: later calls do nothing), setting `attributes` first."""
        if not self._span.is_recording():
            return
        self.set(**attributes)
        self._span.end(end_time=end_ns)

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        """Make this span the current one for the block (and the tasks it starts)."""
        token = context.attach(self.context)
        try:
            yield
        finally:
            context.detach(token)


def begin(
    name: str, *, start_ns: int | None = None, within: Context | None = None, **attributes: Attribute
) -> OpenSpan:
    """A new trace's root (or a child of `within`), open until its `end()`; it started at
    `start_ns` when given."""
    parent = within if within is not None else Context()  # a root whatever is current where it is opened
    opened = _tracer.start_span(name, context=parent, start_time=start_ns, attributes=_attributes(attributes))
    return OpenSpan(opened, set_span_in_context(opened, parent))


def carried() -> str | None:
    """The current span as a W3C `traceparent`, for work another process continues
    (`continuing`); None when nothing is recorded here (no exporter: nothing to continue)."""
    if not trace.get_current_span().is_recording():
        return None
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)
    value = carrier.get(_TRACEPARENT)
    return value if value is not None and len(value) <= TRACEPARENT_CHARS_MAX else None


@contextlib.contextmanager
def continuing(traceparent: object) -> Iterator[None]:
    """For the block (and the tasks it starts), the trace another process handed over with
    `carried` is the current one, so spans opened in it are that trace's; anything that is
    not a well-formed traceparent of a bounded size changes nothing."""
    if not isinstance(traceparent, str) or len(traceparent) > TRACEPARENT_CHARS_MAX:
        yield
        return
    extracted = _W3C.extract({_TRACEPARENT: traceparent})
    if not trace.get_current_span(extracted).get_span_context().is_valid:
        yield
        return
    token = context.attach(extracted)
    try:
        yield
    finally:
        context.detach(token)


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
