"""The eval report: pass rate per rule, per scenario, and every failure with its rule.

Plain text for a terminal, and the same numbers as a dict (for BENCHMARKS.md and tests).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
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


LANGUAGES = ("en", "id")
# The floor the coverage table is held to: phrasings per tool and language (docs/eval.md#coverage).
PHRASINGS_MIN = 5


def registry_tools(team: Mapping[str, Sequence[Any]]) -> list[str]:
    """Every tool each agent has in this deployment, as "agent.tool", by agent then as declared."""
    return list(dict.fromkeys(f"{agent}.{spec.name}" for agent, specs in team.items() for spec in specs))


def agent_coverage(results: list[SuiteResult], team: Mapping[str, Sequence[Any]]) -> dict[str, dict[str, int]]:
    """ "agent.tool" -> language -> how many turns of passing scenarios called it, for every
    tool in the registry (0 where no turn reaches it). A call is the agent's whose tools the
    calling run had, so a tool two agents share (the confirmation tools) counts for the one
    that called it."""
    table = {name: dict.fromkeys(LANGUAGES, 0) for name in registry_tools(team)}
    owners = {frozenset(spec.name for spec in specs): agent for agent, specs in team.items()}
    for suite in results:
        for scenario in suite.results:
            if not scenario.passed:
                continue
            for lang, called in scenario.reached:
                for key in {f"{owners.get(tools, '?')}.{tool}" for tools, tool in called}:
                    if key in table and lang in table[key]:
                        table[key][lang] += 1
    return table


def render_coverage(table: Mapping[str, Mapping[str, int]]) -> str:
    lines = ["coverage (turns reaching each tool, by the language they were said in):"]
    lines.append(f"  {'tool':<32} {'en':>4} {'id':>4}")
    for tool, counts in table.items():
        short = [lang for lang in LANGUAGES if counts[lang] < PHRASINGS_MIN]
        mark = "" if not short else f"  below {PHRASINGS_MIN} in {', '.join(short)}"
        lines.append(f"  {tool:<32} {counts['en']:>4} {counts['id']:>4}{mark}")
    full = sum(all(c[lang] >= PHRASINGS_MIN for lang in LANGUAGES) for c in table.values())
    lines.append(f"  {full}/{len(table)} tools reached by at least {PHRASINGS_MIN} turns in each language")
    return "\n".join(lines)


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
