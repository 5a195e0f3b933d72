"""Paired speakers over HTTP (docs/http.md#devices): a speaker asks for a pairing and
polls for its token; the signed-in person approves the code, lists their devices and
removes one.

(No `from __future__ import annotations` here: FastAPI must evaluate the dependency
annotations of the closures below.)

The two routes a speaker calls take no person's token (it has none): the pairing is
counted per client address, and the poll takes the pairing's own secret in the body, never
in a URL a log keeps. Approvals count against the same address limit and, when wrong,
against the person (and against the pairing the code's first group names, chat.devices),
so codes cannot be guessed at speed, nor by many at once.
"""

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from chat import POLL_INTERVAL_S, Devices, Limits, PairingCodeInvalid, Person, Rate
from web.api import ChatApi, client_address, current_person_dependency
from web.edge import problem_responses
from web.schemas import KeepableStr, _Strict

# Wrong codes a person types are counted over this window (PAIRING_WRONG_CODES_MAX of them).
WRONG_CODES_WINDOW_S = 15 * 60


@dataclass(frozen=True, slots=True)
class DeviceLimits:
    """Pairing attempts per client address, and wrong codes per person (docs/http.md#limits)."""

    pairing_per_address: Rate
    wrong_codes_per_person: Rate


class PairingIn(_Strict):
    name: KeepableStr | None = Field(
        default=None, min_length=1, max_length=100, pattern=r"\S", description="What the speaker calls itself."
    )


class PairingOut(BaseModel):
    code: str = Field(description="The code the speaker shows or says, `ABCD-EFGH`; the person types it.")
    poll_secret: str = Field(description="Only the speaker's: it polls `POST /v1/devices/pairing/poll` with it.")
    expires_in_s: int
    interval_s: int = Field(description="How often to poll.")


class PairIn(_Strict):
    code: str = Field(
        min_length=1, max_length=32, description="The code the speaker shows (case, spaces, hyphens ignored)."
    )
    name: KeepableStr | None = Field(default=None, min_length=1, max_length=100, pattern=r"\S")


class PollIn(_Strict):
    poll_secret: str = Field(min_length=1, max_length=300)


class DeviceOut(BaseModel):
    id: str = Field(description="`dev_…`")
    name: str
    created_at: str
    last_seen_at: str | None = Field(description="When it last opened the speaker door.")
    paired: bool = Field(description="False until the speaker has collected its token.")


class PollOut(BaseModel):
    status: str = Field(description="`pending` (poll again after `interval_s`) or `paired` (once).")
    interval_s: int | None = None
    device_token: str | None = Field(default=None, description="The device's own token, given once.")
    device: DeviceOut | None = None


class DevicesOut(BaseModel):
    devices: list[DeviceOut]


def build_devices_router(api: ChatApi, devices: Devices, limits_of: DeviceLimits) -> APIRouter:
    router = APIRouter(prefix="/v1/devices", tags=["devices"])
    current_person = current_person_dependency(api)
    limits: Limits = api.limits

    async def count_attempt(request: Request) -> None:
        await limits.hit(
            f"pairing:{client_address(request)}",
            limits_of.pairing_per_address,
            what="pairing attempts from one address",
        )

    @router.post("/pairing", response_model=PairingOut, responses=problem_responses(400, 413, 422, 429))
    async def start_pairing(request: Request, body: PairingIn | None = None) -> dict[str, Any]:
        """A speaker asks to be paired: it shows `code` to its person and polls with `poll_secret`."""
        await count_attempt(request)
        pairing = await devices.start_pairing(body.name if body is not None else None)
        return {
            "code": pairing.shown,
            "poll_secret": pairing.poll_secret,
            "expires_in_s": pairing.expires_in_s,
            "interval_s": pairing.interval_s,
        }

    @router.post("/pairing/poll", response_model=PollOut, responses=problem_responses(400, 401, 413, 422))
    async def poll(body: PollIn) -> dict[str, Any]:
        """The speaker's poll: `pending` until its person approves, then its device token, once."""
        found = await devices.poll(body.poll_secret)
        if found is None:
            return {"status": "pending", "interval_s": POLL_INTERVAL_S}
        device, token = found
        return {"status": "paired", "device_token": token, "device": device.as_json()}

    @router.post(
        "/pair", response_model=DeviceOut, status_code=201, responses=problem_responses(400, 401, 409, 413, 422, 429)
    )
    async def pair(
        body: PairIn, request: Request, person: Annotated[Person, Depends(current_person)]
    ) -> dict[str, Any]:
        """The person approves the code their speaker shows: the device is theirs."""
        await count_attempt(request)
        wrong_key = f"pairing_wrong:{person.id}"
        await limits.check(wrong_key, limits_of.wrong_codes_per_person, what="wrong pairing codes")
        try:
            device = await devices.approve(person.id, body.code, name=body.name)
        except PairingCodeInvalid:
            await limits.hit(wrong_key, limits_of.wrong_codes_per_person, what="wrong pairing codes")
            raise
        return device.as_json()

    @router.get("", response_model=DevicesOut, responses=problem_responses(401, 422))
    async def listed(person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        """The person's paired devices, oldest first."""
        return {"devices": [d.as_json() for d in await devices.of(person.id)]}

    @router.delete("/{device_id}", status_code=204, responses=problem_responses(401, 404, 422))
    async def revoke(
        person: Annotated[Person, Depends(current_person)], device_id: Annotated[str, Path(max_length=64)]
    ) -> Response:
        """Remove a device: its token stops working everywhere and its live call ends (4401)."""
        await devices.revoke(person.id, device_id)
        return Response(status_code=204)

    return router
