"""What an operator watches, through a real `avagenc serve` process: its log as JSON lines
that name each run, and `/metrics` in Prometheus text after a turn (docs/operations.md)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from app.server import SINGLE_STATEMENTS_POOL_MAX
from settings import Settings
from tests.fakes.servers import serve_subprocess


def _samples(page: str) -> dict[str, float]:
    """Every sample line of a Prometheus text page, by its name and labels."""
    samples = {}
    for line in page.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def test_a_turn_shows_in_the_json_log_and_on_the_metrics_page(settings: Settings, tmp_path: Path) -> None:
    assert settings.database_url and settings.session_secret
    env = {
        "DATABASE_URL": settings.database_url,
        "SESSION_SECRET": settings.session_secret.get_secret_value(),
        "AVAGENC_HOME": str(settings.avagenc_home),
        "VOICE_PRELOAD": "false",
        "LOG_FORMAT": "json",
        "METRICS_TOKEN": "scrape-" + "y" * 20,
    }
    log_path = tmp_path / "server.log"
    with serve_subprocess(env, log_path=log_path) as url, httpx.Client(base_url=url, timeout=30) as client:
        signed = client.post("/v1/auth/local", json={"name": "Budi"}).json()
        headers = {"Authorization": f"Bearer {signed['token']}", "X-Request-Id": "turn-from-test-1"}
        posted = client.post("/v1/messages", json={"text": "turn on the bedroom light"}, headers=headers)
        assert posted.status_code == 200
        assert posted.headers["x-request-id"] == "turn-from-test-1"
        assert client.delete("/v1/reminders/pstr_nope", headers=headers).status_code == 404

        assert client.get("/metrics").status_code == 401
        scraped = client.get("/metrics", headers={"Authorization": "Bearer " + env["METRICS_TOKEN"]})
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
        samples = _samples(scraped.text)

    assert samples['avagenc_runs_total{agent="ava",trigger="human",status="succeeded"}'] == 1
    assert samples['avagenc_runs_total{agent="zee",trigger="ava",status="succeeded"}'] == 1
    assert samples['avagenc_model_tokens_total{model="offline-1",kind="prompt"}'] > 0
    assert samples['avagenc_model_cost_micros_total{model="offline-1"}'] > 0
    assert samples['avagenc_model_call_seconds_count{model="offline-1"}'] >= 2
    assert samples['avagenc_http_requests_total{route="/v1/messages",method="POST",status="200"}'] == 1
    # The route's template, never the id in the path: the label set stays bounded.
    assert samples['avagenc_http_requests_total{route="/v1/reminders/{note_id}",method="DELETE",status="404"}'] == 1
    assert samples['avagenc_errors_total{kind="reminder_not_found"}'] == 1
    assert samples["avagenc_calls_active"] == 0
    assert samples["avagenc_wake_backlog"] == 0
    assert samples['avagenc_db_connections{pool="statements",state="max"}'] == 20
    # Named for SINGLE_STATEMENTS_POOL_MAX, the pool the limiter shares with live-event reads
    # and sign-in checks; no pool keeps the old name `limits`.
    assert samples['avagenc_db_connections{pool="single_statements",state="max"}'] == SINGLE_STATEMENTS_POOL_MAX
    assert not any('pool="limits"' in name for name in samples)
    assert "avagenc_sse_clients" in scraped.text

    lines = log_path.read_text().splitlines()
    entries = [json.loads(line) for line in lines]  # every line is one JSON object
    finished = [e for e in entries if e["message"] == "run finished"]
    assert {e["agent"] for e in finished} == {"ava", "zee"}
    for entry in finished:
        assert entry["run"].startswith("run_")
        assert entry["status"] == "succeeded"
        assert entry["cost_micros"] > 0
        assert entry["request_id"] == "turn-from-test-1"
        assert entry["person"]
    # uvicorn's own lines are JSON too, and the token in a URL never reaches them.
    assert any(e["logger"] == "uvicorn.error" for e in entries)
    assert "turn on the bedroom light" not in log_path.read_text()
    assert signed["token"] not in log_path.read_text()
