"""The bundled scenario suites pass in full on the offline model, so a change that breaks a
behaviour rule fails the test run: this is how `make test` runs `avagenc eval`, through the
whole product on a real PostgreSQL. The same run holds the coverage table to its floor:
every tool in the registry is reached by at least five turns in English and five in
Indonesian (docs/eval.md#coverage). And every scenario can fail: played again with every
reply emptied, and once per agent that speaks in it with that agent's replies turned to
nonsense, each must fail; a scenario that passes whatever an agent says judges nothing
(docs/eval.md#rules-that-can-fail). One product and one straight run serve all three."""

from __future__ import annotations

import dataclasses

import pytest

from agents import ModelRequest, ModelResponse, OfflineModel
from agents.offline.situation import read_situation
from app.evaluation import eval_product
from scenarios import (
    PHRASINGS_MIN,
    Product,
    ScenarioResult,
    SuiteResult,
    agent_coverage,
    bundled_suites,
    load_suite,
    render,
    render_coverage,
    run_scenario,
    run_suite,
)
from settings import Settings

NONSENSE = "Purple elephants hum quietly beside a paper moon."


class Spoiler:
    """The offline model, with the final replies of one agent (or all) replaced: emptied, or
    turned to nonsense. Tool calls and handoff tags are left alone, so the turn runs the same
    way and only what is said changes."""

    def __init__(self) -> None:
        self.inner = OfflineModel()
        self.agent: str | None = None  # None: play straight
        self.text = ""

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        response = await self.inner.generate(request=request)
        if self.agent is None or response.calls or not response.text:
            return response
        if self.agent != "*" and read_situation(request).agent != self.agent:
            return response
        return dataclasses.replace(response, text=self.text)


async def _spoiled_passes(product: Product, spoiler: Spoiler, straight: ScenarioResult) -> list[str]:
    written = [line.split(": ", 1) for line in straight.transcript if not line.startswith("(")]
    speakers = sorted({who for who, said in written if who != "human" and not said.startswith("@")})  # tags are calls
    passed_anyway: list[str] = []
    for agent, text in [("*", ""), *((a, NONSENSE) for a in speakers)]:
        spoiler.agent, spoiler.text = agent, text
        try:
            spoiled = await run_scenario(product, straight.scenario)
        finally:
            spoiler.agent = None
        if spoiled.passed:
            how = "every reply empty" if agent == "*" else f"{agent} speaking nonsense"
            passed_anyway.append(f"{straight.scenario.name} ({how})")
    return passed_anyway


@pytest.mark.timeout(600)
async def test_bundled_suites_pass_cover_the_registry_and_can_fail(settings: Settings) -> None:
    results: list[SuiteResult] = []
    spoiler = Spoiler()
    async with eval_product(settings, model=spoiler) as product:
        for path in bundled_suites():
            suite = load_suite(path)
            results.append(await run_suite(product, suite))
            assert len(suite.scenarios) >= 60 or suite.name != "starter"
        table = agent_coverage(results, product.team)
        report = render(results, model="OfflineModel") + "\n" + render_coverage(table)
        assert all(r.pass_rate == 1.0 for r in results), report
        # Every tool of the registry, none excepted: a new tool comes with its phrasings.
        short = {tool for tool, counts in table.items() if min(counts.values()) < PHRASINGS_MIN}
        assert short == set(), f"below {PHRASINGS_MIN} phrasings per language:\n{report}"
        passed_anyway = [
            p
            for suite in results
            for straight in suite.results
            for p in await _spoiled_passes(product, spoiler, straight)
        ]
    assert not passed_anyway, f"{len(passed_anyway)} scenarios pass whatever is said:\n" + "\n".join(passed_anyway)
