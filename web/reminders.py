"""Wake notes over HTTP (docs/http.md#endpoints): the person lists and cancels theirs; a scheduler asks
for a note's delivery.

(No `from __future__ import annotations` here: FastAPI must evaluate the dependency
annotations of the closures below.)

`POST /v1/reminders/{id}/deliver` is not for people: it takes only a scheduler's
signature (the HMAC header or a Cloud Tasks OIDC token, checked by the `CallbackGate`),
never a session token. It answers 200 for anything final (delivered now, delivered
before, cancelled, given up) so a queue stops retrying, and 503 while a retry can still
help (the note is being delivered elsewhere, or this attempt failed).
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query
from pydantic import BaseModel, Field

from chat import Person
from reminders import SIGNATURE_HEADER, CallbackGate, CallbackRefused, Delivery, Reminders
from web.api import ChatApi, current_person_dependency
from web.edge import problem, problem_responses

PAST_MAX = 200


class ReminderOut(BaseModel):
    id: str = Field(description="`pstr_…`")
    agent: str
    text: str = Field(description="The note as Ava wrote it to her future self.")
    due_at: str = Field(description="When it is due (ISO 8601, UTC).")
    due_local: str = Field(description="The same moment as local wall-clock time in `time_zone`.")
    time_zone: str = Field(description="The zone the note was written in.")
    status: str = Field(description="pending, delivering, delivered, cancelled or failed")
    created_at: str
    run_id: str | None = Field(description="The run the note woke, once delivered.")
    outcome: str | None = Field(description="ran, silent, wallet_empty or gave_up, once finished.")
    preview: str | None = Field(description="The first line the person was told.")
    delivered_at: str | None


class RemindersOut(BaseModel):
    upcoming: list[ReminderOut]
    past: list[ReminderOut]


class DeliveryOut(BaseModel):
    id: str
    status: str = Field(description="delivered, done_before, cancelled or failed: all final.")


_RETRY_LATER = {"busy", "retrying", "not_due"}


def build_callback_router(reminders: Reminders, delivery: Delivery, gate: CallbackGate) -> APIRouter:
    """Only the scheduler callback: it needs no person, so it stands on its own."""
    router = APIRouter(prefix="/v1", tags=["reminders"])

    @router.post(
        "/reminders/{note_id}/deliver", response_model=DeliveryOut, responses=problem_responses(401, 404, 422, 503)
    )
    async def deliver(
        note_id: str,
        authorization: Annotated[str | None, Header()] = None,
        signature: Annotated[str | None, Header(alias=SIGNATURE_HEADER)] = None,
    ) -> Any:
        """Scheduler callback: deliver the note now (signed; never a person's token)."""
        scheme, _, token = (authorization or "").partition(" ")
        bearer = token.strip() if scheme.lower() == "bearer" and token.strip() else None
        # Who is calling is settled before anything about the note is revealed.
        if signature:
            gate.check_signature(await reminders.lookup(note_id), signature)
        elif bearer:
            await gate.check_caller(bearer)
        else:
            raise CallbackRefused("Deliveries need a scheduler's signature.")
        note = await reminders.find(note_id)
        status = await delivery.deliver(note.id)
        if status in _RETRY_LATER:
            return problem(503, "reminder_busy", "Try this delivery again later", f"The note is {status}.")
        return {"id": note.id, "status": status}

    return router


def build_reminders_router(api: ChatApi, reminders: Reminders) -> APIRouter:
    """The person's own notes: list and cancel (the callback router is separate)."""
    router = APIRouter(prefix="/v1", tags=["reminders"])
    current_person = current_person_dependency(api)

    @router.get("/reminders", response_model=RemindersOut, responses=problem_responses(401, 422))
    async def list_reminders(
        person: Annotated[Person, Depends(current_person)],
        past_limit: Annotated[int, Query(ge=0, le=PAST_MAX)] = 20,
    ) -> dict[str, Any]:
        """Ava's pending notes (soonest first) and the most recent past ones."""
        upcoming = await reminders.upcoming(person.id)
        past = await reminders.past(person.id, limit=past_limit) if past_limit else []
        return {"upcoming": [n.as_json() for n in upcoming], "past": [n.as_json() for n in past]}

    @router.delete("/reminders/{note_id}", response_model=ReminderOut, responses=problem_responses(401, 404, 409, 422))
    async def cancel_reminder(note_id: str, person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        """Cancel one pending note; 404 for a note that is not the person's."""
        return (await reminders.cancel(person.id, note_id)).as_json()

    return router
