"""Runs scenario suites through the real product and judges every expectation.

Each scenario gets a fresh person (and so a fresh thread and sandbox home), its earlier
messages written to the thread, its home set up, and the scenario's clock and zone; then
its turns go through `Turns.post`, the path every door uses, on whatever model the
product was built with. The composition root builds the product and hands it in: this
package never chooses adapters itself.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from agents import Command, Model, ModelRequest, ModelResponse, SmartHome, detect_language
from chat import Message, People, Person, Run, Runs, Threads, Turns, Wallet
from scenarios.rules import ALWAYS, RULES, Observation
from scenarios.spec import Scenario, Suite

RUN_NAME_PREFIX = "eval"


class ScenarioClock:
    """The product's clock during a run: the scenario's moment, advancing in real time."""

    def __init__(self) -> None:
        self._at: datetime | None = None
        self._started = time.monotonic()

    def set(self, moment: datetime) -> None:
        self._at, self._started = moment, time.monotonic()

    def now(self) -> datetime:
        if self._at is None:
            return datetime.now(UTC)
        return self._at.astimezone(UTC) + timedelta(seconds=time.monotonic() - self._started)


class RecordingModel:
    """Wraps the configured model and keeps each response, so the raw spoken reply (with
    its emotion tags, which the thread never stores) can be judged."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.responses: list[tuple[ModelRequest, ModelResponse]] = []

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        response = await self.inner.generate(request=request)
        self.responses.append((request, response))
        return response

    def last_reply(self) -> str:
        """The final reply of the last run to finish: the run the person spoke to."""
        for _, response in reversed(self.responses):
            if not response.calls:
                return response.text
        return ""


class Product(Protocol):
    """What a scenario run needs from the product (app.evaluation builds it)."""

    @property
    def turns(self) -> Turns: ...
    @property
    def people(self) -> People: ...
    @property
    def threads(self) -> Threads: ...
    @property
    def runs(self) -> Runs: ...
    @property
    def wallet(self) -> Wallet: ...
    @property
    def home(self) -> SmartHome: ...
    @property
    def model(self) -> RecordingModel: ...
    @property
    def clock(self) -> ScenarioClock: ...


@dataclass(slots=True)
class Verdict:
    rule: str
    turn: int
    line: int
    failure: str | None  # None: passed


@dataclass(slots=True)
class ScenarioResult:
    scenario: Scenario
    verdicts: list[Verdict] = field(default_factory=list)
    error: str | None = None  # the scenario could not run at all
    seconds: float = 0.0
    transcript: list[str] = field(default_factory=list)  # "author: text" of every turn's messages
    # Per turn: the language it was said in and the tools its runs called (the coverage table).
    # A call is (the calling run's tool names, the tool called): the names tell whose run it was.
    reached: list[tuple[str, frozenset[tuple[frozenset[str], str]]]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.error is None and all(v.failure is None for v in self.verdicts)


@dataclass(slots=True)
class SuiteResult:
    suite: Suite
    results: list[ScenarioResult]
    seconds: float

    @property
    def pass_rate(self) -> float:
        return sum(r.passed for r in self.results) / len(self.results) if self.results else 1.0

    @property
    def ok(self) -> bool:
        return self.pass_rate >= self.suite.threshold


async def _home(product: Product, person_id: str) -> dict[str, dict[str, Any]]:
    return {d.id: dict(d.status) for d in await product.home.list_devices(person_id=person_id)}


async def _prepare(product: Product, scenario: Scenario) -> Person:
    product.clock.set(scenario.clock)
    person, _ = await product.people.sign_in_local(f"{scenario.person} {secrets.token_hex(3)}")
    await product.wallet.grant_signup(person.id)
    for device, points in scenario.home.items():
        commands = [Command(code=code, value=value) for code, value in points.items()]
        await product.home.send_commands(person_id=person.id, device_id=device, commands=commands)
    await _write_thread(product, person.id, scenario.thread)
    return person


async def _write_thread(product: Product, person_id: str, thread: Sequence[tuple[str, str]]) -> None:
    """Earlier messages, each agent message under a finished run as the product writes them:
    a specialist right after Ava's "@name" was handed on by her, anyone else answered the person."""
    origin: Message | None = None
    lead_run: Run | None = None
    previous: Message | None = None
    opened: list[str] = []
    for author, text in thread:
        if author in ("human", "postera"):
            origin = previous = await product.threads.append(person_id, author=author, text=text, channel="text")
            lead_run = None
            continue
        assert origin is not None, "an agent message needs a person's message before it"
        handed = previous is not None and previous.author == "ava" and previous.text.strip() == f"@{author}"
        if author == "ava" and lead_run is not None:
            run = lead_run
        else:
            run = await product.runs.start(
                person_id,
                agent=author,
                trigger="ava" if handed else ("postera" if origin.author == "postera" else "human"),
                parent_run_id=lead_run.id if handed and lead_run is not None else None,
                trigger_message_id=previous.id if handed and previous is not None else origin.id,
                origin_message_id=origin.id,
                channel="text",
            )
            opened.append(run.id)
            lead_run = run if author == "ava" else lead_run
        previous = await product.threads.append(person_id, author=author, text=text, channel="text", run_id=run.id)
    for run_id in opened:
        await product.runs.finish(run_id, status="succeeded")


async def run_scenario(product: Product, scenario: Scenario) -> ScenarioResult:
    result = ScenarioResult(scenario)
    started = time.monotonic()
    try:
        person = await _prepare(product, scenario)
        for index, turn in enumerate(scenario.turns, start=1):
            before = await _home(product, person.id)
            product.model.responses.clear()
            outcome = await product.turns.post(person, text=turn.say, channel=scenario.door, zone=scenario.time_zone)
            observation = Observation(
                door=scenario.door,
                person_id=person.id,
                time_zone=str(scenario.time_zone),
                messages=[m.as_json() for m in outcome.messages],
                runs=[r.as_json() for r in outcome.runs],
                home_before=before,
                home_after=await _home(product, person.id),
                spoken=product.model.last_reply(),
                product=product,
            )
            result.transcript += [f"{m['author']}: {m['text']}" for m in observation.messages]
            called = frozenset(
                (frozenset(t.name for t in request.tools), c.name)
                for request, response in product.model.responses
                for c in response.calls
            )
            result.reached.append((detect_language(turn.say), called))
            if scenario.door != "text":
                result.transcript.append(f"(spoken raw) {observation.spoken}")
            for expectation in turn.expect:
                failure = await RULES[expectation.rule].check(observation, expectation.value)
                result.verdicts.append(Verdict(expectation.rule, index, expectation.line, failure))
            named = {e.rule for e in turn.expect}
            for rule, value in ALWAYS.items():  # every turn, scene-setting ones too
                if rule not in named:
                    failure = await RULES[rule].check(observation, value)
                    result.verdicts.append(Verdict(rule, index, scenario.line, failure))
    except Exception as exc:  # a scenario that cannot run fails alone, with its reason
        result.error = f"{type(exc).__name__}: {exc}"
    result.seconds = time.monotonic() - started
    return result


async def run_suite(product: Product, suite: Suite, *, only: Sequence[str] = ()) -> SuiteResult:
    started = time.monotonic()
    chosen = [s for s in suite.scenarios if not only or any(o in s.name for o in only)]
    results = [await run_scenario(product, scenario) for scenario in chosen]
    return SuiteResult(suite, results, time.monotonic() - started)
