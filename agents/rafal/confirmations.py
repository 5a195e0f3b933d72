"""Risky actions wait for the person's yes (SPEC §6.1): a proposal, then a confirmation.

`send_email` and `add_event` with guests never act at once: they record a pending
action and tell the model to ask. `confirm_action` carries it out only when all of this
holds, checked here and not left to the model:

- the action is this person's, still pending and not expired (30 minutes);
- the run was started by the person or by Ava on their behalf, never by a wake note;
- the person's latest message in the thread was written *after* the proposal, and it is
  a plain yes ("yes", "ya", "ok, send it") with no no in it.

Text inside an email or an event can therefore never confirm anything: it is not the
person's message, and it arrives in the same turn as the proposal at the earliest. A
pending action runs at most once (the claim is one conditional UPDATE).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import asyncpg

from agents.errors import ToolError

ActionKind = Literal["send_email", "add_event"]
PROPOSAL_TTL = timedelta(minutes=30)
# The person's latest message in the thread and when it was written, or None.
PersonSaid = Callable[[str], Awaitable[tuple[str, datetime] | None]]

_YES_WORDS = (
    "yes yeah yep yup sure ok okay send confirm confirmed go correct right fine please "
    "ya iya iyah yoi boleh oke sip kirim kirimin betul benar lanjut gas setuju silakan"
)
_NO_WORDS = (
    "no nope not don't dont cancel stop wait never change edit but "
    "jangan nggak gak enggak tidak tak batal batalin tunggu ganti ubah tapi"
)
_YES, _NO = frozenset(_YES_WORDS.split()), frozenset(_NO_WORDS.split())

_INSERT_SQL = """
INSERT INTO pending_actions (id, person_id, kind, payload, account, proposed_run_id, expires_at)
VALUES ($1, $2, $3, $4::jsonb, $5, $6, clock_timestamp() + $7::interval)
RETURNING proposed_at
"""
_COLUMNS = "id, kind, payload, account, proposed_at, expires_at, status, expires_at < clock_timestamp() AS expired"
_GET_SQL = f"SELECT {_COLUMNS} FROM pending_actions WHERE person_id = $1 AND id = $2"
_OPEN_SQL = f"""
SELECT {_COLUMNS} FROM pending_actions
WHERE person_id = $1 AND status = 'pending' AND expires_at > clock_timestamp()
ORDER BY proposed_at DESC LIMIT 10
"""
_DECIDE_SQL = """
UPDATE pending_actions SET status = $3, decided_at = clock_timestamp(), outcome = $4::jsonb
WHERE person_id = $1 AND id = $2 AND status = $5
RETURNING id
"""


class ConfirmationMissing(ToolError):
    code = "confirmation_missing"


@dataclass(frozen=True, slots=True)
class PendingAction:
    id: str
    kind: ActionKind
    payload: dict[str, Any]
    account: str
    proposed_at: datetime
    expires_at: datetime
    status: str
    expired: bool


def is_plain_yes(text: str) -> bool:
    words = {w.strip(".,!?;:'\"()") for w in text.lower().replace("\u2019", "'").split()}
    words.discard("")
    return bool(words & _YES) and not (words & _NO) and len(words) <= 12


def _action(row: asyncpg.Record) -> PendingAction:
    return PendingAction(
        row["id"],
        row["kind"],
        dict(row["payload"]),
        row["account"],
        row["proposed_at"],
        row["expires_at"],
        row["status"],
        row["expired"],
    )


class PendingActions:
    """The store of proposals, and the one gate every confirmation passes."""

    def __init__(self, pool: asyncpg.Pool, *, person_said: PersonSaid) -> None:
        self._pool = pool
        self._person_said = person_said

    async def propose(
        self, *, person_id: str, kind: ActionKind, payload: dict[str, Any], account: str, run_id: str
    ) -> PendingAction:
        action_id = f"act_{secrets.token_hex(8)}"
        await self._pool.fetchval(_INSERT_SQL, action_id, person_id, kind, payload, account, run_id, PROPOSAL_TTL)
        row = await self._pool.fetchrow(_GET_SQL, person_id, action_id)
        assert row is not None
        return _action(row)

    async def open(self, *, person_id: str) -> list[PendingAction]:
        return [_action(r) for r in await self._pool.fetch(_OPEN_SQL, person_id)]

    async def claim(self, *, person_id: str, action_id: str, by_wake_note: bool) -> PendingAction:
        """The action, now marked done, if the person confirmed it; otherwise a hint why not."""
        row = await self._pool.fetchrow(_GET_SQL, person_id, action_id)
        if row is None:
            raise ToolError(f"There is no pending action {action_id!r}; call pending_actions to see what waits.")
        action = _action(row)
        if action.status != "pending":
            raise ToolError(f"That action is already {action.status}; do not do it again.")
        if action.expired:
            raise ConfirmationMissing("That proposal expired. Propose it again and ask the person once more.")
        if by_wake_note:
            raise ConfirmationMissing("A wake note cannot confirm anything; ask the person and wait for their yes.")
        said = await self._person_said(person_id)
        if said is None or said[1] <= action.proposed_at:
            raise ConfirmationMissing("The person has not answered the proposal yet. Ask them and wait for their yes.")
        if not is_plain_yes(said[0]):
            raise ConfirmationMissing(
                "The person's latest message is not a plain yes. If they want changes, propose again with the "
                "changes; if they said no, call cancel_action."
            )
        if await self._pool.fetchval(_DECIDE_SQL, person_id, action_id, "done", None, "pending") is None:
            raise ToolError("That action was just handled by another request; do not do it again.")
        return action

    async def record(self, *, person_id: str, action_id: str, ok: bool, outcome: dict[str, Any]) -> None:
        """What carrying out a claimed action gave (a failure is kept for the audit)."""
        await self._pool.execute(
            "UPDATE pending_actions SET status = $3, outcome = $4::jsonb WHERE person_id = $1 AND id = $2",
            person_id,
            action_id,
            "done" if ok else "failed",
            outcome,
        )

    async def cancel(self, *, person_id: str, action_id: str) -> bool:
        return await self._pool.fetchval(_DECIDE_SQL, person_id, action_id, "cancelled", None, "pending") is not None
