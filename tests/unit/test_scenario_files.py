"""Scenario files are read strictly, so a broken suite cannot pass by being half-read: a
malformed file names the file, the line and the field, and an unknown expectation key is
an error, never ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios import RULES, ScenarioError, bundled_suites, load_suite

GOOD = """\
suite: tiny
threshold: 0.5
defaults:
  clock: "2026-11-30T09:00:00+07:00"
scenarios:
  - name: one
    turns:
      - say: turn on the bedroom light
        expect:
          handoffs: [zee]
          home: {sbx-light-bedroom: {switch_led: true}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


def failure(tmp_path: Path, text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        load_suite(write(tmp_path, text))
    return caught.value


def test_a_good_file_reads_with_its_defaults(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, GOOD))
    assert suite.name == "tiny" and suite.threshold == 0.5
    (scenario,) = suite.scenarios
    assert scenario.door == "text" and scenario.time_zone.key == "Asia/Jakarta"
    assert scenario.clock.isoformat() == "2026-11-30T09:00:00+07:00"
    assert [e.rule for e in scenario.turns[0].expect] == ["handoffs", "home"]
    assert scenario.turns[0].expect[0].line == 10


def test_an_unknown_expectation_key_names_file_line_and_field(tmp_path: Path) -> None:
    error = failure(tmp_path, GOOD.replace("handoffs: [zee]", "handoff: [zee]"))
    assert error.path.endswith("suite.yaml") and error.line == 10
    assert error.field == "scenarios[0] (one).turns[0].expect.handoff"
    assert "unknown key" in error.message and "handoffs" in error.message
    assert str(error).startswith(f"{error.path}:10: scenarios[0] (one).turns[0].expect.handoff:")


def test_a_wrong_expectation_value_names_its_field(tmp_path: Path) -> None:
    error = failure(tmp_path, GOOD.replace("handoffs: [zee]", "handoffs: [bob]"))
    assert (error.line, error.field) == (10, "scenarios[0] (one).turns[0].expect.handoffs")
    assert "agent names" in error.message


@pytest.mark.parametrize(
    ("change", "line", "field"),
    [
        (("door: text", "door: fax"), 4, "defaults.door"),
        (("  clock:", "  time_zone: Mars/Olympus\n  clock:"), 4, "defaults.time_zone"),
        (('"2026-11-30T09:00:00+07:00"', '"2026-11-30T09:00:00"'), 4, "defaults.clock"),
        (("      - say: turn on the bedroom light", "      - say: '  '"), 8, "scenarios[0] (one).turns[0].say"),
        (("  - name: one", "  - name: one\n    colour: blue"), 7, "scenarios[0].colour"),
        (("threshold: 0.5", "threshold: 2"), 2, "threshold"),
        (
            ("home: {sbx-light-bedroom: {switch_led: true}}", "home: maybe"),
            11,
            "scenarios[0] (one).turns[0].expect.home",
        ),
        (
            ("    turns:", "    thread:\n      - {author: zee, text: hi}\n    turns:"),
            8,
            "scenarios[0] (one).thread[0].author",
        ),
    ],
)
def test_each_malformed_field_is_named_with_its_line(
    tmp_path: Path, change: tuple[str, str], line: int, field: str
) -> None:
    text = GOOD if "door" not in change[0] else GOOD.replace("defaults:\n", "defaults:\n  door: text\n")
    error = failure(tmp_path, text.replace(*change))
    assert (error.line, error.field) == (line, field), str(error)


@pytest.mark.parametrize(
    "value",
    [
        "maybe",
        "{at_local: '2026-11-30 17:00'}",
        "{at_local: '2026-02-30T17:00'}",
        "{note_contains: Nay}",
        "{at_local: '2026-11-30T17:00', when: soon}",
    ],
)
def test_a_malformed_wake_is_named(tmp_path: Path, value: str) -> None:
    error = failure(tmp_path, GOOD.replace("home: {sbx-light-bedroom: {switch_led: true}}", f"wake: {value}"))
    assert (error.line, error.field) == (11, "scenarios[0] (one).turns[0].expect.wake"), str(error)


def test_broken_yaml_names_the_line(tmp_path: Path) -> None:
    error = failure(tmp_path, GOOD.replace("handoffs: [zee]", "handoffs: [zee"))
    assert error.field == "yaml" and error.line >= 10


def test_a_missing_say_and_a_duplicate_name_are_errors(tmp_path: Path) -> None:
    assert failure(tmp_path, GOOD.replace("say: turn on the bedroom light", "sey: hi")).field.endswith("turns[0].sey")
    twice = GOOD + GOOD.split("scenarios:\n", 1)[1]
    error = failure(tmp_path, twice)
    assert error.field == "name" and "twice" in error.message


def test_the_bundled_suites_read_and_cover_every_rule() -> None:
    suites = [load_suite(path) for path in bundled_suites()]
    starter = next(s for s in suites if s.name == "starter")
    assert len(starter.scenarios) >= 60
    used = {e.rule for s in suites for sc in s.scenarios for t in sc.turns for e in t.expect}
    assert used == set(RULES), f"rules no bundled scenario uses: {set(RULES) - used}"
    assert any(len(sc.turns) > 1 for sc in starter.scenarios), "multi-turn follow-ups"
    assert {sc.door for sc in starter.scenarios} == {"text", "voice", "phone"}


def test_default_expectations_join_every_judged_turn_and_yield_to_its_own(tmp_path: Path) -> None:
    text = GOOD.replace("defaults:\n", "defaults:\n  expect:\n    runs_succeed: true\n    handoffs: []\n")
    text = text.replace(
        "    turns:\n", "    turns:\n      - say: hello\n      - say: hi\n        expect:\n          asks: false\n"
    )
    (scenario,) = load_suite(write(tmp_path, text)).scenarios
    hello, hi, light = scenario.turns
    assert hello.expect == ()
    assert [e.rule for e in hi.expect] == ["asks", "runs_succeed", "handoffs"]
    assert {e.rule: e.value for e in light.expect}["handoffs"] == ["zee"], "the turn's own value wins"
    error = failure(tmp_path, GOOD.replace("defaults:\n", "defaults:\n  expect:\n    runs_succeeded: true\n"))
    assert (error.line, error.field) == (5, "defaults.expect.runs_succeeded")
