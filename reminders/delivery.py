"""Delivering a note: claim it, wake Ava on it, record what happened, have the person told.

Reminders is a lower domain: it cannot run Ava itself, so it declares `Wake` and `Tell`
and the composition root passes in the chat's (`chat.wakes`), where what a fired note
becomes is shaped: this module only delivers, bounds and retries. That function must be
idempotent per note (the chat's keeps the note's thread message under a client id
derived from the note id and never starts a second run for it), which is what makes a
retry after a crash safe: the retry finds the note written and the run started, and
only finishes the bookkeeping. A delivery of a note that is already delivered or
cancelled is a no-op success (docs/agents.md#wake-notes-postera).

The person is told (live event, push) after the note is marked delivered, by whoever
marked it: at most once per note.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Literal, Protocol

from reminders.notes import Note, Outcome, first_line
from reminders.store import Notes
from telemetry import metrics

log = logging.getLogger(__name__)

# What a delivery request came to. `busy`: another worker holds the claim right now;
# `retrying`: this attempt failed and a later one is scheduled; `not_due`: too early.
Delivered = Literal["delivered", "done_before", "cancelled", "failed", "busy", "retrying", "not_due", "unknown"]


@dataclass(frozen=True, slots=True)
class Woken:
    """What waking Ava on a note did."""

    run_id: str | None  # the run it woke (None: the wallet was empty and no run started)
    reply: str  # what the person will read first ("" when nobody said anything)
    outcome: Outcome  # ran | silent | wallet_empty
    # Ava's reply as the model gave it, when this call ran her (on a call it carries the
    # emotion tags the voice needs); "" when an earlier attempt did.
    raw: str = ""


class Wake(Protocol):
    async def __call__(self, *, note: Note) -> Woken:
        """Write the note to the thread and run Ava on it, once per note however often called."""
        ...


class Tell(Protocol):
    async def __call__(self, *, note: Note, woken: Woken) -> None:
        """Tell the person a note was delivered (live event, push), once, after it is marked."""
        ...


@dataclass(frozen=True, slots=True)
class DeliveryLimits:
    lease_s: float = 300.0  # a claim older than this is a crashed worker's
    attempts_max: int = 5
    backoff_s: float = 10.0  # grows linearly with the attempt number
    early_s: float = 60.0  # how early an external queue's call may come and still count


class Delivery:
    def __init__(
        self, *, notes: Notes, wake: Wake, tell: Tell | None = None, limits: DeliveryLimits | None = None
    ) -> None:
        self._notes = notes
        self._wake = wake
        self._tell = tell
        self.limits = limits or DeliveryLimits()

    async def deliver(self, note_id: str) -> Delivered:
        """Deliver one note by id (the callback path): claim it, or say why not."""
        note = await self._notes.claim(note_id, lease_s=self.limits.lease_s, early_s=self.limits.early_s)
        if note is not None:
            return await self.run_claimed(note)
        current = await self._notes.get(note_id)
        if current is None:
            return "unknown"
        if current.status == "delivered":
            return "done_before"
        if current.status in ("cancelled", "failed"):
            return current.status
        return "busy" if current.status == "delivering" else "not_due"

    async def run_claimed(self, note: Note) -> Delivered:
        """Wake Ava on a note this worker has claimed, and finish it."""
        try:
            woken = await self._wake_holding(note)
        except Exception as exc:
            log.warning("delivering %s failed (attempt %d): %s", note.id, note.attempts, type(exc).__name__)
            after = await self._notes.attempt_failed(
                note.id,
                attempt=note.attempts,
                error=type(exc).__name__,
                attempts_max=self.limits.attempts_max,
                backoff_s=self.limits.backoff_s,
            )
            return "failed" if after is not None and after.status == "failed" else "retrying"
        preview = first_line(woken.reply) or None
        done = await self._notes.delivered(note.id, run_id=woken.run_id, outcome=woken.outcome, preview=preview)
        if done is None:
            return "done_before"  # a slower twin of this attempt finished it first
        late_s = (done.delivered_at - done.due_at).total_seconds() if done.delivered_at else 0.0
        metrics.wake_lateness_seconds.observe(max(late_s, 0.0))
        log.info(
            "note delivered",
            extra={
                "person": done.person_id,
                "note": done.id,
                "run": done.run_id,
                "outcome": done.outcome,
                "attempts": done.attempts,
                "late_ms": round(late_s * 1000),
            },
        )
        if self._tell is not None:
            try:
                await self._tell(note=done, woken=woken)
            except Exception:  # the note is delivered and in the thread; telling is best effort
                log.exception("telling the person about note %s failed", done.id)
        return "delivered"

    async def _wake_holding(self, note: Note) -> Woken:
        """Wake on `note`, renewing its claim's lease every third of it meanwhile: the lease
        lapses only when this process is gone (docs/data.md#wake-notes). Without it, a delivery
        that outlasted the lease was claimed and woken again by another process: the wake is
        idempotent, but the second attempt waited for the thread and could give up as failed
        a note the first had delivered."""
        renewing = asyncio.create_task(self._renew(note), name=f"renew-{note.id}")
        try:
            return await self._wake(note=note)
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing

    async def _renew(self, note: Note) -> None:
        every_s = self.limits.lease_s / 3
        while True:
            await asyncio.sleep(every_s)
            try:
                held = await self._notes.renew(note.id, attempt=note.attempts, lease_s=self.limits.lease_s)
            except Exception as exc:  # the database is away: the next renewal tries again
                log.warning("renewing the claim on %s failed: %s", note.id, type(exc).__name__)
                continue
            if not held:
                return  # taken over after a lapse; the wake is idempotent, so this one just finishes
