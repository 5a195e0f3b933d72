"""Linking endpoints (docs/http.md#endpoints, docs/agents.md#linking): each integration's state, the consent URL, and
connecting or disconnecting one. Everything is scoped to the signed-in person; linking
errors carry their stable type and become problem+json at the edge like every other."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, ConfigDict, Field

from agents import Connections
from chat import Person
from web.api import ChatApi, current_person_dependency
from web.edge import problem_responses

_NAME = Path(min_length=1, max_length=40, description="google, spotify or tuya")


class Connect(BaseModel):
    """From the provider's redirect (`code`, `state`), or Tuya's app account (`account_id`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    code: str | None = Field(default=None, min_length=1, max_length=2048)
    state: str | None = Field(default=None, min_length=1, max_length=200)
    account_id: str | None = Field(default=None, min_length=1, max_length=64)


def build_integrations_router(api: ChatApi, connections: Connections) -> APIRouter:
    router = APIRouter(prefix="/v1/integrations", tags=["integrations"], responses=problem_responses(401, 422))
    current_person = current_person_dependency(api)

    @router.get("")
    async def integrations(person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        """Each integration: live (linked, reachable), sandbox (not linked) or unavailable."""
        return {"integrations": [s.as_json() for s in await connections.states(person_id=person.id)]}

    @router.get("/{name}/auth-url", responses=problem_responses(404, 409))
    async def auth_url(
        person: Annotated[Person, Depends(current_person)], name: Annotated[str, _NAME]
    ) -> dict[str, Any]:
        """The provider's consent page; its state is bound to you and expires in 15 minutes."""
        return {"url": connections.auth_url(person_id=person.id, name=name), "expires_in_s": 900}

    @router.post("/{name}/connection", responses=problem_responses(400, 404, 409, 503))
    async def connect(
        person: Annotated[Person, Depends(current_person)], name: Annotated[str, _NAME], body: Connect
    ) -> dict[str, Any]:
        state = await connections.connect(
            person_id=person.id, name=name, code=body.code, state=body.state, account_id=body.account_id
        )
        return state.as_json()

    @router.delete("/{name}/connection", responses=problem_responses(404))
    async def disconnect(
        person: Annotated[Person, Depends(current_person)], name: Annotated[str, _NAME]
    ) -> dict[str, Any]:
        """Forget the link and revoke it upstream where the provider allows (Google does)."""
        return await connections.disconnect(person_id=person.id, name=name)

    return router
