"""Ava's wake tools: notes to her future self (docs/agents.md#wake-notes-postera), bound to one person and run.

Times go in and out as local wall-clock time in the person's zone, the way the session
layer shows the clock, so Ava never converts zones. Every refusal (a malformed or past
time, too far ahead, too many notes, a blank note) comes back as a tool error in words
she can pass on. Only Ava has these: specialists act in the present, and future work is
handed on when she wakes.
"""

from __future__ import annotations

from typing import Any

from agents.errors import ToolError
from agents.model import ToolSpec
from agents.toolbox import RunContext
from agents.tools import Tool, object_schema
from reminders import NOTE_CHARS_MAX, Note, ReminderError, Reminders, local_text

SCHEDULE_DESCRIPTION = (
    "Leave a note to your future self that wakes you at a local time in the person's time zone. "
    "When it fires you read only the note and the recent chat, and remember nothing else about why you "
    "wrote it, so write it self-contained: who it is for, exactly what to do or say, and any names, "
    "places and times it depends on (e.g. 'Remind Budi to leave now to pick up Nay from school at 17:00; "
    "ask if he is on the way'). Use this for anything that should happen later, including work for a "
    "specialist: hand it on when you wake. `at_local` is YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS in the "
    "person's local time; it must be in the future and at most one year ahead."
)


def _view(note: Note) -> dict[str, Any]:
    return {"id": note.id, "note": note.text, "due_local": note.due_local(), "status": note.status}


def wake_tools(reminders: Reminders, context: RunContext) -> list[Tool]:
    person_id, zone = context.person_id, context.zone

    async def schedule_wake(args: dict[str, Any]) -> dict[str, Any]:
        note, at_local = args.get("note"), args.get("at_local")
        if not isinstance(note, str) or not isinstance(at_local, str):
            raise ToolError("Give both `note` (text) and `at_local` (YYYY-MM-DDTHH:MM in the person's local time).")
        try:
            made = await reminders.schedule(
                person_id=person_id, text=note, at_local=at_local, time_zone=zone.key, created_by_run_id=context.run_id
            )
        except ReminderError as exc:
            raise ToolError(f"The note was not scheduled: {exc}") from exc
        return {"scheduled": _view(made), "time_zone": zone.key}

    async def list_wakes(_: dict[str, Any]) -> dict[str, Any]:
        upcoming = await reminders.upcoming(person_id)
        return {
            "now_local": local_text(reminders.now(), zone),
            "time_zone": zone.key,
            "wakes": [_view(n) for n in upcoming],
        }

    async def cancel_wake(args: dict[str, Any]) -> dict[str, Any]:
        note_id = args.get("id")
        if not isinstance(note_id, str) or not note_id:
            raise ToolError("Give the `id` of the note to cancel, from list_wakes.")
        try:
            cancelled = await reminders.cancel(person_id, note_id)
        except ReminderError as exc:
            raise ToolError(f"The note was not cancelled: {exc}") from exc
        return {"cancelled": _view(cancelled)}

    return [
        Tool(
            ToolSpec(
                "schedule_wake",
                SCHEDULE_DESCRIPTION,
                object_schema(
                    {
                        "note": {
                            "type": "string",
                            "description": f"The self-contained note to your future self (at most {NOTE_CHARS_MAX} "
                            "characters).",
                        },
                        "at_local": {
                            "type": "string",
                            "description": "YYYY-MM-DDTHH:MM[:SS], the person's local time.",
                        },
                    },
                    ("note", "at_local"),
                ),
            ),
            schedule_wake,
        ),
        Tool(
            ToolSpec(
                "list_wakes",
                "List your pending notes to your future self (id, note, local due time), soonest first, "
                "with the person's exact local time now.",
                object_schema({}),
            ),
            list_wakes,
        ),
        Tool(
            ToolSpec(
                "cancel_wake",
                "Cancel one pending note by its id from list_wakes, when it is no longer wanted "
                "(done already, plans changed, the person asked).",
                object_schema({"id": {"type": "string"}}, ("id",)),
            ),
            cancel_wake,
        ),
    ]
