"""Risky actions wait for the person's yes (docs/agents.md#risky-actions): a proposal, then a confirmation.

Sending email, adding an event with guests (Rafal) and commanding a lock or a door
opener (Zee) never act at once: they record a pending action and tell the model to ask.
`confirm_action` carries it out only when all of this holds, checked here and not left
to the model:

- the action is this person's, proposed by this agent, still pending and not expired
  (30 minutes);
- the run was started by the person or by Ava on their behalf, never by a wake note;
- the person's latest message in the thread was written *after* the proposal, and it is
  a plain yes ("yes", "ya", "ok, send it") with no no in it;
- nothing else was proposed (in another turn) between the proposal and that yes, which
  the yes might be answering instead.

Text inside an email or an event can therefore never confirm anything: it is not the
person's message, and it arrives in the same turn as the proposal at the earliest. A
pending action runs at most once (the claim is one conditional UPDATE).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, Literal, TypeVar

import asyncpg

from agents.errors import ToolError
from agents.integrations.accounts import Account
from agents.integrations.arguments import required_text
from agents.model import ToolSpec
from agents.tools import object_schema

ActionKind = Literal["send_email", "add_event", "device_commands"]
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
INSERT INTO pending_actions (id, person_id, agent, kind, payload, account, proposed_run_id, expires_at)
VALUES ($1, $2, $8, $3, $4::jsonb, $5, $6, clock_timestamp() + $7::interval)
RETURNING proposed_at
"""
_COLUMNS = (
    "id, kind, payload, account, proposed_run_id, proposed_at, expires_at, status, "
    "expires_at < clock_timestamp() AS expired"
)
_GET_SQL = f"SELECT {_COLUMNS} FROM pending_actions WHERE person_id = $1 AND id = $2 AND agent = $3"
_OPEN_SQL = f"""
SELECT {_COLUMNS} FROM pending_actions
WHERE person_id = $1 AND agent = $2 AND status = 'pending' AND expires_at > clock_timestamp()
ORDER BY proposed_at DESC LIMIT 10
"""
# A later question the person's yes may be answering instead: a pending proposal of this
# agent from another run, made after this one and before the yes.
_ASKED_SINCE_SQL = """
SELECT EXISTS (
    SELECT 1 FROM pending_actions
    WHERE person_id = $1 AND agent = $2 AND status = 'pending' AND expires_at > clock_timestamp()
      AND proposed_run_id <> $3 AND proposed_at > $4 AND proposed_at < $5)
"""
# Actions that expired more than $1 seconds ago (done, failed, cancelled or never
# confirmed: none can run any more), at most $2 of them (chat.retention).
_PRUNE_SQL = """
DELETE FROM pending_actions WHERE id IN (
    SELECT id FROM pending_actions WHERE expires_at < clock_timestamp() - make_interval(secs => $1) LIMIT $2)
"""
_DECIDE_SQL = """
UPDATE pending_actions SET status = $3, decided_at = clock_timestamp(), outcome = $4::jsonb
WHERE person_id = $1 AND id = $2 AND status = $5 AND agent = $6
RETURNING id
"""


class ConfirmationMissing(ToolError):
    type = "confirmation_missing"


@dataclass(frozen=True, slots=True)
class PendingAction:
    id: str
    kind: ActionKind
    payload: dict[str, Any]
    account: str
    proposed_run_id: str
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
        row["proposed_run_id"],
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
        self, *, person_id: str, agent: str, kind: ActionKind, payload: dict[str, Any], account: str, run_id: str
    ) -> PendingAction:
        action_id = f"act_{secrets.token_hex(8)}"
        await self._pool.fetchval(
            _INSERT_SQL, action_id, person_id, kind, payload, account, run_id, PROPOSAL_TTL, agent
        )
        row = await self._pool.fetchrow(_GET_SQL, person_id, action_id, agent)
        assert row is not None
        return _action(row)

    async def open(self, *, person_id: str, agent: str) -> list[PendingAction]:
        return [_action(r) for r in await self._pool.fetch(_OPEN_SQL, person_id, agent)]

    async def claim(self, *, person_id: str, agent: str, action_id: str, by_wake_note: bool) -> PendingAction:
        """The action, now marked done, if the person confirmed it; otherwise a hint why not."""
        row = await self._pool.fetchrow(_GET_SQL, person_id, action_id, agent)
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
        asked_since = await self._pool.fetchval(
            _ASKED_SINCE_SQL, person_id, agent, action.proposed_run_id, action.proposed_at, said[1]
        )
        if asked_since:
            raise ConfirmationMissing(
                "Something else was proposed after this and the person's yes may be for that. Ask again about "
                "this one, or cancel it."
            )
        if await self._pool.fetchval(_DECIDE_SQL, person_id, action_id, "done", None, "pending", agent) is None:
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

    async def cancel(self, *, person_id: str, agent: str, action_id: str) -> bool:
        cancelled = await self._pool.fetchval(_DECIDE_SQL, person_id, action_id, "cancelled", None, "pending", agent)
        return cancelled is not None


P = TypeVar("P")


class ConfirmingTools(Generic[P]):
    """The proposal and the three confirmation tools every agent with risky actions shares
    (`pending_actions`, `confirm_action`, `cancel_action`); a subclass says how to carry
    out each kind of action it proposes."""

    agent: str

    def __init__(
        self,
        choose: Callable[[], Awaitable[Account[P]]],
        pending: PendingActions,
        *,
        person_id: str,
        run_id: str,
        by_wake: bool,
    ) -> None:
        self.choose, self.pending = choose, pending
        self.person_id, self.run_id, self.by_wake = person_id, run_id, by_wake

    async def _carry_out(self, account: Account[P], action: PendingAction) -> dict[str, Any]:
        raise NotImplementedError

    async def propose(
        self, account: Account[P], kind: ActionKind, payload: dict[str, Any], *, what: str
    ) -> dict[str, Any]:
        action = await self.pending.propose(
            person_id=self.person_id,
            agent=self.agent,
            kind=kind,
            payload=payload,
            account=account.kind,
            run_id=self.run_id,
        )
        return {
            "account": action.account,
            "status": "awaiting_confirmation",
            "action_id": action.id,
            "proposal": action.payload,
            "next": f"Nothing is done yet. Show the person {what} and ask them to say yes. Only after their yes, "
            "call confirm_action with this action_id.",
        }

    async def pending_actions(self, _: dict[str, Any]) -> dict[str, Any]:
        actions = await self.pending.open(person_id=self.person_id, agent=self.agent)
        return {
            "pending": [
                {"action_id": a.id, "kind": a.kind, "proposal": a.payload, "account": a.account} for a in actions
            ]
        }

    async def confirm_action(self, args: dict[str, Any]) -> dict[str, Any]:
        action_id = required_text(args, "action_id", chars_max=40)
        account = await self.choose()
        action = await self.pending.claim(
            person_id=self.person_id, agent=self.agent, action_id=action_id, by_wake_note=self.by_wake
        )
        try:
            if action.account != account.kind:
                raise ToolError("The person's link changed since the proposal (sandbox or live); propose it again.")
            outcome = await self._carry_out(account, action)
        except ToolError as exc:
            await self.pending.record(
                person_id=self.person_id, action_id=action.id, ok=False, outcome={"error": str(exc)}
            )
            raise
        await self.pending.record(person_id=self.person_id, action_id=action.id, ok=True, outcome=outcome)
        return {"account": account.kind, "done": action.kind, **outcome}

    async def cancel_action(self, args: dict[str, Any]) -> dict[str, Any]:
        action_id = required_text(args, "action_id", chars_max=40)
        if not await self.pending.cancel(person_id=self.person_id, agent=self.agent, action_id=action_id):
            raise ToolError(f"There is no pending action {action_id!r} to cancel.")
        return {"cancelled": action_id}


_ACTION_ID = object_schema({"action_id": {"type": "string"}}, ("action_id",))
CONFIRMATION_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "pending_actions",
        "List the actions you proposed earlier that still wait for the person's yes.",
        object_schema({}),
    ),
    ToolSpec(
        "confirm_action",
        "Carry out a proposed action after the person said yes to it in their latest message. Refused if they "
        "have not answered yet or did not clearly say yes.",
        _ACTION_ID,
    ),
    ToolSpec("cancel_action", "Drop a proposed action the person said no to.", _ACTION_ID),
)


async def prune_actions(pool: asyncpg.Pool, *, older_than_s: float, limit: int) -> int:
    """Delete up to `limit` proposals that expired more than `older_than_s` ago."""
    status: str = await pool.execute(_PRUNE_SQL, older_than_s, limit)
    return int(status.split()[-1])
