"""The eval report: pass rate per rule, per scenario, and every failure with its rule.

Plain text for a terminal, and the same numbers as a dict (for BENCHMARKS.md and tests).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from scenarios.runner import SuiteResult


def rule_rates(results: list[SuiteResult]) -> dict[str, tuple[int, int]]:
    """rule -> (passed, checked), over every turn of every scenario."""
    rates: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for suite in results:
        for scenario in suite.results:
            for verdict in scenario.verdicts:
                rates[verdict.rule][1] += 1
                rates[verdict.rule][0] += verdict.failure is None
    return {rule: (passed, checked) for rule, (passed, checked) in sorted(rates.items())}


def _pct(passed: int, total: int) -> str:
    return f"{100 * passed / total:5.1f} %" if total else "    - "


def render(results: list[SuiteResult], *, model: str, transcripts: bool = False) -> str:
    """The report; failed scenarios always show their transcript, all do with `transcripts`."""
    lines: list[str] = []
    for suite in results:
        passed = sum(r.passed for r in suite.results)
        lines.append(
            f"suite {suite.suite.name} ({suite.suite.path}) on {model}: {passed}/{len(suite.results)} scenarios "
            f"passed ({_pct(passed, len(suite.results)).strip()}), threshold {suite.suite.threshold:.0%}, "
            f"{suite.seconds:.1f} s"
        )
        for result in suite.results:
            mark = "PASS" if result.passed else "FAIL"
            checks = len(result.verdicts)
            good = sum(v.failure is None for v in result.verdicts)
            lines.append(f"  {mark} {result.scenario.name:<48} {good}/{checks} checks  {result.seconds:5.2f} s")
            if result.error:
                lines.append(f"       error: {result.error}")
            for verdict in result.verdicts:
                if verdict.failure:
                    where = f"{result.scenario.path}:{verdict.line}"
                    lines.append(f"       [{verdict.rule}] turn {verdict.turn} ({where}): {verdict.failure}")
            if transcripts or not result.passed:
                lines += [f"         | {line}" for line in result.transcript]
    lines.append("per rule:")
    for rule, (passed, checked) in rule_rates(results).items():
        lines.append(f"  {rule:<22} {passed:>4}/{checked:<4} {_pct(passed, checked)}")
    lines.append("result: " + ("OK" if all(s.ok for s in results) else "BELOW THRESHOLD"))
    return "\n".join(lines)


def summary(results: list[SuiteResult]) -> dict[str, Any]:
    scenarios = [r for s in results for r in s.results]
    return {
        "scenarios": len(scenarios),
        "passed": sum(r.passed for r in scenarios),
        "seconds": sum(s.seconds for s in results),
        "rules": rule_rates(results),
        "failed": [r.scenario.name for r in scenarios if not r.passed],
    }
