"""The wallet as the chat uses it: charging each model call the moment it returns,
the balance guard before runs, signup grants, top-ups, and the `wallet.changed` event
every live client hears after a change.

The ledger domain keeps the money; this module ties it to people, runs and events. A
charge is shielded from cancellation: a client that disconnects mid-run is still
charged for every call that completed, and a retried request never charges twice
(each call's ref is `run:<run_id>:call:<n>`).

A slice of a call's speech is kept in the same outbox as the model calls (chat.outbox) from
the moment it ends until its charge is written; one the database missed is charged by the
sweep with `settle_outbox`, after a restart too, with the same ref `voice:<call>:<n>` and the
same time, so it is charged once (docs/money.md#voice-seconds).
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from chat.detached import run_detached
from chat.outbox import Outbox, PendingCall, PendingSlice
from chat.ports import BalanceSink, EventSink, RunStore
from chat.runs import RunGone
from ledger import (
    DayUsage,
    Entry,
    InsufficientBalance,
    Ledger,
    Prices,
    TokenUsage,
    Transaction,
    VoicePriceBook,
    VoiceUsage,
    call_cost,
    charge_extraction,
    charge_model_call,
    charge_voice_usage,
    format_rupiah,
    grant_signup,
    guard,
    top_up,
    user_account,
)
from telemetry import metrics

log = logging.getLogger(__name__)

# Voice slices kept for the sweep at most (one per exchange of a call): past this, a slice
# that cannot be charged is logged as lost rather than held in memory without bound.
VOICE_UNSETTLED_MAX = 10_000


def token_usage(usage: dict[str, int]) -> TokenUsage:
    return TokenUsage(
        prompt_tokens=usage.get("prompt_tokens", 0),
        cached_tokens=usage.get("cached_tokens", 0),
        tool_use_prompt_tokens=usage.get("tool_use_prompt_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        thinking_tokens=usage.get("thinking_tokens", 0),
    )


def _debited(transaction: Transaction | None) -> int:
    """What a charge took from the person (0 when nothing was charged)."""
    if transaction is None:
        return 0
    return -sum(p.amount_micros for p in transaction.postings if p.amount_micros < 0)


class Wallet:
    """Written against ports (the ledger, prices, runs, events), so it runs the same on
    PostgreSQL and on the in-memory twins."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        prices: Prices,
        runs: RunStore,
        events: EventSink,
        signup_grant_micros: int,
        voice_prices: VoicePriceBook | None = None,
        outbox: Outbox | None = None,
        balances: BalanceSink | None = None,
    ) -> None:
        self._ledger = ledger
        # Given where the balance can be read and announced in one statement (PostgreSQL);
        # otherwise `announce` reads it from the ledger, then publishes it.
        self._balances = balances
        self._prices = prices
        self._voice_prices = voice_prices
        self._runs = runs
        self._events = events
        self._signup_grant_micros = signup_grant_micros
        # Every call's usage from the moment it returns, and every voice slice's from the
        # moment it ends, until its charge is written.
        self.outbox = outbox or Outbox(None)

    async def balance_micros(self, person_id: str) -> int:
        return await self._ledger.balance_micros(user_account(person_id))

    async def guard(self, person_id: str) -> int:
        """Raise `InsufficientBalance` when the person's balance is at or below zero;
        otherwise return the balance."""
        return await guard(self._ledger, person_id=person_id)

    async def has_balance(self, person_id: str) -> bool:
        try:
            await self.guard(person_id)
        except InsufficientBalance:
            return False
        return True

    async def cost_of_call(self, *, model: str, usage: dict[str, int]) -> int:
        """What a model call that used `usage` costs now, in micro-rupiah; nothing is
        written (prices are cached in process, so this rarely reads the database)."""
        return await call_cost(self._prices, model=model, tokens=token_usage(usage), at=datetime.now(UTC))

    async def announce(self, person_id: str) -> None:
        """Tell the person's live clients their balance now (`wallet.changed`)."""
        if self._balances is not None:
            await self._balances.publish_balance(person_id)
            return
        balance = await self.balance_micros(person_id)
        await self._events.publish(
            person_id, "wallet.changed", {"balance_micros": balance, "balance": format_rupiah(balance)}
        )

    def called(
        self, *, person_id: str, run_id: str, index: int, agent: str, trigger: str, model: str, usage: dict[str, int]
    ) -> PendingCall:
        """A model call returned: kept in the outbox (chat.outbox) before anything else
        happens, so it is charged even if the database cannot take its record now."""
        call = PendingCall(person_id, run_id, index, agent, trigger, model, dict(usage), datetime.now(UTC))
        self.outbox.add(call)
        return call

    async def charge(self, call: PendingCall, *, announce: bool = True) -> int:
        """Record the call, charge it, and return its cost in micro-rupiah; idempotent (a
        call recorded or charged already is not again). The whole sequence runs to the end
        even if the request that started it is gone; a call that could not be charged stays
        in the outbox for the sweep. `announce=False`: the caller announces the balance
        itself, once for several charges (a turn does, when its last charge is written).
        A call whose run is not in the database is never charged (0)."""
        return await self._charge(call, announce=announce) or 0

    async def _charge(self, call: PendingCall, *, announce: bool) -> int | None:
        """`charge`; None when the call was dropped because its run is gone."""

        async def charge() -> int | None:
            try:
                await self._runs.record_call(
                    call.run_id, index=call.index, model=call.model, usage=call.usage, at=call.at
                )
            except RunGone:
                # No run, no receipt: a charge is written only with its recorded call
                # (docs/money.md#charging). Its run is gone for good (an erased person, or
                # a crash that lost it), so keeping the call would only retry it for ever.
                log.warning(
                    "model call %d of run %s not charged: its run is not in the database", call.index, call.run_id
                )
                return None
            return await self._settle(
                call.person_id,
                call.run_id,
                call.index,
                call.agent,
                call.trigger,
                call.model,
                call.usage,
                call.at,
                announce=announce,
            )

        try:
            cost = await run_detached(charge())
        except BaseException:
            self.outbox.failed(call)
            raise
        self.outbox.done(call)
        return cost

    async def charge_call(
        self,
        *,
        person_id: str,
        run_id: str,
        index: int,
        agent: str,
        trigger: str,
        model: str,
        usage: dict[str, int],
        announce: bool = True,
    ) -> int:
        """`called` and `charge` in one."""
        call = self.called(
            person_id=person_id, run_id=run_id, index=index, agent=agent, trigger=trigger, model=model, usage=usage
        )
        return await self.charge(call, announce=announce)

    async def _settle(
        self,
        person_id: str,
        run_id: str,
        index: int,
        agent: str,
        trigger: str,
        model: str,
        usage: dict[str, int],
        at: datetime,
        *,
        announce: bool = True,
    ) -> int:
        transaction = await charge_model_call(
            self._ledger,
            self._prices,
            person_id=person_id,
            run_id=run_id,
            call_index=index,
            agent=agent,
            trigger=trigger,
            model=model,
            tokens=token_usage(usage),
            at=at,
        )
        cost = _debited(transaction)
        await self._runs.record_cost(run_id, index=index, cost_micros=cost)
        if announce and transaction is not None and not transaction.replayed:
            await self.announce(person_id)
        return cost

    async def charge_extraction(
        self, *, person_id: str, first_message_id: str, messages: int, model: str, usage: dict[str, int]
    ) -> int:
        """Charge the model call that read a batch of the person's messages for their
        knowledge graph (chat.learning); the batch's first message names the charge, so a
        batch read again is charged once. Returns what it took (0 when replayed or free)."""
        transaction = await run_detached(
            charge_extraction(
                self._ledger,
                self._prices,
                person_id=person_id,
                first_message_id=first_message_id,
                messages=messages,
                model=model,
                tokens=token_usage(usage),
                at=datetime.now(UTC),
            )
        )
        if transaction is None or transaction.replayed:
            return 0
        await self.announce(person_id)
        return _debited(transaction)

    async def charge_voice(
        self, *, person_id: str, call_id: str, slice_index: int, channel: str, usage: VoiceUsage
    ) -> int:
        """Charge one slice of a call's speech (seconds heard, characters spoken). One that
        cannot be charged now is kept for the sweep (`settle_outbox`) and the error raised."""
        assert self._voice_prices is not None, "a wallet that bills calls is given voice prices"
        piece = PendingSlice(person_id, call_id, slice_index, channel, usage, datetime.now(UTC))
        self.outbox.add(piece)  # on disk before the charge is tried
        try:
            return await self._charge_slice(piece)
        except BaseException:
            self._keep_unsettled(piece)
            raise

    @property
    def voice_unsettled(self) -> int:
        """How many voice slices wait for the sweep."""
        return sum(isinstance(entry, PendingSlice) for entry in self.outbox.to_retry())

    def _keep_unsettled(self, piece: PendingSlice) -> None:
        if self.voice_unsettled < VOICE_UNSETTLED_MAX:
            self.outbox.failed(piece)
            return
        self.outbox.done(piece)  # dropped from memory, and from the file at its next compaction
        log.error("voice slice %s not charged and not kept: %d already wait", piece.ref, VOICE_UNSETTLED_MAX)

    async def _charge_slice(self, piece: PendingSlice) -> int:
        assert self._voice_prices is not None
        transaction = await run_detached(
            charge_voice_usage(
                self._ledger,
                self._voice_prices,
                person_id=piece.person_id,
                call_id=piece.call_id,
                slice_index=piece.slice_index,
                channel=piece.channel,
                usage=piece.usage,
                at=piece.at,
            )
        )
        self.outbox.done(piece)
        if transaction is not None and not transaction.replayed:
            # Counted once per slice: a replayed slice was counted when it was first charged.
            channel, usage = piece.channel, piece.usage
            metrics.voice_seconds_billed.inc(usage.stt_ms / 1000, channel=channel)
            metrics.voice_characters_billed.inc(usage.tts_characters, channel=channel)
            metrics.voice_cost.inc(_debited(transaction), channel=channel)
            await self.announce(piece.person_id)
        return _debited(transaction)

    async def settle_outbox(self) -> int:
        """Charge the calls this process could not charge when they returned, and those a
        process that is gone left in its outbox file, and the voice slices this process
        could not charge when they ended; returns how many were charged."""
        settled = 0
        for entry in self.outbox.to_retry():
            if isinstance(entry, PendingSlice):
                await self._charge_slice(entry)  # announces the balance itself
                settled += 1
            elif await self._charge(entry, announce=False) is not None:
                await self.announce(entry.person_id)
                settled += 1
        for path, entries in self.outbox.orphans():
            try:
                for entry in entries:
                    if isinstance(entry, PendingSlice):
                        await self._charge_slice(entry)
                        settled += 1
                    elif await self._charge(entry, announce=False) is not None:
                        settled += 1
            except BaseException:
                self.outbox.release(path)
                raise
            self.outbox.forget(path)
            for person_id in {e.person_id for e in entries if isinstance(e, PendingCall)}:
                await self.announce(person_id)
        self.outbox.compact()
        return settled

    async def settle_uncharged(self, *, returned_before: datetime | None = None) -> int:
        """Charge calls recorded but never charged (a crash between the two). Idempotent.
        `returned_before`: leave the calls that returned since, whose charge may still be
        on its way (a running turn's books write it a moment after its record)."""
        settled = 0
        for call in await self._runs.uncharged_calls(returned_before=returned_before):
            await self._settle(
                call.person_id, call.run_id, call.index, call.agent, call.trigger, call.model, call.usage, call.at
            )
            settled += 1
        return settled

    async def grant_signup(self, person_id: str) -> None:
        if self._signup_grant_micros > 0:
            await grant_signup(self._ledger, person_id=person_id, amount_micros=self._signup_grant_micros)
            await self.announce(person_id)

    async def top_up(self, person_id: str, *, amount_micros: int, ref: str, source: str) -> Transaction:
        transaction = await top_up(
            self._ledger, person_id=person_id, amount_micros=amount_micros, ref=ref, source=source
        )
        if not transaction.replayed:
            await self.announce(person_id)
        return transaction

    async def entries(self, person_id: str, *, before_id: int | None, limit: int) -> list[Entry]:
        return await self._ledger.entries(user_account(person_id), before_id=before_id, limit=limit)

    async def usage_for_day(self, person_id: str, *, day: date, zone: ZoneInfo) -> DayUsage:
        return await self._ledger.usage_for_day(user_account(person_id), day=day, zone=zone)
