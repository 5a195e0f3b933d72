"""The bundled scenarios can fail: each one, played with every reply emptied, and again with
the replies of each agent that speaks in it turned to nonsense, must fail. A scenario that
passes whatever an agent says judges nothing (docs/eval.md#rules-that-can-fail)."""

from __future__ import annotations

import dataclasses

import pytest

from agents import ModelRequest, ModelResponse, OfflineModel
from agents.offline.situation import read_situation
from app.evaluation import eval_product
from scenarios import bundled_suites, load_suite, run_scenario
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


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", bundled_suites(), ids=lambda p: p.stem)
async def test_every_scenario_fails_on_an_empty_or_a_nonsense_reply(settings: Settings, path: object) -> None:
    suite = load_suite(path)  # type: ignore[arg-type]
    spoiler = Spoiler()
    passed_anyway: list[str] = []
    async with eval_product(settings, model=spoiler) as product:
        for scenario in suite.scenarios:
            spoiler.agent = None
            straight = await run_scenario(product, scenario)
            assert straight.passed, f"{scenario.name} fails when played straight"
            written = [line.split(": ", 1) for line in straight.transcript if not line.startswith("(")]
            speakers = sorted({who for who, said in written if not said.startswith("@")})  # tags are calls
            spoils = [("*", "")] + [(a, NONSENSE) for a in speakers if a != "human"]
            for agent, text in spoils:
                spoiler.agent, spoiler.text = agent, text
                spoiled = await run_scenario(product, scenario)
                if spoiled.passed:
                    how = "every reply empty" if agent == "*" else f"{agent} speaking nonsense"
                    passed_anyway.append(f"{scenario.name} ({how})")
    assert not passed_anyway, f"{len(passed_anyway)} scenarios pass whatever is said:\n" + "\n".join(passed_anyway)
