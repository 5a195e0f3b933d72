"""Wallet endpoints (docs/money.md#reading-the-wallet): the balance, entries with receipts, a day's usage in the
person's zone, and the operator's top-up door (bearer ADMIN_API_KEY; absent when unset)."""

import hmac
from datetime import date, datetime
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Header, Query
from pydantic import BaseModel, ConfigDict, Field

from chat import AdminDisabled, DateInvalid, NotFound, Person, Unauthorized, Wallet
from ledger import AMOUNT_MICROS_MAX, ENTRIES_PAGE_MAX, format_rupiah, user_account
from web.api import SEQ_MAX, ChatApi, current_person_dependency, current_zone_dependency
from web.edge import problem_responses


class TopUp(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    user_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$", description="A person id (usr_…).")
    amount_micros: int = Field(gt=0, le=AMOUNT_MICROS_MAX, description="Micro-rupiah (1 IDR = 1,000,000).")
    ref: str = Field(min_length=1, max_length=100, pattern=r"^[!-~]+$", description="Idempotency key.")


# The days a usage report may name: a zone's day bounds are computed in both directions.
DAY_MIN = date(1970, 1, 1)
DAY_MAX = date(9000, 12, 31)


def build_wallet_router(api: ChatApi, wallet: Wallet, *, admin_api_key: str | None) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["wallet"])
    current_person = current_person_dependency(api)
    current_zone = current_zone_dependency(api, current_person)

    @router.get("/wallet", responses=problem_responses(401, 422))
    async def balance(person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        micros = await wallet.balance_micros(person.id)
        return {"balance_micros": micros, "balance": format_rupiah(micros), "currency": "IDR"}

    @router.get("/wallet/entries", responses=problem_responses(401, 422))
    async def entries(
        person: Annotated[Person, Depends(current_person)],
        before: Annotated[int | None, Query(ge=1, le=SEQ_MAX)] = None,
        limit: Annotated[int, Query(ge=1, le=ENTRIES_PAGE_MAX)] = 50,
    ) -> dict[str, Any]:
        """Newest first; pass the last entry's id as `before` for the next page."""
        rows = await wallet.entries(person.id, before_id=before, limit=limit)
        return {"entries": [e.as_json() for e in rows], "next_before": rows[-1].id if len(rows) == limit else None}

    @router.get("/wallet/usage", responses=problem_responses(400, 401, 422))
    async def usage(
        person: Annotated[Person, Depends(current_person)],
        zone: Annotated[ZoneInfo, Depends(current_zone)],
        day: Annotated[date | None, Query(alias="date", description="YYYY-MM-DD; today by default")] = None,
    ) -> dict[str, Any]:
        """Tokens and cost of one local day in the person's zone."""
        chosen = day or datetime.now(zone).date()
        if not DAY_MIN <= chosen <= DAY_MAX:
            raise DateInvalid(f"date must lie between {DAY_MIN} and {DAY_MAX}.")
        return (await wallet.usage_for_day(person.id, day=chosen, zone=zone)).as_json()

    @router.post("/admin/topups", tags=["admin"], responses=problem_responses(400, 401, 404, 409, 413, 422))
    async def admin_top_up(body: TopUp, authorization: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        """Add money to a person's wallet; the same ref again tops up once."""
        if not admin_api_key:
            raise AdminDisabled("Set ADMIN_API_KEY to switch the admin API on.")
        scheme, _, key = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), admin_api_key.encode()):
            raise Unauthorized("The admin key is missing or wrong.")
        if await api.people.get(body.user_id) is None:
            raise NotFound(f"No person has the id {body.user_id!r}.")
        transaction = await wallet.top_up(
            body.user_id, amount_micros=body.amount_micros, ref=body.ref, source="admin_api"
        )
        micros = await wallet.balance_micros(body.user_id)
        return {
            "transaction_id": transaction.id,
            "replayed": transaction.replayed,
            "account": user_account(body.user_id),
            "balance_micros": micros,
        }

    return router
