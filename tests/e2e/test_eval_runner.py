"""The eval runner judges for real, so a pass rate means something: a scenario that must fail does fail, with
the rule named in the report; the CLI exits non-zero below a suite's threshold and names
file, line and field for a malformed file. Runs the whole product on a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import ModelResponse, ScriptedModel
from app.evaluation import eval_product
from cli import _eval
from scenarios import load_suite, render, rule_rates, run_suite
from settings import Settings

MUST_FAIL = """\
suite: must-fail
threshold: 1.0
defaults:
  clock: "2026-11-30T09:00:00+07:00"
scenarios:
  - name: wrong-about-silence-and-the-home
    turns:
      - say: turn on the bedroom light
        expect:
          handoffs: [zee]
          ava_silent: false
          home: unchanged
  - name: right-about-a-greeting
    turns:
      - say: hi
        expect:
          ava_silent: false
"""

VOICE = """\
suite: voice-rules
defaults:
  clock: "2026-11-30T09:00:00+07:00"
  door: voice
scenarios:
  - name: a-sloppy-spoken-reply
    turns:
      - say: hello
        expect:
          spoken_characters: true
          emotion_tags: true
          spoken_sentences_max: 1
          end: true
"""


# The clock is long before the wall's: were "in 5 minutes" or "no past times" read from the
# wall, nothing would be scheduled at 09:05.
WAKES = """\
suite: wake-rule
defaults:
  clock: "2026-01-05T09:00:00+07:00"
scenarios:
  - name: wrong-minute
    turns:
      - say: remind me in 5 minutes to stretch
        expect:
          wake: {at_local: "2026-01-05T09:06", note_contains: stretch}
  - name: scheduled-where-none-was-expected
    turns:
      - say: remind me in 5 minutes to stretch
        expect:
          wake: none
  - name: right-minute-on-the-scenario-clock
    turns:
      - say: remind me in 5 minutes to stretch
        expect:
          wake: {at_local: "2026-01-05T09:05", note_contains: stretch}
  - name: right-minute-wrong-note
    turns:
      - say: remind me in 5 minutes to stretch
        expect:
          wake: {at_local: "2026-01-05T09:05", note_contains: Nay}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


async def test_a_scenario_that_must_fail_fails_with_the_rule_named(settings: Settings, tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, MUST_FAIL))
    async with eval_product(settings) as product:
        result = await run_suite(product, suite)
    wrong, right = result.results
    assert right.passed and not wrong.passed
    assert {v.rule for v in wrong.verdicts if v.failure} == {"ava_silent", "home"}
    # refusals_true judges every turn, written or not (docs/eval.md)
    assert rule_rates([result]) == {
        "ava_silent": (1, 2),
        "handoffs": (1, 1),
        "home": (0, 1),
        "refusals_true": (2, 2),
        "reads_as_sentences": (2, 2),
    }
    assert result.pass_rate == 0.5 and not result.ok
    report = render([result], model="OfflineModel")
    assert "FAIL wrong-about-silence-and-the-home" in report
    assert "[ava_silent] turn 1" in report and "Ava should have answered but stayed silent" in report
    assert "[home] turn 1" in report and "sbx-light-bedroom.switch_led: False -> True" in report
    assert "zee: Done: the bedroom light is on in your sandbox home." in report, (
        "a failed scenario shows its transcript"
    )
    assert "result: BELOW THRESHOLD" in report


async def test_voice_rules_catch_a_sloppy_spoken_reply(settings: Settings, tmp_path: Path) -> None:
    scripted = ScriptedModel([ModelResponse("Hello (there)! How are you? #happy#")])
    async with eval_product(settings, model=scripted) as product:
        result = await run_suite(product, load_suite(write(tmp_path, VOICE)))
    failures = {v.rule: v.failure for v in result.results[0].verdicts if v.failure}
    assert set(failures) == {
        "spoken_characters",
        "emotion_tags",
        "spoken_sentences_max",
        "end",
        "reads_as_sentences",  # the thread keeps "Hello there ! How are you?": brackets dropped, a gap left
    }
    assert "happy" in str(failures["emotion_tags"]) and "(" in str(failures["spoken_characters"])


async def test_the_cli_exits_non_zero_below_the_threshold(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await _eval(settings, [str(write(tmp_path, MUST_FAIL))], [], False) == 1
    assert "1/2 scenarios passed" in capsys.readouterr().out
    only = await _eval(settings, [str(write(tmp_path, MUST_FAIL))], ["right-about"], False)
    assert only == 0, "--only runs just the named scenarios"


async def test_the_cli_names_file_line_and_field_of_a_malformed_file(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, MUST_FAIL.replace("ava_silent: false\n          home", "ava_quiet: false\n          home"))
    assert await _eval(settings, [str(path)], [], False) == 2
    err = capsys.readouterr().err
    assert f"{path}:11: scenarios[0] (wrong-about-silence-and-the-home).turns[0].expect.ava_quiet: unknown key" in err


async def test_the_runner_drives_the_gemini_adapter_like_any_model(settings: Settings, tmp_path: Path) -> None:
    """The same suite runs on the real Gemini adapter (against a fake endpoint): the model
    is only a port to the runner, so `GEMINI_API_KEY=… avagenc eval` judges Gemini alike."""
    from agents.gemini import GeminiModel
    from tests.fakes.gemini_server import FakeGemini, call_part, content_reply, text_reply, usage

    spent: dict[str, Any] = {"usage_metadata": usage(prompt=100, candidates=5), "model_version": None}
    light = {"device_id": "sbx-light-bedroom", "commands": [{"code": "switch_led", "value": True}]}
    async with FakeGemini() as fake:
        fake.script(
            content_reply([call_part("zee", {"tag": "@zee"})], **spent),  # Ava hands on
            content_reply([call_part("send_commands", light)], **spent),  # Zee acts
            text_reply("Done: the bedroom light is on.", **spent),  # Zee reports
            text_reply("", **spent),  # Ava stays silent in text
        )
        gemini = GeminiModel(api_key="k", base_url=fake.base_url, timeout_s=5.0, retries_max=0)
        try:
            async with eval_product(settings, model=gemini) as product:
                result = await run_suite(product, load_suite(write(tmp_path, MUST_FAIL)), only=["wrong-about"])
        finally:
            await gemini.aclose()
    (wrong,) = result.results
    assert {v.rule: v.failure is None for v in wrong.verdicts} == {
        "handoffs": True,
        "ava_silent": False,
        "home": False,
        "refusals_true": True,
        "reads_as_sentences": True,
    }
    assert "zee: Done: the bedroom light is on." in wrong.transcript


async def test_the_wake_rule_judges_pending_notes_on_the_scenario_clock(settings: Settings, tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, WAKES))
    async with eval_product(settings) as product:
        result = await run_suite(product, suite)
    outcome = {r.scenario.name: r for r in result.results}
    assert [r.passed for r in result.results] == [False, False, True, False], render([result], model="OfflineModel")
    (minute,) = [v.failure for v in outcome["wrong-minute"].verdicts if v.rule == "wake"]
    assert minute is not None and "no pending note due at 2026-01-05T09:06" in minute and "09:05" in minute
    (none,) = [v.failure for v in outcome["scheduled-where-none-was-expected"].verdicts if v.rule == "wake"]
    assert none is not None and "nothing should be scheduled" in none and "stretch" in none
    (note,) = [v.failure for v in outcome["right-minute-wrong-note"].verdicts if v.rule == "wake"]
    assert note is not None and "'Nay'" in note
    assert rule_rates([result])["wake"] == (1, 4)
