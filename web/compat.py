"""The first product's routes, so its web, iOS and speaker clients can point at this server.

The first product (docs/first-product.md) answered `POST /ava`, `/zee`, `/yori`, `/rafal`
with `{"message"}` → `{"response"}`, read its thread as a Zep message list, its graph as
Zep nodes and edges, its reminders as PascalCase `Posterum` objects, and its wallet in
whole rupiah. Each route here is a thin adapter over the same services the `/v1` routes
use: the same turn, thread lock, limits, wallet guard and charges. They are mounted only
when FIRST_PRODUCT_ROUTES is on. What still differs from the first product is listed in
docs/first-product.md.
"""

import asyncio
from datetime import datetime
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse, Response

from agents import Knowledge, KnowledgeError
from chat import Forgetting, KnowledgeUnavailable, Person, Wallet
from reminders import Reminders
from web.api import ChatApi, current_person_dependency, current_zone_dependency
from web.edge import problem_responses

# The thread's longest read (the first web app asked for its last 200 messages).
MESSAGES_MAX = 500
_HANDLES = ("ava", "zee", "yori", "rafal")


class Ask(BaseModel):
    """The first product's request body for an agent route."""

    model_config = ConfigDict(extra="ignore")

    message: str = Field(min_length=1, max_length=8000)


def _not_found(detail: str) -> JSONResponse:
    # The first product answered its errors as {"detail"} in application/json.
    return JSONResponse({"detail": detail}, status_code=404)


def _reply_of(result: Any, handle: str) -> str:
    """What the first product answered: the routed agent's last words in this turn ("" if none)."""
    said = [m.text for m in result.messages if m.author == handle and not m.text.startswith("@")]
    return said[-1] if said else ""


def _tagged(result: Any) -> str:
    """The spoken reply with its emotion tags, as the first product's speaker read it."""
    if result.spoken is None:
        return ""
    parts = [f"{s.text} #{s.emotion}#" if s.emotion else s.text for s in result.spoken.segments]
    tail = " #end#" if result.spoken.end_call else ""
    return " ".join(parts) + tail


def _role(author: str) -> str:
    if author == "human":
        return "user"
    if author == "postera":
        return "system"
    return "assistant"


def _zep_message(message: Any) -> dict[str, Any]:
    # Ava's bare handoff tag was a user-role message named after her in the first product.
    role = "user" if message.author != "human" and message.text.startswith("@") else _role(message.author)
    return {
        "uuid": message.id,
        "content": message.text,
        "role": role,
        "name": message.author,
        "created_at": message.created_at.isoformat(),
        "metadata": {"channel": message.channel},
        "processed": True,
    }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def build_compat_router(
    api: ChatApi,
    *,
    wallet: Wallet,
    knowledge: Knowledge,
    forgetting: Forgetting,
    reminders: Reminders | None,
    knowledge_timeout_s: float,
) -> APIRouter:
    router = APIRouter(tags=["first product"], include_in_schema=False)
    current_person = current_person_dependency(api)
    current_zone = current_zone_dependency(api, current_person)

    async def turn(person: Person, zone: ZoneInfo, text: str, channel: Literal["text", "voice"]) -> Any:
        return await api.limited_turn(person, text=text, channel=channel, zone=zone)

    def agent_route(handle: str) -> None:
        @router.post(f"/{handle}", responses=problem_responses(400, 401, 402, 422, 429, 503))
        async def ask(
            body: Ask,
            person: Annotated[Person, Depends(current_person)],
            zone: Annotated[ZoneInfo, Depends(current_zone)],
        ) -> dict[str, str]:
            # A specialist's route was a direct line to them: here, their @mention routes it.
            text = body.message if handle == "ava" else f"@{handle} {body.message}"
            return {"response": _reply_of(await turn(person, zone, text, "text"), handle)}

    for handle in _HANDLES:
        agent_route(handle)

    @router.post("/ava/voice", responses=problem_responses(400, 401, 402, 422, 429, 503))
    async def ask_by_voice(
        body: Ask,
        person: Annotated[Person, Depends(current_person)],
        zone: Annotated[ZoneInfo, Depends(current_zone)],
    ) -> dict[str, str]:
        """A speaker's transcribed words; the reply carries its emotion tags for the device's TTS."""
        return {"response": _tagged(await turn(person, zone, body.message, "voice"))}

    @router.get("/sessions/messages", response_model=None)
    async def thread(
        person: Annotated[Person, Depends(current_person)],
        lastn: Annotated[int | None, Query(ge=0)] = None,
        limit: Annotated[int | None, Query(ge=0)] = None,
        cursor: Annotated[int | None, Query(ge=0)] = None,
    ) -> Any:
        wanted = min(lastn or limit or MESSAGES_MAX, MESSAGES_MAX)
        rows = await api.threads.page(person.id, before=None, after=None, limit=wanted)
        if not rows:
            return _not_found("session not found")
        return {
            "messages": [_zep_message(m) for m in rows],
            "row_count": len(rows),
            "total_count": len(rows),
            "created_at": rows[0].created_at.isoformat(),
            "user_id": person.id,
        }

    @router.get("/knowledge", response_model=None)
    async def graph(person: Annotated[Person, Depends(current_person)]) -> Any:
        try:
            async with asyncio.timeout(knowledge_timeout_s):
                found = await knowledge.graph(person_id=person.id)
        except (KnowledgeError, TimeoutError) as exc:
            raise KnowledgeUnavailable("Try again in a moment.") from exc
        if not found.nodes:
            return _not_found("memory not found")
        return {
            "nodes": [
                {
                    "uuid": n.id,
                    "name": n.name,
                    "summary": "",
                    "labels": [n.type],
                    "attributes": {},
                    "created_at": n.created_at.isoformat(),
                }
                for n in found.nodes
            ],
            "edges": [
                {
                    "uuid": e.id,
                    "name": e.relation,
                    "fact": e.text,
                    "source_node_uuid": e.subject_id,
                    "target_node_uuid": e.object_id,
                    "created_at": e.valid_at.isoformat(),
                    "valid_at": e.valid_at.isoformat(),
                    "invalid_at": _iso(e.invalid_at),
                    "expired_at": _iso(e.invalid_at),
                    "episodes": list(e.message_ids),
                    "attributes": {},
                }
                for e in found.edges
            ],
        }

    @router.delete("/knowledge", status_code=204, response_model=None)
    async def forget_me(person: Annotated[Person, Depends(current_person)]) -> Response:
        # The v1 route's forgetting, answered as the first product did (204, no body).
        try:
            await forgetting.forget(person.id)
        except (KnowledgeError, TimeoutError) as exc:
            raise KnowledgeUnavailable("Nothing was erased; try again in a moment.") from exc
        return Response(status_code=204)

    @router.get("/wallet")
    async def balance(person: Annotated[Person, Depends(current_person)]) -> dict[str, int]:
        micros = await wallet.balance_micros(person.id)
        return {"balance": micros // 1_000_000, "balance_micros": micros}  # floored, as the first product did

    @router.get("/wallet/usage/today")
    async def usage_today(
        person: Annotated[Person, Depends(current_person)], zone: Annotated[ZoneInfo, Depends(current_zone)]
    ) -> dict[str, int]:
        used = await wallet.usage_for_day(person.id, day=datetime.now(zone).date(), zone=zone)
        return {"tokens": used.total_tokens, "cost": used.cost_micros // 1_000_000, "cost_micros": used.cost_micros}

    if reminders is not None:

        @router.get("/postera")
        async def upcoming(person: Annotated[Person, Depends(current_person)]) -> list[dict[str, Any]]:
            notes = await reminders.upcoming(person.id)
            return [
                {
                    "ID": n.id,
                    "Human": person.id,
                    "Agent": n.agent,
                    "Session": f"chat-{person.id}",
                    "Metadata": {"timezone": n.time_zone},
                    "Message": n.text,
                    "TriggerAt": n.due_at.isoformat(),
                    "CreatedAt": n.created_at.isoformat(),
                }
                for n in notes
            ]

        @router.delete("/postera/{note_id}", status_code=204, response_model=None)
        async def cancel(note_id: str, person: Annotated[Person, Depends(current_person)]) -> Response:
            await reminders.cancel(person.id, note_id)
            return Response(status_code=204)

    return router
