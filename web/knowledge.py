"""Knowledge endpoints (docs/http.md#endpoints): the person's graph, and forget me.

`GET /v1/knowledge` answers every node and edge with its validity, so a client can draw
what is true now and what used to be. `DELETE /v1/knowledge` forgets the person (thread,
graph and pending wake notes) and answers with counts of exactly what was erased.
"""

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from agents import Knowledge, KnowledgeError
from chat import Forgetting, KnowledgeUnavailable, Person
from web.api import ChatApi, current_person_dependency
from web.edge import problem_responses


def build_knowledge_router(
    api: ChatApi, *, knowledge: Knowledge, forgetting: Forgetting, timeout_s: float
) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["knowledge"])
    current_person = current_person_dependency(api)

    @router.get("/knowledge", responses=problem_responses(401, 422, 503))
    async def graph(person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        """The knowledge graph: nodes (with a type) and edges (with `valid_at` and `invalid_at`)."""
        try:
            async with asyncio.timeout(timeout_s):
                found = await knowledge.graph(person_id=person.id)
        except (KnowledgeError, TimeoutError) as exc:
            raise KnowledgeUnavailable("Try again in a moment.") from exc
        return found.as_json()

    @router.delete("/knowledge", responses=problem_responses(401, 422, 503))
    async def forget_me(person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        """Forget me: the thread, the knowledge graph and pending wake notes. The wallet's
        money history is kept. Answers with how many of each were erased."""
        try:
            erased = await forgetting.forget(person.id)
        except (KnowledgeError, TimeoutError) as exc:
            raise KnowledgeUnavailable("Nothing was erased; try again in a moment.") from exc
        return erased.as_json()

    return router
