"""Linking endpoints (SPEC §6.2, §12): each integration's state, the consent URL, and
connecting or disconnecting one. Everything is scoped to the signed-in person; linking
errors become problem+json through `on_link_error`, registered by main.py."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse

from agents import Connections, LinkError
from chat.api import ChatApi, current_person_dependency
from chat.edge import problem
from chat.people import Person

_NAME = Path(min_length=1, max_length=40, description="google, spotify or tuya")


class Connect(BaseModel):
    """From the provider's redirect (`code`, `state`), or Tuya's app account (`account_id`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    code: str | None = Field(default=None, min_length=1, max_length=2048)
    state: str | None = Field(default=None, min_length=1, max_length=200)
    account_id: str | None = Field(default=None, min_length=1, max_length=64)


async def on_link_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LinkError)
    return problem(exc.status, exc.code, exc.title, str(exc) or None)


def build_integrations_router(api: ChatApi, connections: Connections) -> APIRouter:
    router = APIRouter(prefix="/v1/integrations", tags=["integrations"])
    current_person = current_person_dependency(api)

    @router.get("")
    async def integrations(person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        """Each integration: live (linked, reachable), sandbox (not linked) or unavailable."""
        return {"integrations": [s.as_json() for s in await connections.states(person_id=person.id)]}

    @router.get("/{name}/auth-url")
    async def auth_url(
        person: Annotated[Person, Depends(current_person)], name: Annotated[str, _NAME]
    ) -> dict[str, Any]:
        """The provider's consent page; its state is bound to you and expires in 15 minutes."""
        return {"url": connections.auth_url(person_id=person.id, name=name), "expires_in_s": 900}

    @router.post("/{name}/connection")
    async def connect(
        person: Annotated[Person, Depends(current_person)], name: Annotated[str, _NAME], body: Connect
    ) -> dict[str, Any]:
        state = await connections.connect(
            person_id=person.id, name=name, code=body.code, state=body.state, account_id=body.account_id
        )
        return state.as_json()

    @router.delete("/{name}/connection")
    async def disconnect(
        person: Annotated[Person, Depends(current_person)], name: Annotated[str, _NAME]
    ) -> dict[str, Any]:
        """Forget the link and revoke it upstream where the provider allows (Google does)."""
        return await connections.disconnect(person_id=person.id, name=name)

    return router
