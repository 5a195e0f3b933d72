"""Conversation scenarios (`avagenc eval`, docs/eval.md): YAML suites run through the real
product on the configured model, judged rule by rule.

Used by the composition root (the CLI verb) and the tests; it reaches the domains only
through their top-level names.
"""

from scenarios.report import PHRASINGS_MIN, agent_coverage, render, render_coverage, rule_rates, summary
from scenarios.rules import RULES, Observation, Rule, register
from scenarios.runner import (
    Product,
    RecordingModel,
    ScenarioClock,
    ScenarioResult,
    SuiteResult,
    run_scenario,
    run_suite,
)
from scenarios.spec import Scenario, ScenarioError, Suite, bundled_suites, load_suite

__all__ = [
    "PHRASINGS_MIN",
    "RULES",
    "Observation",
    "Product",
    "RecordingModel",
    "Rule",
    "Scenario",
    "ScenarioClock",
    "ScenarioError",
    "ScenarioResult",
    "Suite",
    "SuiteResult",
    "agent_coverage",
    "bundled_suites",
    "load_suite",
    "register",
    "render",
    "render_coverage",
    "rule_rates",
    "run_scenario",
    "run_suite",
    "summary",
]
