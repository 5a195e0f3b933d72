"""A turn: the person's message, the runs it starts, and everything they write.

This is where routing, the thread and the agent runtime meet. A turn holds the person's
thread from the moment their message is written until the last run finishes, so turns
from several doors (web tabs, a call, a waking note) queue instead of interleaving. Ava
hands work on only through her handoff tools: the tool writes her bare tag, runs the
specialist with `trigger=ava` and returns its reply to her. A run that fails is
recorded as failed with a stable error code; it never takes the person's message with it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, cast
from zoneinfo import ZoneInfo

from agents import (
    AGENTS,
    AVA,
    POSTERA,
    AgentSpec,
    Channel,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    RunContext,
    RunLimitExceeded,
    RunLimits,
    Segment,
    Session,
    SpokenReply,
    StopSignal,
    ThreadMessage,
    Tool,
    Toolbox,
    ToolError,
    Trigger,
    Usage,
    compose,
    generate_streaming,
    parse_spoken,
    run_agent,
    to_contents,
    window,
)
from chat.blank import is_blank, is_unkeepable
from chat.bookkeeping import Apart, Books
from chat.errors import MessageBlank, MessageTooLong, TextInvalid
from chat.people import Person
from chat.ports import RunStore, ThreadStore
from chat.routing import route
from chat.runs import Run
from chat.speaking import Speaking
from chat.speculation import DROPPED_MAX, DROPPED_PEOPLE_MAX, Speculation, differs, words_of
from chat.threads import Message
from chat.wallet import Wallet
from reminders import Woken
from telemetry import here, metrics, span

log = logging.getLogger(__name__)

TEXT_CHARS_MAX = 4_000
# How many recent messages are read before the token budget picks the window.
_HISTORY_ROWS_MAX = 200
# How long a turn waits for what is known about the person before running without it.
_FACTS_TIMEOUT_S = 1.0
# How far back a call's end looks for an agent message to hang dropped guesses' billing run on.
_BILLING_ANCHOR_LOOKBACK = 20


# How a run failed: a stable error code and a sentence for the person.
_Failure = tuple[str, str]


class FactLookup(Protocol):
    """Facts about the person relevant to a text, as sentences for the session layer."""

    async def __call__(self, *, person_id: str, text: str) -> Sequence[str]: ...


@dataclass(frozen=True, slots=True)
class TurnResult:
    messages: list[Message]
    runs: list[Run]
    # On a call: what the agent the person spoke to says back, as sentences with emotions.
    spoken: SpokenReply | None = None

    def as_json(self) -> dict[str, Any]:
        return {"messages": [m.as_json() for m in self.messages], "runs": [r.as_json() for r in self.runs]}


class _WalletEmptyMidRun(Exception):
    """The turn's calls so far have used up what the wallet held when it began: the run
    stops before its next model call (docs/money.md#the-guard), so a turn takes the
    wallet at most one model call past zero."""


class _WalletEmptyAtHandoff(Exception):
    """Ava tried to hand on but the wallet is empty: her run stops here, and she says why
    in a reply of our own, so no further model call is made (or charged) for it."""

    def __init__(self, specialist: AgentSpec) -> None:
        super().__init__(f"the wallet is empty; {specialist.name} cannot run")
        self.specialist = specialist


def wallet_spent_reply(channel: Channel) -> str:
    """Our short reply when a run stops mid-way because the wallet ran out."""
    text = "Your wallet just ran out, so I had to stop there. Top it up and ask me again."
    return text if channel == "text" else f"{text} #guilty#"


def wallet_empty_reply(specialist: AgentSpec, channel: Channel) -> str:
    """Ava's short explanation when a turn is refused at the handoff (voice: with the
    emotion tag her voice uses, which the thread keeps as metadata)."""
    text = f"Your wallet is empty, so I can't ask {specialist.display_name} right now. Top it up and ask me again."
    return text if channel == "text" else f"{text} #guilty#"


@dataclass(slots=True)
class _Turn:
    """What every run of one turn shares, and what it wrote: the turn's response is built
    from these rather than read back, and the thread is read once per turn (the turn holds
    the thread, so nobody else writes to it meanwhile)."""

    person: Person
    channel: Channel
    zone: ZoneInfo
    origin: Message
    # Every run in the order it started, each replaced by its finished row when it ends.
    runs: list[Run] = field(default_factory=list)
    # The origin and every message the turn's runs wrote, in seq order.
    written: list[Message] = field(default_factory=list)
    # The newest messages of the thread, read at the turn's first run, then kept up to date.
    recent: list[Message] | None = None
    # Each history line as the agents read it (message id -> line): formatted once, and
    # kept with the thread's recent page for the person's next turns (chat.recent).
    rendered: dict[str, str] = field(default_factory=dict)
    # Looked up once per turn, for the message that started it (begun before the turn had
    # its thread, when the turn came from the person: `Turns.post`).
    facts: tuple[str, ...] | None = None
    facts_lookup: asyncio.Task[tuple[str, ...]] | None = None
    # The charges and tool records of its runs, written beside the turn (chat.bookkeeping).
    books: Books = field(default_factory=Books)
    charged: bool = False  # a model call of the turn was charged (so its balance is announced)
    # What the charges queued on the books and not yet written will take from the wallet;
    # None once a call's cost could not be worked out (a handoff then waits for the books).
    unsettled_micros: int | None = 0
    # The balance read under the thread lock when the turn began, and what its model calls
    # have cost since (priced in process; None once a cost is unknown): before each model
    # call the turn checks the first less the second is above zero (docs/money.md#the-guard).
    balance_micros: int = 0
    spent_micros: int | None = 0
    # On a call: told what the person will hear as soon as the lead agent has said it,
    # before the turn writes it down and settles its charges (None: told nothing early).
    on_reply: Callable[[SpokenReply], None] | None = None
    # On a call that speaks as it goes: told each sentence the moment it is finished (the
    # lead's, and a specialist's answer said as it is); `stop` cuts the answer being spoken.
    say: Callable[[Segment], None] | None = None
    stop: StopSignal | None = None
    lead_speaking: Speaking | None = None  # set when the lead's run speaks as it goes
    # On a call: the lead's first model call, begun on the person's words before their
    # turn ended (chat.speculation); adopted by the lead's first call, or dropped and billed.
    speculation: Speculation | None = None

    def wrote(self, message: Message) -> None:
        self.written.append(message)
        if self.recent is not None:
            self.recent = [*self.recent, message][-_HISTORY_ROWS_MAX:]

    def started(self, run: Run) -> None:
        self.runs.append(run)

    def finished(self, run: Run) -> None:
        self.runs = [run if r.id == run.id else r for r in self.runs]

    def result(self) -> TurnResult:
        return TurnResult(messages=list(self.written), runs=list(self.runs))


class _Recorder:
    """Writes down what a run does as it does it: each model call's charge and each tool
    call, queued on the turn's books in the order they happened (the run goes on meanwhile)."""

    def __init__(self, runs: RunStore, wallet: Wallet, turn: _Turn, run: Run) -> None:
        self._runs = runs
        self._wallet = wallet
        self._turn = turn
        self._run = run
        # A charge or tool record that could not be written fails the run when it ends
        # (its reply may already be out), as a charge failing inside the run used to.
        self.failed = False
        self.charged = False
        # Dropped speculative calls recorded ahead of the run's own (chat.speculation): the
        # run's calls are numbered after them.
        self.ahead = 0

    def _write(
        self,
        work: Callable[[], Awaitable[object]],
        *,
        then: Callable[[], None] | None = None,
        unwritten: Callable[[], None] | None = None,
    ) -> None:
        """Queue `work` on the turn's books; `then` runs once it is written, `unwritten` if
        it never runs."""

        async def tracked() -> None:
            try:
                await work()
            except Exception:
                log.exception("run %s: a charge or tool record could not be written", self._run.id)
                self.failed = True
            else:
                if then is not None:
                    then()

        self._turn.books.write(tracked, unwritten=unwritten)

    async def model_called(self, *, index: int, model: str, usage: Usage) -> None:
        charge, written, unwritten = await self._called(index + self.ahead, model, usage)
        # A charge the books never start (no connection for them) is the sweep's at once.
        self._write(charge, then=written, unwritten=unwritten)

    def dropped(self, speculation: Speculation) -> None:
        """A speculative first call the run did not adopt: recorded as one of the run's
        calls, ahead of its own, and charged what it consumed, once it has said (its stream
        reports at its next piece). Waited for on the books, in order, so the run's end
        carries its cost; in the outbox from the moment its usage is known."""
        self.ahead += 1
        index = self.ahead

        async def bill() -> object:
            consumed = await speculation.consumed()
            if consumed is None:
                log.warning("run %s: a dropped speculative call reported no usage", self._run.id)
                return None
            charge, written, _ = await self._called(index, consumed.model, consumed.usage)
            result = await charge()
            written()
            return result

        self._write(bill)

    async def _called(
        self, index: int, model: str, usage: Usage
    ) -> tuple[Callable[[], Awaitable[object]], Callable[[], None], Callable[[], None]]:
        """A model call of the run returned: counted, priced, in the outbox; returns its
        charge, what to do once it is written, and what to do if it never is."""
        run, spent, turn = self._run, usage.as_dict(), self._turn
        try:
            cost: int | None = await self._wallet.cost_of_call(model=model, usage=spent)
        except Exception as exc:  # no price: the charge itself will say so; a handoff waits for it
            log.warning("run %s: the cost of call %d is unknown: %s", run.id, index, type(exc).__name__)
            cost = None
        turn.unsettled_micros = None if cost is None or turn.unsettled_micros is None else turn.unsettled_micros + cost
        _count_call(model, spent, cost)
        turn.spent_micros = None if cost is None or turn.spent_micros is None else turn.spent_micros + cost

        def written() -> None:
            if cost is not None and turn.unsettled_micros is not None:
                turn.unsettled_micros -= cost

        # In the outbox before the charge is queued: a charge the database cannot take now
        # is still made, by the sweep, once it can (docs/money.md#charging).
        call = self._wallet.called(
            person_id=turn.person.id,
            run_id=run.id,
            index=index,
            agent=run.agent,
            trigger=run.trigger,
            model=model,
            usage=spent,
        )
        # The turn announces the balance once, after its last charge.
        where = here()

        async def charge() -> object:
            with span("charge", within=where, run=run.id, index=index, model=model):
                return await self._wallet.charge(call, announce=False)

        self.charged = True
        return charge, written, lambda: self._wallet.outbox.failed(call)

    async def tool_called(self, *, name: str, args: dict[str, Any], result: dict[str, Any]) -> None:
        run_id = self._run.id
        self._write(lambda: self._runs.record_tool(run_id, name=name, args=args, result=result))


# The kinds of tokens /metrics counts (Usage's total and tool-prompt tokens are sums of these).
_TOKEN_KINDS = {
    "prompt_tokens": "prompt",
    "cached_tokens": "cached",
    "output_tokens": "output",
    "thinking_tokens": "thinking",
}


def _count_call(model: str, usage: dict[str, int], cost_micros: int | None) -> None:
    """One model call on /metrics: its tokens by kind and, when priced, its cost."""
    for field_name, kind in _TOKEN_KINDS.items():
        if usage.get(field_name):
            metrics.model_tokens.inc(usage[field_name], model=model, kind=kind)
    if cost_micros:
        metrics.model_cost.inc(cost_micros, model=model)


class _Metered:
    """The model as a turn's runs call it: each call asks first whether the wallet still
    holds something (`Turns._may_call`), so a run stops before a call it could not pay for."""

    def __init__(
        self,
        model: Model,
        may_call: Callable[[], Awaitable[bool]],
        *,
        turn: _Turn | None = None,
        dropped: Callable[[Speculation], None] | None = None,
    ) -> None:
        self._model = model
        self._may_call = may_call
        # The lead's run: its first call may be the speculation begun on the person's words.
        self._turn = turn
        self._dropped = dropped

    def _speculation(self) -> Speculation | None:
        """The turn's speculation, taken by the first call that asks (never by a later one)."""
        if self._turn is None or self._turn.speculation is None:
            return None
        speculation, self._turn.speculation = self._turn.speculation, None
        return speculation

    def _drop(self, speculation: Speculation) -> None:
        speculation.drop()
        if self._dropped is not None:
            self._dropped(speculation)

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        if not await self._may_call():
            raise _WalletEmptyMidRun("the wallet is empty")
        if (speculation := self._speculation()) is not None:
            self._drop(speculation)  # a speculation is only adopted by a call that speaks
        return await self._model.generate(request=request)

    async def stream(
        self, *, request: ModelRequest, on_text: Callable[[str], None], stop: StopSignal | None = None
    ) -> ModelResponse:
        """The same call, its text heard as it arrives (streamed when the model can)."""
        if not await self._may_call():
            raise _WalletEmptyMidRun("the wallet is empty")
        if (speculation := self._speculation()) is not None:
            if speculation.request == request:
                # The very request this call would send, in flight since the person's words
                # were heard: its answer is this call's (docs/agents.md#a-speculative-first-call).
                metrics.speculations.inc(outcome="adopted")
                return await speculation.adopt(on_text, stop)
            # What differed, first part first: a guess should differ only when the turn
            # must see something it did not (chat.speculation).
            part = differs(speculation.request, request)
            assert part is not None, "unequal requests differ somewhere"
            metrics.speculations.inc(outcome="differed")
            metrics.speculations_differed.inc(part=part)
            log.info("a speculative first call differed from its turn's in its %s", part, extra={"part": part})
            self._drop(speculation)
        return await generate_streaming(self._model, request, on_text, stop)


def _unsaid(turn: _Turn, reply: str) -> SpokenReply:
    """The lead's reply as the voice still has to say it: the sentences not said as the
    model wrote them (all of them when the turn did not speak as it went; a reply of ours,
    such as the empty wallet's, was never streamed), and whether it ends the call."""
    spoken = parse_spoken(reply)
    if turn.lead_speaking is None:
        return spoken
    said = [segment.text for segment in turn.lead_speaking.said]
    left: list[Segment] = []
    for segment in spoken.segments:
        if segment.text in said:
            said.remove(segment.text)
        else:
            left.append(segment)
    return SpokenReply(tuple(left), spoken.end_call)


def check_text(text: str) -> str:
    if len(text) > TEXT_CHARS_MAX:
        raise MessageTooLong(f"A message holds at most {TEXT_CHARS_MAX} characters; this one has {len(text)}.")
    if is_unkeepable(text):
        raise TextInvalid("The text holds a NUL character or half of a surrogate pair; send plain UTF-8.")
    if is_blank(text):
        raise MessageBlank("Write something before sending.")
    return text


class Turns:
    def __init__(
        self,
        *,
        threads: ThreadStore,
        runs: RunStore,
        wallet: Wallet,
        model: Model,
        model_name: Callable[[str], str],
        toolbox: Toolbox,
        history_tokens_max: int,
        thread_wait_s: float,
        limits: RunLimits | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        facts: FactLookup | None = None,
        apart: Apart | None = None,
    ) -> None:
        self._threads = threads
        self._runs = runs
        self._wallet = wallet
        self._model = model
        self._model_name = model_name
        self._toolbox = toolbox
        self._history_tokens_max = history_tokens_max
        self._thread_wait_s = thread_wait_s
        self._limits = limits or RunLimits()
        # The person's "now" as the agents read it; a scenario run (avagenc eval) sets its own.
        self._clock = clock
        self._facts = facts
        # Where a turn's bookkeeping writes run (chat.bookkeeping); None: where the turn's do.
        self._apart = apart
        # On calls (chat.speculation): each person's first call begun on their words, and
        # those dropped, waiting to be billed with the person's next turn or the call's end.
        self._speculations: dict[str, Speculation] = {}
        self._dropped: dict[str, list[Speculation]] = {}
        self._posting: dict[str, int] = {}  # turns of each person under way in this process
        # Guesses being made, by person: a turn that begins meanwhile takes the entry away,
        # so the guess, made for the thread as it was, is never registered after it.
        self._guessing: dict[str, object] = {}

    async def foresee(self, person: Person, *, text: str, channel: Channel, zone: ZoneInfo) -> bool:
        """The person's words as heard so far on a call, before their turn has ended:
        begin the turn's first model call on them (chat.speculation), with the request the
        turn would send if it ended now on these words. The turn that does end adopts it
        when its words are the same (`post`); anything else drops it, and it is billed with
        the person's next turn. Nothing is written. False when none was begun: the same
        words are already being foreseen, a turn of theirs is under way (the thread will
        change), the words are not a message, a lead would prime tools first, or the wallet
        is empty."""
        current = self._speculations.get(person.id)
        if current is not None and current.words == words_of(text):
            return False
        token = self._guessing[person.id] = object()
        try:
            return await self._foresee(person, text=text, channel=channel, zone=zone, token=token)
        finally:
            if self._guessing.get(person.id) is token:
                del self._guessing[person.id]

    async def _foresee(self, person: Person, *, text: str, channel: Channel, zone: ZoneInfo, token: object) -> bool:
        def overtaken() -> bool:
            """A turn began while the guess was being made (it may have ended already), or
            another guess began after this one."""
            return bool(self._posting.get(person.id)) or self._guessing.get(person.id) is not token

        self.unforeseen(person.id)
        if (
            channel == "text"
            or self._posting.get(person.id)
            or len(self._dropped.get(person.id, ())) >= DROPPED_MAX
            or (person.id not in self._dropped and len(self._dropped) >= DROPPED_PEOPLE_MAX)
            or not words_of(text)
            or len(text) > TEXT_CHARS_MAX
            or is_unkeepable(text)
        ):
            return False
        lead = AGENTS[route(text)]
        tools = self._toolbox.tools_for(lead.name, self._context(person, channel, zone, lead, run_id="speculation"))
        if any(t.primed for t in tools):
            return False
        # Looked up on its own connection meanwhile, as a turn does: every millisecond the
        # guess takes is one less of the call's lead on the turn.
        lookup = self._look_up_facts(person, text)
        try:
            return await self._guess(
                person,
                text=text,
                channel=channel,
                zone=zone,
                lead=lead,
                tools=tools,
                lookup=lookup,
                overtaken=overtaken,
            )
        finally:
            if lookup is not None and not lookup.done():
                lookup.cancel()

    async def _guess(
        self,
        person: Person,
        *,
        text: str,
        channel: Channel,
        zone: ZoneInfo,
        lead: AgentSpec,
        tools: list[Tool],
        lookup: asyncio.Task[tuple[str, ...]] | None,
        overtaken: Callable[[], bool],
    ) -> bool:
        """`foresee`'s request, built and sent (see there)."""
        if await self._wallet.balance_micros(person.id) <= 0 or overtaken():
            return False
        now = self._clock()
        page = await self._threads.recent(person.id, limit=_HISTORY_ROWS_MAX)
        # The rows the turn will read: its page is read after its message is written, so it
        # holds the words and one row fewer of the thread before them. On a thread longer
        # than a page the guess read one old line more, and every guess of a long call
        # differed (BENCHMARKS.md#speculation-adopted-along-a-long-run).
        recent = list(page.messages)[-(_HISTORY_ROWS_MAX - 1) :]
        words = Message(
            id="speculation",
            seq=(recent[-1].seq + 1) if recent else 1,
            author="human",
            text=text,
            channel=channel,
            run_id=None,
            created_at=now,
        )
        # A turn of its own to read the thread as the real one will: the lines rendered
        # for the page are copied, so the guessed message never stays among them.
        guess = _Turn(person=person, channel=channel, zone=zone, origin=words, written=[words], recent=recent)
        guess.rendered = dict(page.memo((zone.key, person.name)))
        history, previous_at = await self._history(guess, [words])
        facts = await lookup if lookup is not None else ()
        if overtaken():
            return False
        session = Session(now=now, time_zone=zone, previous_message_at=previous_at, facts=facts)
        request = ModelRequest(
            model=self._model_name(lead.name),
            system=compose(
                agent=lead, channel=channel, trigger="human", session=session, team=self._toolbox.team(), speaks=True
            ),
            contents=tuple(
                to_contents(
                    history, agent_name=lead.name, person_name=person.name, time_zone=zone, rendered=guess.rendered
                )
            ),
            tools=tuple(t.spec for t in tools),
        )
        speculation = Speculation(
            person_id=person.id, text=text, agent=lead.name, now=now, facts=facts, request=request
        )
        speculation.begin(
            asyncio.create_task(
                generate_streaming(self._model, request, speculation.heard, speculation), name="turn-speculation"
            )
        )
        self._speculations[person.id] = speculation
        return True

    def unforeseen(self, person_id: str) -> None:
        """The words foreseen for the person no longer stand (they went on speaking, or
        the call ended): their call is stopped, and billed with the person's next turn (or
        at the call's end, `bill_dropped`)."""
        speculation = self._speculations.pop(person_id, None)
        if speculation is not None:
            self._drop(speculation)

    async def bill_dropped(self, person: Person, *, channel: Channel) -> int:
        """The person's call is over: their speculative calls that no turn adopted are
        billed now, as the calls of a run of their own, rather than with a next turn that
        may never come in this process (docs/money.md#a-speculative-first-call). Returns how
        many calls were charged. Each dropped call is taken from the waiting list once,
        here or by the person's next lead run, whichever comes first, so it is billed once.
        With no agent message among the thread's newest there is nothing for the run to
        hang on: they wait for the person's next turn, as before."""
        self.unforeseen(person.id)
        dropped = self._dropped.pop(person.id, [])
        if not dropped:
            return 0
        # The run hangs on the thread's newest agent message, never on a person's: a run on
        # a person's message counts as its answer, so one the call's end left unanswered
        # would be hidden from the recovery sweep (docs/money.md#a-speculative-first-call).
        try:
            page = await self._threads.recent(person.id, limit=_BILLING_ANCHOR_LOOKBACK)
            answers = [message for message in page.messages if message.author != "human"]
            run: Run | None = None
            if answers:
                run = await self._runs.start(
                    person.id,
                    agent=dropped[0].agent,
                    trigger="human",
                    parent_run_id=None,
                    trigger_message_id=answers[-1].id,
                    origin_message_id=answers[-1].id,
                    channel=channel,
                )
        except BaseException:
            # No run to bill them with (the database away): they wait for the next turn.
            self._dropped.setdefault(person.id, [])[:0] = dropped  # ahead of any dropped meanwhile
            raise
        if run is None:
            self._dropped.setdefault(person.id, [])[:0] = dropped
            return 0
        charged = 0
        try:
            for index, speculation in enumerate(dropped, start=1):
                consumed = await speculation.consumed()
                if consumed is None:
                    log.warning("run %s: a dropped speculative call reported no usage", run.id)
                    continue
                spent = consumed.usage.as_dict()
                cost: int | None
                try:
                    cost = await self._wallet.cost_of_call(model=consumed.model, usage=spent)
                except Exception:  # no price: the charge stays in the outbox for the sweep
                    cost = None
                _count_call(consumed.model, spent, cost)
                call = self._wallet.called(
                    person_id=person.id,
                    run_id=run.id,
                    index=index,
                    agent=run.agent,
                    trigger=run.trigger,
                    model=consumed.model,
                    usage=spent,
                )
                await self._wallet.charge(call, announce=False)
                charged += 1
        finally:
            await self._runs.finish(run.id, status="succeeded")
        if charged:
            await self._wallet.announce(person.id)
        return charged

    def _drop(self, speculation: Speculation) -> None:
        speculation.drop()
        metrics.speculations.inc(outcome="dropped")
        self._dropped.setdefault(speculation.person_id, []).append(speculation)

    async def post(
        self,
        person: Person,
        *,
        text: str,
        channel: Channel,
        zone: ZoneInfo,
        client_id: str | None = None,
        on_reply: Callable[[SpokenReply], None] | None = None,
        on_say: Callable[[Segment], None] | None = None,
        stop: StopSignal | None = None,
    ) -> TurnResult:
        """Write the person's message, run whoever it is for, and return what the turn wrote.

        `on_reply` (a call): told what the person will hear the moment the lead agent has
        said it, while the turn goes on to write it and settle its charges, so speech can
        start a few statements sooner. It is not told on a replay or when the turn fails
        before the lead agent has answered; the returned `spoken` is the same reply.

        `on_say` (a call that speaks as it goes): told each finished sentence as the model
        writes it (every model call then streams), so `on_reply` and `spoken` hold only
        what was not said that way; a specialist's answer that Ava asks to be said as it
        is (`answer_directly`) is said too, and no model call is made to repeat it. `stop`
        set meanwhile (a barge-in) cuts the answer being spoken where it is."""
        with span("turn", person=person.id, channel=channel):
            return await self._post(
                person,
                text=text,
                channel=channel,
                zone=zone,
                client_id=client_id,
                on_reply=on_reply,
                on_say=on_say,
                stop=stop,
            )

    async def _post(
        self,
        person: Person,
        *,
        text: str,
        channel: Channel,
        zone: ZoneInfo,
        client_id: str | None,
        on_reply: Callable[[SpokenReply], None] | None,
        on_say: Callable[[Segment], None] | None,
        stop: StopSignal | None,
    ) -> TurnResult:
        check_text(text)
        if client_id is not None and (first := await self._threads.by_client_id(person.id, client_id)) is not None:
            # A retry: the first attempt may still be running. Waiting for the thread
            # means waiting for that turn to end, so the answer is the whole turn (every
            # message and finished run), and an empty wallet since then is no 402.
            async with self._threads.turn(person.id, wait_s=self._thread_wait_s):
                earlier = await self._replay(person, client_id)
                assert earlier is not None, "a message once written stays"
                if not earlier.runs:
                    # The first attempt wrote the message and was cut off before its run
                    # began (the database went away): answered now, once, under the
                    # thread, unless the sweep did first (chat.recovery).
                    return await self._answer(person, first, zone, on_reply=on_reply)
                if await self._abandon_left(person, earlier.runs):
                    earlier = await self._replay(person, client_id)
                    assert earlier is not None
            return earlier
        # The first call begun on these words while the person's turn was ending: taken by
        # this turn when the words are the same (the thread keeps them as the model read
        # them), dropped otherwise (chat.speculation).
        speculation = self._speculations.pop(person.id, None)
        if speculation is not None and (channel == "text" or speculation.words != words_of(text)):
            self._drop(speculation)
            speculation = None
        if speculation is not None:
            text = speculation.text
        # What is known about the person is looked up on its own connection while the turn
        # waits for the thread and writes the message: it depends on nothing but the words.
        facts = self._look_up_facts(person, text) if speculation is None else None
        self._posting[person.id] = self._posting.get(person.id, 0) + 1
        self._guessing.pop(person.id, None)
        try:
            async with self._threads.turn(person.id, wait_s=self._thread_wait_s):
                # Checked again under the lock: the first attempt may have just finished.
                if client_id is not None and (earlier := await self._replay(person, client_id)) is not None:
                    return earlier
                # The guard holds the thread, so the balance it reads already counts every
                # earlier turn's charges (each settles its books before letting go) and no
                # other turn of the person's spends until this one ends, on any door or
                # process (docs/money.md#the-guard). 402 before anything is written.
                balance = await self._wallet.guard(person.id)
                message = await self._threads.append(
                    person.id, author="human", text=text, channel=channel, client_id=client_id
                )
                await self._commit_lazily()
                turn = self._begin(
                    person,
                    channel,
                    zone,
                    message,
                    balance_micros=balance,
                    facts_lookup=facts,
                    on_reply=on_reply if channel != "text" else None,
                    say=on_say if channel != "text" else None,
                    stop=stop,
                )
                if speculation is not None:
                    turn.speculation, turn.facts = speculation, speculation.facts
                    speculation = None  # the turn's now: adopted or dropped by its lead's run
                with span("route") as routed:
                    lead = AGENTS[route(text)]
                    routed.set_attribute("avagenc.agent", lead.name)
                try:
                    _, reply = await self._run(turn, agent=lead, trigger="human", parent=None, trigger_message=message)
                finally:
                    # Every run's end and charge, before the thread is let go: also when the
                    # turn failed (an outage), so the sweep never fails a run its books are
                    # still ending (chat.recovery).
                    await turn.books.settled()
        finally:
            self._posting[person.id] -= 1
            if not self._posting[person.id]:
                del self._posting[person.id]
            if facts is not None and not facts.done():
                facts.cancel()  # the turn never needed them (a replay, an error)
            if speculation is not None:
                self._drop(speculation)  # the turn ended before it began (a replay, a 402)
        result = turn.result()
        if channel == "text":
            return result
        return TurnResult(result.messages, result.runs, spoken=_unsaid(turn, reply))

    async def answer(self, person: Person, message_id: str, *, zone: ZoneInfo, wait_s: float) -> bool:
        """Answer a message of the person's that no run answers (the sweep's: a turn cut
        off between writing the message and starting its run); False when it has a run by
        the time the thread is held (a retry answered it first), or is not there."""
        async with self._threads.turn(person.id, wait_s=wait_s):
            found = await self._threads.by_ids(person.id, [message_id])
            if not found or found[0].author != "human" or await self._runs.of_origin(person.id, message_id):
                return False
            await self._answer(person, found[0], zone)
        return True

    async def _answer(
        self,
        person: Person,
        message: Message,
        zone: ZoneInfo,
        *,
        on_reply: Callable[[SpokenReply], None] | None = None,
    ) -> TurnResult:
        """Run the turn of a message written earlier, holding the thread. On an empty wallet
        its run stops before its first model call with a reply of ours
        (`insufficient_balance`), so the person sees why there is no answer."""
        balance = await self._wallet.balance_micros(person.id)
        await self._commit_lazily()
        channel = cast(Channel, message.channel)  # the thread keeps only these
        turn = self._begin(
            person,
            channel,
            zone,
            message,
            balance_micros=balance,
            on_reply=on_reply if channel != "text" else None,
        )
        try:
            _, reply = await self._run(
                turn, agent=AGENTS[route(message.text)], trigger="human", parent=None, trigger_message=message
            )
        finally:
            await turn.books.settled()
        result = turn.result()
        if channel == "text":
            return result
        return TurnResult(result.messages, result.runs, spoken=parse_spoken(reply))

    async def wake(
        self, person: Person, *, note_id: str, text: str, zone: ZoneInfo, channel: Channel = "text"
    ) -> Woken:
        """Ava wakes on her own note: under the person's thread lock, write the note (author
        `postera`) and run her with `trigger=postera`.

        Idempotent per note, so a retried delivery never wakes her twice: the note's message
        carries a client id derived from the note id (one a person's client cannot send:
        theirs may not contain "/"), and a run already started on that message is never
        started again. On an empty wallet the note is still written, and no run starts."""
        client_id = f"wake/{note_id}"
        # The turn of a wake note: under its `wake` root when delivered (chat.wakes).
        with span("turn", person=person.id, channel=channel, note=note_id):
            return await self._wake(person, client_id=client_id, text=text, zone=zone, channel=channel)

    async def _wake(self, person: Person, *, client_id: str, text: str, zone: ZoneInfo, channel: Channel) -> Woken:
        raw = ""
        async with self._threads.turn(person.id, wait_s=self._thread_wait_s):
            message = await self._threads.by_client_id(person.id, client_id)
            if message is None:
                message = await self._threads.append(
                    person.id, author=POSTERA, text=text[:TEXT_CHARS_MAX], channel=channel, client_id=client_id
                )
            turn: _Turn | None = None
            runs = await self._runs.of_origin(person.id, message.id)
            if runs:
                await self._abandon_left(person, runs)
            else:
                balance = await self._wallet.balance_micros(person.id)
                if balance <= 0:
                    return Woken(run_id=None, reply="", outcome="wallet_empty")
                await self._commit_lazily()  # only a wake that runs writes anything more
                turn = self._begin(person, channel, zone, message, balance_micros=balance)
                _, raw = await self._run(turn, agent=AVA, trigger="postera", parent=None, trigger_message=message)
                await turn.books.settled()
        # A wake that ran now answers from what it wrote; a repeated one reads the first's.
        result = turn.result() if turn is not None else await self._result(person, message)
        lead = next((r for r in result.runs if r.parent_run_id is None), None)
        # What the person reads first: the last thing the wake wrote (Ava's reply, or a
        # specialist's when she stayed silent after it), never her bare handoff tag.
        said = [m.text for m in result.messages if m.id != message.id and not (m.author == "ava" and m.text[:1] == "@")]
        reply = said[-1] if said else ""
        return Woken(run_id=lead.id if lead else None, reply=reply, outcome="ran" if said else "silent", raw=raw)

    async def _abandon_left(self, person: Person, runs: Sequence[Run]) -> bool:
        """Under the person's thread, on a retry: runs of the turn still `running` were left
        by an attempt an outage or a crash cut off (no turn of this process is finishing
        them: `Threads.alone`; none of another's: this one holds the thread). They are failed
        now, as the sweep would fail them, so the retry returns the whole turn with its
        failure rather than a run that will never end (docs/http.md). True when any were."""
        if not any(r.status == "running" for r in runs) or not self._threads.alone(person.id):
            return False
        return bool(await self._runs.abandon_held(person.id))

    async def _commit_lazily(self) -> None:
        """Once the message that starts a turn is written (durably: the person's words, a
        note), the turn's own writes commit without waiting for the disk, when its
        bookkeeping commits on a connection of its own: that is the durable commit the
        turn waits for at its end, and it makes the earlier ones durable too."""
        if self._apart is not None:
            await self._threads.commit_lazily()

    def _begin(
        self,
        person: Person,
        channel: Channel,
        zone: ZoneInfo,
        origin: Message,
        *,
        balance_micros: int,
        facts_lookup: asyncio.Task[tuple[str, ...]] | None = None,
        on_reply: Callable[[SpokenReply], None] | None = None,
        say: Callable[[Segment], None] | None = None,
        stop: StopSignal | None = None,
    ) -> _Turn:
        """A turn started by `origin`, with books of its own."""
        return _Turn(
            person=person,
            channel=channel,
            zone=zone,
            origin=origin,
            written=[origin],
            facts_lookup=facts_lookup,
            books=Books(self._apart),
            on_reply=on_reply,
            balance_micros=balance_micros,
            say=say,
            stop=stop,
        )

    async def _replay(self, person: Person, client_id: str) -> TurnResult | None:
        message = await self._threads.by_client_id(person.id, client_id)
        return await self._result(person, message) if message is not None else None

    async def _result(self, person: Person, origin: Message) -> TurnResult:
        runs = await self._runs.of_origin(person.id, origin.id)
        messages = await self._threads.of_turn(person.id, origin.id, [r.id for r in runs])
        return TurnResult(messages=messages, runs=runs)

    async def _history(self, turn: _Turn, pinned: Sequence[Message]) -> tuple[list[ThreadMessage], datetime | None]:
        if turn.recent is None:  # once per turn; `_Turn.wrote` adds what the turn writes after
            page = await self._threads.recent(turn.person.id, limit=_HISTORY_ROWS_MAX)
            turn.recent = list(page.messages)
            # The lines rendered for this page by earlier turns, while zone and name stay.
            turn.rendered = page.memo((turn.zone.key, turn.person.name))
        recent = turn.recent
        known = {m.id for m in recent}
        rows = recent + [m for m in pinned if m.id not in known]
        messages = [ThreadMessage(m.id, m.seq, m.author, m.text, m.created_at) for m in rows]
        chosen = window(messages, budget_tokens=self._history_tokens_max, pinned_ids=[m.id for m in pinned])
        before_origin = [m for m in messages if m.seq < turn.origin.seq]
        previous_at = max(before_origin, key=lambda m: m.seq).created_at if before_origin else None
        return chosen, previous_at

    def _tools(self, turn: _Turn, agent: AgentSpec, run: Run, trigger: Trigger) -> list[Tool]:
        async def delegate(specialist: AgentSpec, tag: str, *, direct: bool = False) -> tuple[str, bool]:
            if not await self._may_hand_on(turn):
                raise _WalletEmptyAtHandoff(specialist)
            handoff = await self._threads.append(
                turn.person.id, author="ava", text=tag, channel=turn.channel, run_id=run.id
            )
            turn.wrote(handoff)
            # Said as it is only on a call that speaks as it goes; otherwise Ava relays, as in text.
            speaks = direct and turn.say is not None
            failure, reply = await self._run(
                turn, agent=specialist, trigger="ava", parent=run.id, trigger_message=handoff, speaks=speaks
            )
            if failure is not None:
                raise ToolError(f"{specialist.display_name} could not finish this time ({failure[0]}).")
            return reply, speaks and bool(reply)

        context = RunContext(
            person_id=turn.person.id,
            person_name=turn.person.name,
            zone=turn.zone,
            channel=turn.channel,
            trigger=trigger,
            run_id=run.id,
            delegate=delegate if agent.role == "lead" else None,
        )
        return self._toolbox.tools_for(agent.name, context)

    @staticmethod
    def _context(person: Person, channel: Channel, zone: ZoneInfo, lead: AgentSpec, *, run_id: str) -> RunContext:
        """A lead's context before its run exists (a speculation's): its tools' specs are
        the run's; a handoff from it never runs."""

        async def never(specialist: AgentSpec, tag: str, *, direct: bool = False) -> tuple[str, bool]:
            raise ToolError("a speculative call runs no tools")

        return RunContext(
            person_id=person.id,
            person_name=person.name,
            zone=zone,
            channel=channel,
            trigger="human",
            run_id=run_id,
            delegate=never if lead.role == "lead" else None,
        )

    async def _may_hand_on(self, turn: _Turn) -> bool:
        """Whether the wallet is not empty, counting the calls this turn has made (docs/money.md#the-guard:
        re-checked before each specialist run). Their charges may still be on the books:
        the balance read now, less every charge not yet known to be written when it was
        read, is the least the wallet can hold once they are (a charge written during the
        read is counted twice, never missed). Only when that is not above zero, or a cost
        is unknown, does the turn wait for its books and read the balance again."""
        unsettled = turn.unsettled_micros
        if unsettled is not None:
            # What this read shows is what later calls are counted against (`_may_call`).
            turn.balance_micros, turn.spent_micros = await self._wallet.balance_micros(turn.person.id) - unsettled, 0
            if turn.balance_micros > 0:
                return True
        await turn.books.settled()
        turn.balance_micros, turn.spent_micros = await self._wallet.balance_micros(turn.person.id), 0
        return turn.balance_micros > 0

    async def _may_call(self, turn: _Turn) -> bool:
        """Whether the turn may make another model call: the balance it began with, less
        what its calls have cost since, is above zero. No read on that path; only when a
        cost is unknown does the turn wait for its books and read the balance again."""
        spent = turn.spent_micros
        if spent is not None:
            return turn.balance_micros - spent > 0
        await turn.books.settled()
        balance = await self._wallet.balance_micros(turn.person.id)
        turn.balance_micros, turn.spent_micros = balance, 0
        return balance > 0

    def _look_up_facts(self, person: Person, text: str) -> asyncio.Task[tuple[str, ...]] | None:
        """Start looking up the facts that bear on `text` (see `_facts_of`)."""
        if self._facts is None:
            return None
        return asyncio.create_task(self._facts_about(person.id, text), name="turn-facts")

    async def _facts_about(self, person_id: str, text: str) -> tuple[str, ...]:
        assert self._facts is not None
        try:
            async with asyncio.timeout(_FACTS_TIMEOUT_S):
                return tuple(await self._facts(person_id=person_id, text=text))
        except Exception as exc:
            log.warning("facts lookup failed for %s: %s", person_id, type(exc).__name__)
            return ()

    async def _facts_of(self, turn: _Turn) -> tuple[str, ...]:
        """What is known about the person that bears on the turn's message; never a reason to fail."""
        if self._facts is None:
            return ()
        if turn.facts is None:
            lookup = turn.facts_lookup
            turn.facts = (
                await lookup if lookup is not None else await self._facts_about(turn.person.id, turn.origin.text)
            )
        return turn.facts

    async def _write_reply(self, turn: _Turn, agent: AgentSpec, run: Run, reply: str) -> None:
        """The reply as the thread keeps it: on a call, Ava's emotion tags become metadata
        and never stay in the text; an all-tags reply is no message at all."""
        if turn.channel == "text" or agent.role != "lead":
            turn.wrote(
                await self._threads.append(
                    turn.person.id, author=agent.name, text=reply, channel=turn.channel, run_id=run.id
                )
            )
            return
        spoken = parse_spoken(reply)
        if spoken.text:
            message = await self._threads.append(
                turn.person.id,
                author=agent.name,
                text=spoken.text,
                channel=turn.channel,
                run_id=run.id,
                emotions=spoken.emotions,
            )
            turn.wrote(message)

    async def _attempt(
        self,
        turn: _Turn,
        *,
        agent: AgentSpec,
        run: Run,
        trigger: Trigger,
        trigger_message: Message,
        recorder: _Recorder,
        speaking: Speaking | None = None,
    ) -> tuple[str, _Failure | None]:
        """Run the agent: the reply to write ("" for none) and the (code, detail) of a
        failure. A run stopped at an empty wallet fails, yet still says why."""
        pinned = [trigger_message] if trigger_message.id == turn.origin.id else [turn.origin, trigger_message]
        history, previous_at = await self._history(turn, pinned)
        speculated = turn.speculation if run.parent_run_id is None else None
        session = Session(
            # A turn begun on foreseen words reads the clock they were heard at (the request
            # it then sends is the one in flight since: chat.speculation).
            now=speculated.now if speculated is not None else self._clock(),
            time_zone=turn.zone,
            previous_message_at=previous_at,
            facts=await self._facts_of(turn),
        )
        system = compose(
            agent=agent,
            channel=turn.channel,
            trigger=trigger,
            session=session,
            team=self._toolbox.team(),
            speaks=speaking is not None,
        )
        contents = to_contents(
            history, agent_name=agent.name, person_name=turn.person.name, time_zone=turn.zone, rendered=turn.rendered
        )
        try:
            outcome = await run_agent(
                model=_Metered(
                    self._model,
                    lambda: self._may_call(turn),
                    turn=turn if run.parent_run_id is None else None,
                    dropped=recorder.dropped,
                ),
                model_name=self._model_name(agent.name),
                system=system,
                history=contents,
                tools=self._tools(turn, agent, run, trigger),
                observer=recorder,
                limits=self._limits,
                speech=speaking,
                stop=turn.stop if speaking is not None else None,
                # On a call that speaks as it goes, every second counts: a specialist starts
                # from what its first step would read (agents.tools.Tool.primed).
                prime=turn.say is not None,
            )
        except _WalletEmptyAtHandoff as exc:
            explanation = wallet_empty_reply(exc.specialist, turn.channel)
            return explanation, ("insufficient_balance", "The wallet emptied before the handoff.")
        except _WalletEmptyMidRun:
            # The turn's first run says why; a run Ava handed on to stops silently, and
            # Ava, whose next call is refused the same way, says it once for both.
            said = wallet_spent_reply(turn.channel) if run.parent_run_id is None else ""
            return said, ("insufficient_balance", "The wallet emptied during the run.")
        except RunLimitExceeded as exc:
            return "", ("run_limit_exceeded", str(exc))
        except ModelUnavailable:
            return "", ("model_unavailable", "The model did not answer in time; try again.")
        except ModelError:
            return "", ("model_error", "The model could not answer this message.")
        except Exception:
            log.exception("run %s (%s) failed", run.id, agent.name)
            return "", ("internal_error", "Something went wrong on our side.")
        if outcome.cut and speaking is not None:
            # Spoken over: the thread keeps what the person heard, not the unsaid rest.
            return " ".join(segment.text for segment in speaking.said), None
        return ("" if is_blank(outcome.text) else outcome.text.strip()), None

    async def _run(
        self,
        turn: _Turn,
        *,
        agent: AgentSpec,
        trigger: Trigger,
        parent: str | None,
        trigger_message: Message,
        speaks: bool = False,
    ) -> tuple[_Failure | None, str]:
        """One agent run to its reply; returns how it failed (None: it did not) and its
        reply ("" if silent). Its end is written on the turn's books, after its charges,
        so a handed-on run's reply goes back to Ava without waiting for them."""
        run = await self._runs.start(
            turn.person.id,
            agent=agent.name,
            trigger=trigger,
            parent_run_id=parent,
            trigger_message_id=trigger_message.id,
            origin_message_id=turn.origin.id,
            channel=turn.channel,
        )
        turn.started(run)
        recorder = _Recorder(self._runs, self._wallet, turn, run)
        if parent is None:
            # Speculative calls of the person's that no turn adopted: billed as this run's
            # first calls, before its own (chat.speculation).
            for dropped in self._dropped.pop(turn.person.id, []):
                recorder.dropped(dropped)
        # A specialist said aloud writes its done sentence beside its command: nothing of its
        # answer is said before that answer has ended (chat.speaking).
        speaking = (
            Speaking(turn.say, whole=parent is not None)
            if turn.say is not None and (parent is None or speaks)
            else None
        )
        if speaking is not None and parent is None:
            turn.lead_speaking = speaking
        with span(f"run {agent.name}", run=run.id, agent=agent.name, trigger=trigger) as running:
            reply, error = await self._attempt(
                turn,
                agent=agent,
                run=run,
                trigger=trigger,
                trigger_message=trigger_message,
                recorder=recorder,
                speaking=speaking,
            )
            if error is not None:
                running.set_attribute("avagenc.error", error[0])
        if parent is None and turn.speculation is not None:
            # The run ended before its first call took it (an empty wallet, a failure).
            turn.speculation.drop()
            metrics.speculations.inc(outcome="dropped")
            recorder.dropped(turn.speculation)
            turn.speculation = None
        if parent is None and turn.on_reply is not None:
            turn.on_reply(_unsaid(turn, reply))
        if reply:
            await self._write_reply(turn, agent, run, reply)
        if recorder.charged:
            turn.charged = True
        if parent is None and turn.charged:
            # One `wallet.changed` for the whole turn, after its last charge, before its end.
            turn.books.write(lambda: self._wallet.announce(turn.person.id))
        turn.books.write(lambda: self._finish(turn, run, error, recorder))
        return error, reply

    async def _finish(self, turn: _Turn, run: Run, error: _Failure | None, recorder: _Recorder) -> None:
        """Written after every charge and tool record of the run, so its row carries them."""
        if error is None and recorder.failed:
            error = ("internal_error", "Something went wrong on our side.")
        finished = await self._runs.finish(
            run.id,
            status="failed" if error else "succeeded",
            error_code=error[0] if error else None,
            error_detail=error[1] if error else None,
        )
        turn.finished(finished)
        metrics.runs.inc(agent=run.agent, trigger=run.trigger, status=finished.status)
        log.info(
            "run finished",
            extra={
                "person": turn.person.id,
                "run": run.id,
                "agent": run.agent,
                "trigger": run.trigger,
                "status": finished.status,
                "error": error[0] if error else None,
                "cost_micros": finished.cost_micros,
                "usage": finished.usage,
            },
        )
