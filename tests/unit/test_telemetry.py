"""Log lines keep their fields and request id, never a credential; metrics render as
Prometheus text with bounded label sets (telemetry/)."""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path

import pytest

from telemetry import Counter, Gauge, Histogram, JsonFormatter, PlainFormatter, Registry, metrics, request_id


def _record(msg: str = "run finished", **extra: object) -> logging.LogRecord:
    logger = logging.getLogger("chat.turns")
    return logger.makeRecord("chat.turns", logging.INFO, __file__, 1, msg, (), None, extra=extra)


def test_plain_line_names_the_run_agent_status_and_cost() -> None:
    line = PlainFormatter().format(
        _record(run="run_1", agent="zee", status="succeeded", cost_micros=1234, usage={"prompt_tokens": 5})
    )
    assert line.endswith(
        'INFO chat.turns run finished run=run_1 agent=zee status=succeeded cost_micros=1234 usage={"prompt_tokens":5}'
    )


def test_plain_values_with_spaces_are_quoted() -> None:
    line = PlainFormatter().format(_record("call ended", reason="the person hung up"))
    assert line.endswith('call ended reason="the person hung up"')


def test_json_line_is_one_object_with_every_field_and_the_request_id() -> None:
    with request_id("client-id-123") as rid:
        line = JsonFormatter().format(_record(run="run_1", agent="ava", status="failed", error="model_error"))
    entry = json.loads(line)
    assert "\n" not in line
    assert rid == "client-id-123"
    assert entry["severity"] == "INFO"
    assert entry["logger"] == "chat.turns"
    assert entry["message"] == "run finished"
    assert (entry["run"], entry["agent"], entry["status"], entry["error"]) == ("run_1", "ava", "failed", "model_error")
    assert entry["request_id"] == "client-id-123"
    assert entry["time"].endswith("+00:00")


def test_a_clients_odd_request_id_is_replaced() -> None:
    with request_id("bad id\nwith a newline") as rid:
        assert rid.startswith("req_")
    with request_id(None) as rid:
        assert rid.startswith("req_")


def test_json_line_carries_the_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("x").makeRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    entry = json.loads(JsonFormatter().format(record))
    assert entry["severity"] == "ERROR"
    assert "ValueError: boom" in entry["exception"]


def test_credentials_and_message_text_are_never_written() -> None:
    record = _record("signed in", token="secret-token", text="my PIN is 1234", person="p_1")
    for line in (PlainFormatter().format(record), JsonFormatter().format(record)):
        assert "secret-token" not in line
        assert "1234" not in line
        assert "p_1" in line


def test_counter_and_histogram_render_as_prometheus_text() -> None:
    registry = Registry()
    runs = registry.add(Counter("t_runs_total", "Runs", ("agent", "status")))
    seconds = registry.add(Histogram("t_seconds", "Latency", buckets=(0.1, 1.0)))
    level = registry.add(Gauge("t_level", "Level"))
    runs.inc(agent="zee", status="succeeded")
    runs.inc(2, agent='a"b', status="failed")
    seconds.observe(0.05)
    seconds.observe(0.5)
    level.set(3)
    import asyncio

    page = asyncio.run(registry.exposition())
    assert "# TYPE t_runs_total counter" in page
    assert 't_runs_total{agent="zee",status="succeeded"} 1' in page
    assert 't_runs_total{agent="a\\"b",status="failed"} 2' in page
    assert 't_seconds_bucket{le="0.1"} 1' in page
    assert 't_seconds_bucket{le="1"} 2' in page
    assert 't_seconds_bucket{le="+Inf"} 2' in page
    assert "t_seconds_count 2" in page
    assert "t_seconds_sum 0.55" in page
    assert "t_level 3" in page


def test_label_sets_are_bounded() -> None:
    counter = Counter("t_bounded_total", "Bounded", ("model",), series_max=3)
    for index in range(10):
        counter.inc(model=f"model-{index}")
    rendered = counter.lines()[2:]
    assert len(rendered) == 3
    assert counter.value(model="other") == 8


def test_wrong_labels_are_a_programming_error() -> None:
    counter = Counter("t_labels_total", "Labels", ("agent",))
    with pytest.raises(ValueError):
        counter.inc(model="x")
    with pytest.raises(ValueError):
        counter.inc(-1, agent="x")


async def test_a_failing_refresh_leaves_the_page_whole() -> None:
    registry = Registry()
    level = registry.add(Gauge("t_refreshed", "Refreshed"))

    async def broken() -> None:
        raise OSError("database gone")

    async def working() -> None:
        level.set(7)

    stop = registry.on_scrape(broken)
    registry.on_scrape(working)
    page = await registry.exposition()
    assert "t_refreshed 7" in page
    stop()


def test_the_dashboard_charts_only_metrics_the_server_serves() -> None:
    dashboard = json.loads((Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json").read_text())
    served = {m.name for m in metrics.registry.members}
    charted = {
        re.sub(r"_(bucket|sum|count)$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"avagenc_[a-z_]+", target["expr"])
    }
    assert charted and charted <= served, charted - served
    assert not served - charted, "every metric has a panel"
