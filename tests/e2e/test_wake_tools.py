"""Ava's wake tools on the scripted model: what she is told when a time is bad or the
limit is reached (words she can pass on), and that nothing is half-written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents import FunctionCall, Model, ModelResponse, ScriptedModel
from tests.conftest import App


@pytest.fixture
def model(scripted: ScriptedModel) -> Model:
    return scripted


def schedule(at_local: str, note: str = "Remind Budi to stretch.") -> ModelResponse:
    return ModelResponse("", (FunctionCall("c-wake", "schedule_wake", {"note": note, "at_local": at_local}),))


async def tool_result(app: App, scripted: ScriptedModel, headers: dict[str, str], call: ModelResponse) -> Any:
    scripted.extend([call, ModelResponse("ok")])
    assert (await app.say(headers, "remind me")).status_code == 200
    return scripted.requests[-1].contents[-1].results[0].response


async def test_bad_times_and_notes_come_back_as_words_and_nothing_is_kept(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    jakarta = datetime.now(ZoneInfo("Asia/Jakarta"))
    cases = {
        "tomorrow at five": "is not a local time like",
        "2026-02-30T10:00": "is not a real date and time",
        (jakarta - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M"): "already passed",
        (jakarta + timedelta(days=400)).strftime("%Y-%m-%dT%H:%M"): "at most one year ahead",
    }
    for at_local, words in cases.items():
        result = await tool_result(app, scripted, headers, schedule(at_local))
        assert words in result["error"], (at_local, result)
    blank = await tool_result(app, scripted, headers, schedule("2099-01-01T10:00", note=" \u200b "))
    assert "empty" in blank["error"]
    listed = (await app.client.get("/v1/reminders", headers=headers)).json()
    assert listed == {"upcoming": [], "past": []}


async def test_the_101st_pending_note_is_refused(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    parts = app.services.reminders
    assert parts is not None
    due = datetime.now(UTC) + timedelta(days=2)
    for i in range(100):
        await parts.reminders.schedule_at(person_id=me, text=f"note {i}", due_at=due, time_zone="Asia/Jakarta")
    later = (datetime.now(ZoneInfo("Asia/Jakarta")) + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    result = await tool_result(app, scripted, headers, schedule(later))
    assert "already 100 pending notes" in result["error"]
    assert len((await app.client.get("/v1/reminders", headers=headers)).json()["upcoming"]) == 100


async def test_scheduling_uses_the_persons_zone_and_records_the_run(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    day = (datetime.now(ZoneInfo("Asia/Jakarta")) + timedelta(days=1)).strftime("%Y-%m-%d")
    result = await tool_result(app, scripted, headers, schedule(f"{day}T17:00"))
    assert result["scheduled"]["due_local"] == f"{day}T17:00:00"
    assert result["time_zone"] == "Asia/Jakarta"
    [note] = (await app.client.get("/v1/reminders", headers=headers)).json()["upcoming"]
    assert note["due_at"].startswith(f"{day}T10:00:00")  # 17:00 in Jakarta is 10:00 UTC
    listing = await tool_result(app, scripted, headers, ModelResponse("", (FunctionCall("c", "list_wakes", {}),)))
    assert [w["id"] for w in listing["wakes"]] == [note["id"]]
    assert listing["now_local"][:10] in (day, (datetime.now(ZoneInfo("Asia/Jakarta"))).strftime("%Y-%m-%d"))
    missing = await tool_result(
        app, scripted, headers, ModelResponse("", (FunctionCall("c", "cancel_wake", {"id": "pstr_nope"}),))
    )
    assert "no such note" in missing["error"]
