"""The server's numbers for a Prometheus scraper: runs, tokens, money, latencies, live
connections, the reminder queue and errors, in the text exposition format (version 0.0.4).

Written here rather than taken from `prometheus-client`: the product needs three kinds
(counter, gauge, histogram), labels with a bound on how many series each may grow, and one
text page; about a hundred lines, no new dependency in the image. Each metric is declared
once below (`metrics`), recorded where its event happens (a domain imports this module,
never the edge), and served by the edge at `/metrics` (docs/operations.md#metrics).

Label sets are bounded: a metric keeps at most `series_max` label combinations, and any
combination after that is counted under every label `other`, so a misbehaving caller (or a
model name per request) can never grow the page, or the scraper's database, without end.
Values are per process, since Prometheus scrapes each instance and sums across them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SERIES_MAX = 200
OTHER = "other"
_LABEL_VALUE_CHARS_MAX = 80

LabelValues = tuple[str, ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


class _Metric:
    kind = ""

    def __init__(self, name: str, help_: str, labels: Sequence[str] = (), *, series_max: int = SERIES_MAX) -> None:
        self.name = name
        self.help = help_
        self.labels = tuple(labels)
        self.series_max = series_max
        self._lock = threading.Lock()  # speech threads record too

    def _key(self, given: dict[str, object]) -> LabelValues:
        if set(given) != set(self.labels):
            raise ValueError(f"{self.name} takes labels {self.labels}, not {tuple(given)}")
        return tuple(str(given[name])[:_LABEL_VALUE_CHARS_MAX] for name in self.labels)

    def _bounded(self, key: LabelValues, known: dict[LabelValues, object]) -> LabelValues:
        """`key`, or every label `other` once this metric holds `series_max` combinations."""
        if key in known or len(known) < self.series_max - 1:
            return key
        return tuple(OTHER for _ in self.labels)

    def _labels_text(self, key: LabelValues, extra: tuple[tuple[str, str], ...] = ()) -> str:
        pairs = [*zip(self.labels, key, strict=True), *extra]
        if not pairs:
            return ""
        return "{" + ",".join(f'{name}="{_escape(value)}"' for name, value in pairs) + "}"

    def _header(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]

    def lines(self) -> list[str]:
        raise NotImplementedError


class Counter(_Metric):
    """A count that only goes up (runs, tokens, micro-rupiah, errors)."""

    kind = "counter"

    def __init__(self, name: str, help_: str, labels: Sequence[str] = (), *, series_max: int = SERIES_MAX) -> None:
        super().__init__(name, help_, labels, series_max=series_max)
        self._values: dict[LabelValues, float] = {}

    def inc(self, amount: float = 1, **labels: object) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        with self._lock:
            key = self._bounded(self._key(labels), self._values)  # type: ignore[arg-type]
            self._values[key] = self._values.get(key, 0) + amount

    def value(self, **labels: object) -> float:
        return self._values.get(self._key(labels), 0)

    def lines(self) -> list[str]:
        with self._lock:
            values = sorted(self._values.items())
        return [*self._header(), *(f"{self.name}{self._labels_text(k)} {_number(v)}" for k, v in values)]


class Gauge(_Metric):
    """A level that goes up and down (live calls, connections in use, the backlog)."""

    kind = "gauge"

    def __init__(self, name: str, help_: str, labels: Sequence[str] = (), *, series_max: int = SERIES_MAX) -> None:
        super().__init__(name, help_, labels, series_max=series_max)
        self._values: dict[LabelValues, float] = {}

    def set(self, value: float, **labels: object) -> None:
        with self._lock:
            key = self._bounded(self._key(labels), self._values)  # type: ignore[arg-type]
            self._values[key] = value

    def inc(self, amount: float = 1, **labels: object) -> None:
        with self._lock:
            key = self._bounded(self._key(labels), self._values)  # type: ignore[arg-type]
            self._values[key] = self._values.get(key, 0) + amount

    def dec(self, amount: float = 1, **labels: object) -> None:
        self.inc(-amount, **labels)

    @contextlib.contextmanager
    def tracking(self, **labels: object) -> Iterator[None]:
        """One more while the block runs."""
        self.inc(1, **labels)
        try:
            yield
        finally:
            self.dec(1, **labels)

    def value(self, **labels: object) -> float:
        return self._values.get(self._key(labels), 0)

    def lines(self) -> list[str]:
        with self._lock:
            values = sorted(self._values.items())
        return [*self._header(), *(f"{self.name}{self._labels_text(k)} {_number(v)}" for k, v in values)]


@dataclass
class _Buckets:
    counts: list[int]
    total: float = 0.0
    count: int = 0


class Histogram(_Metric):
    """How long (or how large) things were, in cumulative buckets, with their sum and count."""

    kind = "histogram"

    def __init__(
        self,
        name: str,
        help_: str,
        labels: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        series_max: int = SERIES_MAX,
    ) -> None:
        super().__init__(name, help_, labels, series_max=series_max)
        self.buckets = tuple(sorted(buckets))
        self._values: dict[LabelValues, _Buckets] = {}

    def observe(self, value: float, **labels: object) -> None:
        with self._lock:
            key = self._bounded(self._key(labels), self._values)  # type: ignore[arg-type]
            series = self._values.get(key)
            if series is None:
                series = self._values[key] = _Buckets(counts=[0] * len(self.buckets))
            for index, bound in enumerate(self.buckets):
                if value <= bound:
                    series.counts[index] += 1
            series.total += value
            series.count += 1

    def count(self, **labels: object) -> int:
        series = self._values.get(self._key(labels))
        return 0 if series is None else series.count

    def lines(self) -> list[str]:
        out = self._header()
        with self._lock:
            values = sorted((k, _Buckets(list(v.counts), v.total, v.count)) for k, v in self._values.items())
        for key, series in values:
            for bound, counted in zip(self.buckets, series.counts, strict=True):
                out.append(f"{self.name}_bucket{self._labels_text(key, (('le', _number(bound)),))} {counted}")
            out.append(f"{self.name}_bucket{self._labels_text(key, (('le', '+Inf'),))} {series.count}")
            out.append(f"{self.name}_sum{self._labels_text(key)} {_number(series.total)}")
            out.append(f"{self.name}_count{self._labels_text(key)} {series.count}")
        return out


Refresh = Callable[[], Awaitable[None]]
M = TypeVar("M", bound=_Metric)


@dataclass
class Registry:
    """Every metric of the process, and the refreshers that read levels just before a scrape
    (pool use, live calls, the reminder backlog) from what the composition root built."""

    members: list[_Metric] = field(default_factory=list)
    _refreshers: dict[int, Refresh] = field(default_factory=dict)
    _next: int = 0

    def add(self, metric: M) -> M:
        if any(m.name == metric.name for m in self.members):
            raise ValueError(f"metric {metric.name} is declared twice")
        self.members.append(metric)
        return metric

    def on_scrape(self, refresh: Refresh) -> Callable[[], None]:
        """Run `refresh` before each scrape; call the result to stop (a server closing)."""
        self._next += 1
        key = self._next
        self._refreshers[key] = refresh

        def remove() -> None:
            self._refreshers.pop(key, None)

        return remove

    async def exposition(self, *, refresh_timeout_s: float = 2.0) -> str:
        """The whole page. A refresher that fails or is slow leaves its levels as they were."""
        for refresh in list(self._refreshers.values()):
            try:
                async with asyncio.timeout(refresh_timeout_s):
                    await refresh()
            except Exception as exc:  # a scrape must answer even when the database does not
                log.warning("a metrics refresh failed: %s", type(exc).__name__)
        lines: list[str] = []
        for metric in self.members:
            lines.extend(metric.lines())
        return "\n".join(lines) + "\n"


# Seconds, from a fast model call or a spoken reply to a slow one.
_LATENCY_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)
_LATENESS_BUCKETS_S = (0.1, 0.5, 1.0, 2.0, 5.0, 15.0, 60.0, 300.0, 3600.0)


class Metrics:
    """The product's metrics, one instance per process (`metrics`)."""

    def __init__(self) -> None:
        self.registry = registry = Registry()
        self.runs = registry.add(
            Counter(
                "avagenc_runs_total", "Agent runs finished by agent, trigger and status", ("agent", "trigger", "status")
            )
        )
        self.model_tokens = registry.add(
            Counter("avagenc_model_tokens_total", "Tokens of model calls, by model and kind", ("model", "kind"))
        )
        self.model_cost = registry.add(
            Counter("avagenc_model_cost_micros_total", "What model calls cost, in micro-rupiah, by model", ("model",))
        )
        self.speculations = registry.add(
            Counter(
                "avagenc_speculations_total",
                "A call's first model calls begun before the turn ended, by outcome (adopted; dropped: "
                "the words changed or the person went on; differed: the turn's request was not the same)",
                ("outcome",),
            )
        )
        self.speculations_differed = registry.add(
            Counter(
                "avagenc_speculations_differed_total",
                "Speculative first calls whose turn's request was not the same, by the first part "
                "that differed (model, instruction, history, words, tools)",
                ("part",),
            )
        )
        self.model_call_seconds = registry.add(
            Histogram(
                "avagenc_model_call_seconds",
                "How long one model call took, by model",
                ("model",),
                buckets=_LATENCY_BUCKETS_S,
            )
        )
        self.voice_response_seconds = registry.add(
            Histogram(
                "avagenc_voice_response_seconds",
                "On a call, from the end of the person's speech (the VAD's stop) to Ava's first audio",
                ("channel",),
                buckets=_LATENCY_BUCKETS_S,
            )
        )
        self.voice_seconds_billed = registry.add(
            Counter(
                "avagenc_voice_seconds_billed_total",
                "Seconds of a call's speech heard (speech-to-text) and charged to wallets, by channel",
                ("channel",),
            )
        )
        self.voice_characters_billed = registry.add(
            Counter(
                "avagenc_voice_characters_billed_total",
                "Characters Ava said on calls (text-to-speech) and charged to wallets, by channel",
                ("channel",),
            )
        )
        self.voice_cost = registry.add(
            Counter(
                "avagenc_voice_cost_micros_total",
                "What calls' speech cost, in micro-rupiah, by channel",
                ("channel",),
            )
        )
        self.calls_active = registry.add(Gauge("avagenc_calls_active", "Live calls in this process"))
        self.wake_lateness_seconds = registry.add(
            Histogram(
                "avagenc_wake_lateness_seconds",
                "How late a wake note was delivered after its due time",
                buckets=_LATENESS_BUCKETS_S,
            )
        )
        self.wake_backlog = registry.add(
            Gauge("avagenc_wake_backlog", "Wake notes due and not yet delivered (all instances)")
        )
        self.wake_lag_seconds = registry.add(
            Gauge("avagenc_wake_lag_seconds", "How long the oldest due, undelivered wake note has waited")
        )
        self.sse_clients = registry.add(Gauge("avagenc_sse_clients", "Live-event streams open on this process"))
        self.db_connections = registry.add(
            Gauge("avagenc_db_connections", "Database connections by pool and state", ("pool", "state"))
        )
        self.http_requests = registry.add(
            Counter(
                "avagenc_http_requests_total",
                "HTTP requests answered, by route template, method and status",
                ("route", "method", "status"),
            )
        )
        self.errors = registry.add(
            Counter("avagenc_errors_total", "Errors answered or logged, by kind (a problem type)", ("kind",))
        )


metrics = Metrics()
