"""A person's verified phone numbers over HTTP (docs/http.md#phones): add one (a code is
sent to it), verify it with that code, list them, remove one.

(No `from __future__ import annotations` here: FastAPI must evaluate the dependency
annotations of the closures below.)

Codes sent are counted per person and per client address, so the product is no free
text-message cannon (one address signing up many people does not multiply it); a code is
burnt after too many wrong tries (chat.phones). Never per number: a limit on the number
would let anyone who knows a person's number use it up and stop them verifying it
(docs/http.md#phones).
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from chat import Person, Phones, Rate, normalise_number
from web.api import ChatApi, client_address, current_person_dependency
from web.edge import problem_responses
from web.schemas import _Strict


class PhoneIn(_Strict):
    number: str = Field(min_length=1, max_length=32, description="In international form, e.g. `+62 812 3456 7890`.")


class PhoneCodeIn(_Strict):
    code: str = Field(min_length=1, max_length=16, description="The code sent to the number.")


class PhoneOut(BaseModel):
    id: str = Field(description="`phn_…`")
    number: str = Field(description="E.164")
    verified: bool
    verified_at: str | None
    created_at: str


class PhonesOut(BaseModel):
    phones: list[PhoneOut]


def build_phones_router(api: ChatApi, phones: Phones, *, codes_per_person: Rate, codes_per_address: Rate) -> APIRouter:
    router = APIRouter(prefix="/v1/phones", tags=["phones"])
    current_person = current_person_dependency(api)

    @router.post(
        "", response_model=PhoneOut, status_code=202, responses=problem_responses(400, 401, 409, 413, 422, 429, 503)
    )
    async def add(
        body: PhoneIn, request: Request, person: Annotated[Person, Depends(current_person)]
    ) -> dict[str, Any]:
        """Add a number (or ask again for a code for one not yet verified): a code is sent to it."""
        number = normalise_number(body.number)  # a number that is no number costs no code
        await api.limits.hit(f"phone_codes:{person.id}", codes_per_person, what="phone codes")
        await api.limits.hit(f"phone_codes_from:{client_address(request)}", codes_per_address, what="phone codes")
        return (await phones.add(person.id, number)).as_json()

    @router.post(
        "/{phone_id}/verify", response_model=PhoneOut, responses=problem_responses(400, 401, 404, 409, 413, 422)
    )
    async def verify(
        body: PhoneCodeIn,
        person: Annotated[Person, Depends(current_person)],
        phone_id: Annotated[str, Path(max_length=64)],
    ) -> dict[str, Any]:
        """The code sent to the number: once it is right, calls from the number are this person's."""
        return (await phones.verify(person.id, phone_id, body.code)).as_json()

    @router.get("", response_model=PhonesOut, responses=problem_responses(401, 422))
    async def listed(person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        return {"phones": [p.as_json() for p in await phones.of(person.id)]}

    @router.delete("/{phone_id}", status_code=204, responses=problem_responses(401, 404, 422))
    async def remove(
        person: Annotated[Person, Depends(current_person)], phone_id: Annotated[str, Path(max_length=64)]
    ) -> Response:
        """Remove a number: calls from it are strangers' again."""
        await phones.remove(person.id, phone_id)
        return Response(status_code=204)

    return router
