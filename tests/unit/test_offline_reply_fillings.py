"""Every filling of a templated reminder reads as a sentence: the offline Ava's "Okay, I'll
remind you to … at …" and "Oke, jam … aku ingetin … ya", for any day, clock time and task
as people say them, in either order and either language, judged by the eval's own
`reads_as_sentences` (docs/eval.md): no doubled word, nothing dangling, no empty slot, and
no day inside the task; and the note is due on the day and half of the day said."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from agents import ModelResponse, OfflineModel
from agents.ava.wakes import wake_tools
from agents.model import FunctionResult
from scenarios.rules import sentence_fault
from tests.unit.test_offline_model import request

NOW_LOCAL = "2026-11-30T03:00:00"
_DAYS_EN = ("", "tomorrow", "today", "tonight")
_TIMES_EN = ("at 7am", "at 7:30 pm", "at 19:00", "at 9")
_TASKS_EN = (
    "buy milk", "call mom", "take the chicken out of the freezer", "pick up Nay at school", "send the report to Sari",
    "water the plants", "check the oven at home", "pay the electricity bill", "go to the gym", "book a table for two",
)  # fmt: skip
_DAYS_ID = ("", "besok", "hari ini", "nanti malam")
_TIMES_ID = ("jam 7", "jam 7 pagi", "jam 19.30", "jam 8 malam")
_TASKS_ID = (
    "beli susu", "telepon ibu", "jemput Nay di sekolah", "bayar listrik", "kirim laporan ke Sari",
    "siram tanaman", "minum obat", "keluarin ayam dari freezer",
)  # fmt: skip


# Ava's wake tools as a deployment with reminders gives them (describing them does no I/O).
_WAKES = tuple(
    t.spec
    for t in wake_tools(
        None,  # type: ignore[arg-type]  # never reached: nothing is called
        SimpleNamespace(person_id="p", zone=ZoneInfo("UTC"), run_id="r"),  # type: ignore[arg-type]
    )
)


async def _ava(lines: list[str], results: list[FunctionResult]) -> ModelResponse:
    plain = request("ava", lines, results=results)
    return await OfflineModel().generate(request=replace(plain, tools=plain.tools + _WAKES))


def _due_fits(said: str, due: str) -> bool:
    """The day and half of the day said are the note's: tomorrow's date, an evening hour."""
    day, hour = due[:10], int(due[11:13])
    if any(w in said for w in ("tomorrow", "besok")) and day != "2026-12-01":
        return False
    evening = any(w in said for w in ("tonight", "nanti malam", "8 malam"))
    return not evening or hour >= 12 or any(w in said.split() for w in ("7am", "pagi"))  # "tonight at 7am" says 7am


DUE: dict[str, str] = {}


async def _reply(said: str) -> str:
    lines = [f"[2026-11-30 03:00 Budi] {said}"]
    listed = FunctionResult("c1", "list_wakes", {"now_local": NOW_LOCAL, "time_zone": "UTC", "wakes": []})
    response = await _ava(lines, [listed])
    if [c.name for c in response.calls] != ["schedule_wake"]:
        return response.text  # a question back ("when, and of what?") is judged the same way
    made = dict(response.calls[0].args)
    DUE[said] = str(made["at_local"])
    note = {"id": "n1", "note": made["note"], "due_local": made["at_local"][:16], "status": "pending"}
    done = FunctionResult("c2", "schedule_wake", {"scheduled": note, "time_zone": "UTC"})
    return (await _ava(lines, [listed, done])).text


@settings(max_examples=60, deadline=None)
@given(
    day=st.sampled_from(_DAYS_EN),
    time=st.sampled_from(_TIMES_EN),
    task=st.sampled_from(_TASKS_EN),
    task_first=st.booleans(),
)
async def test_an_english_reminder_reads_as_a_sentence(day: str, time: str, task: str, task_first: bool) -> None:
    when = f"{day} {time}".strip()
    said = f"remind me to {task} {when}" if task_first else f"remind me {when} to {task}"
    reply = await _reply(said)
    assert reply and sentence_fault(reply) is None, f"{said!r} -> {reply!r}: {sentence_fault(reply)}"
    assert _due_fits(said, DUE[said]), f"{said!r} is due {DUE[said]}"


@settings(max_examples=60, deadline=None)
@given(
    day=st.sampled_from(_DAYS_ID),
    time=st.sampled_from(_TIMES_ID),
    task=st.sampled_from(_TASKS_ID),
    task_first=st.booleans(),
)
async def test_an_indonesian_reminder_reads_as_a_sentence(day: str, time: str, task: str, task_first: bool) -> None:
    when = f"{day} {time}".strip()
    said = f"ingetin aku {task} {when}" if task_first else f"ingetin aku {when} {task}"
    reply = await _reply(said)
    assert reply and sentence_fault(reply) is None, f"{said!r} -> {reply!r}: {sentence_fault(reply)}"
    assert _due_fits(said, DUE[said]), f"{said!r} is due {DUE[said]}"
