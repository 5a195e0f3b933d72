"""The bundled scenario suites pass in full on the offline model, so a change that breaks a
behaviour rule fails the test run: this is how `make test` runs `avagenc eval`, through the
whole product on a real PostgreSQL."""

from __future__ import annotations

import pytest

from app.evaluation import eval_product
from scenarios import bundled_suites, load_suite, render, run_suite
from settings import Settings


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", bundled_suites(), ids=lambda p: p.stem)
async def test_bundled_suite_passes_on_the_offline_model(settings: Settings, path: object) -> None:
    suite = load_suite(path)  # type: ignore[arg-type]
    async with eval_product(settings) as product:
        result = await run_suite(product, suite)
    report = render([result], model="OfflineModel")
    assert len(suite.scenarios) >= 60 or suite.name != "starter"
    assert result.pass_rate == 1.0, report
