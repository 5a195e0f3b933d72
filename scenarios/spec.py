"""Scenario files: what a conversation scenario says, read from YAML with exact errors.

A suite file holds defaults and a list of scenarios; each scenario sets up a person's
thread (earlier messages, the sandbox home, the door, the time zone and clock) and plays
one or more turns, each with expectations named by rule. Every value is checked while
reading, and every error names the file, the line and the field, so a typo in an
expectation can never pass silently: an unknown key is an error, not ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from agents import AGENTS, HUMAN, POSTERA, Channel

DOORS = ("text", "voice", "phone")
AUTHORS = (HUMAN, POSTERA, *AGENTS)
FILE_CHARS_MAX = 1_000_000
SCENARIOS_MAX = 1_000
TURNS_MAX = 20


class ScenarioError(Exception):
    """A scenario file that cannot be run as written: names the file, line and field."""

    def __init__(self, path: str, line: int, field_name: str, message: str) -> None:
        super().__init__(f"{path}:{line}: {field_name}: {message}")
        self.path, self.line, self.field, self.message = path, line, field_name, message


@dataclass(frozen=True, slots=True)
class Expectation:
    rule: str  # the expectation key, which names the rule it is reported under
    value: Any
    line: int


@dataclass(frozen=True, slots=True)
class Turn:
    say: str
    expect: tuple[Expectation, ...] = ()


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    path: str
    line: int
    door: Channel  # text or voice
    time_zone: ZoneInfo
    clock: datetime
    person: str = "Budi"
    about: str = ""
    thread: tuple[tuple[str, str], ...] = ()  # (author, text) written before the first turn
    home: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # device id -> data points
    turns: tuple[Turn, ...] = ()


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    path: str
    threshold: float  # the share of scenarios that must pass, 0..1
    scenarios: tuple[Scenario, ...]


class _Reader:
    """Walks a composed YAML node tree, turning nodes into values with their line numbers."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self._loader = yaml.SafeLoader(text)

    def root(self) -> yaml.Node:
        try:
            node = self._loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            raise ScenarioError(self.path, (mark.line + 1) if mark else 1, "yaml", str(exc.problem)) from exc
        if node is None:
            raise ScenarioError(self.path, 1, "file", "the file is empty")
        return node

    def fail(self, node: yaml.Node, name: str, message: str) -> ScenarioError:
        return ScenarioError(self.path, node.start_mark.line + 1, name, message)

    def mapping(
        self, node: yaml.Node, name: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()
    ) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, name, "must be a mapping of keys to values")
        out: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = self.value(key_node)
            where = f"{name}.{key}" if name else str(key)
            if not isinstance(key, str) or key not in allowed:
                raise self.fail(key_node, where, f"unknown key; expected one of: {', '.join(allowed)}")
            if key in out:
                raise self.fail(key_node, where, "given twice")
            out[key] = value_node
        for key in required:
            if key not in out:
                raise self.fail(node, f"{name}.{key}" if name else key, "is required")
        return out

    def sequence(self, node: yaml.Node, name: str, limit: int) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, name, "must be a list")
        if len(node.value) > limit:
            raise self.fail(node, name, f"holds at most {limit} items")
        return list(node.value)

    def value(self, node: yaml.Node) -> Any:
        return self._loader.construct_object(node, deep=True)

    def typed(
        self,
        node: yaml.Node,
        name: str,
        kind: type | tuple[type, ...],
        check: Callable[[Any], str | None] | None = None,
    ) -> Any:
        value = self.value(node)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise self.fail(node, name, f"must be {names}, not {value!r}")
        problem = check(value) if check else None
        if problem:
            raise self.fail(node, name, problem)
        return value


_SUITE_KEYS = ("suite", "threshold", "defaults", "scenarios")
_DEFAULT_KEYS = ("door", "time_zone", "clock", "person", "expect")
_SCENARIO_KEYS = ("name", "about", "door", "time_zone", "clock", "person", "thread", "home", "turns")


def _zone(value: str) -> str | None:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        return f"{value!r} is not an IANA time zone (like Asia/Jakarta)"
    return None


def _clock(value: Any) -> str | None:
    if isinstance(value, datetime):
        return None if value.tzinfo else "needs a UTC offset, like 2026-11-30T09:00:00+07:00"
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return f"{value!r} is not an ISO date and time"
    return None if moment.tzinfo else "needs a UTC offset, like 2026-11-30T09:00:00+07:00"


def _as_clock(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _nonblank(value: str) -> str | None:
    return None if value.strip() else "must not be blank"


class _SuiteReader(_Reader):
    # Expectations from `defaults.expect`, added to every turn that has its own.
    _every_turn: tuple[Expectation, ...] = ()

    def suite(self, fallback_name: str) -> Suite:
        top = self.mapping(self.root(), "", _SUITE_KEYS, ("scenarios",))
        name = self.typed(top["suite"], "suite", str, _nonblank) if "suite" in top else fallback_name
        threshold = 1.0
        if "threshold" in top:
            threshold = float(
                self.typed(
                    top["threshold"], "threshold", (int, float), lambda v: None if 0 <= v <= 1 else "between 0 and 1"
                )
            )
        defaults: dict[str, Any] = {"door": "text", "time_zone": "Asia/Jakarta", "clock": None, "person": "Budi"}
        if "defaults" in top:
            keys = self.mapping(top["defaults"], "defaults", _DEFAULT_KEYS)
            defaults |= self._setup(keys, "defaults")
            if "expect" in keys:  # judged on every turn that has expectations of its own
                self._every_turn = self._expectations(keys["expect"], "defaults.expect")
        scenarios = [
            self.scenario(node, f"scenarios[{i}]", defaults)
            for i, node in enumerate(self.sequence(top["scenarios"], "scenarios", SCENARIOS_MAX))
        ]
        seen: dict[str, int] = {}
        for scenario in scenarios:
            if scenario.name in seen:
                raise ScenarioError(self.path, scenario.line, "name", f"{scenario.name!r} is used twice")
            seen[scenario.name] = scenario.line
        return Suite(name=name, path=self.path, threshold=threshold, scenarios=tuple(scenarios))

    def _setup(self, keys: dict[str, yaml.Node], where: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if "door" in keys:
            out["door"] = self.typed(
                keys["door"], f"{where}.door", str, lambda v: None if v in DOORS else f"one of {DOORS}"
            )
        if "time_zone" in keys:
            out["time_zone"] = self.typed(keys["time_zone"], f"{where}.time_zone", str, _zone)
        if "clock" in keys:
            out["clock"] = _as_clock(self.typed(keys["clock"], f"{where}.clock", (str, datetime), _clock))
        if "person" in keys:
            out["person"] = self.typed(keys["person"], f"{where}.person", str, _nonblank)
        return out

    def scenario(self, node: yaml.Node, where: str, defaults: dict[str, Any]) -> Scenario:
        keys = self.mapping(node, where, _SCENARIO_KEYS, ("name", "turns"))
        setup = defaults | self._setup(keys, where)
        if setup["clock"] is None:
            raise self.fail(node, f"{where}.clock", "is required (here or in defaults)")
        name = self.typed(keys["name"], f"{where}.name", str, _nonblank)
        where = f"{where} ({name})"
        return Scenario(
            name=name,
            path=self.path,
            line=node.start_mark.line + 1,
            door=setup["door"],
            time_zone=ZoneInfo(setup["time_zone"]),
            clock=setup["clock"],
            person=setup["person"],
            about=self.typed(keys["about"], f"{where}.about", str) if "about" in keys else "",
            thread=self._thread(keys.get("thread"), f"{where}.thread"),
            home=self._home(keys.get("home"), f"{where}.home"),
            turns=tuple(
                self._turn(t, f"{where}.turns[{i}]")
                for i, t in enumerate(self.sequence(keys["turns"], f"{where}.turns", TURNS_MAX))
            ),
        )

    def _thread(self, node: yaml.Node | None, where: str) -> tuple[tuple[str, str], ...]:
        if node is None:
            return ()
        out: list[tuple[str, str]] = []
        for i, item in enumerate(self.sequence(node, where, 200)):
            keys = self.mapping(item, f"{where}[{i}]", ("author", "text"), ("author", "text"))
            author = self.typed(
                keys["author"], f"{where}[{i}].author", str, lambda v: None if v in AUTHORS else f"one of {AUTHORS}"
            )
            if i == 0 and author not in (HUMAN, POSTERA):
                raise self.fail(item, f"{where}[{i}].author", "the thread starts with the person's message (or a note)")
            out.append((author, self.typed(keys["text"], f"{where}[{i}].text", str, _nonblank)))
        return tuple(out)

    def _home(self, node: yaml.Node | None, where: str) -> dict[str, dict[str, Any]]:
        if node is None:
            return {}
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, where, "must map device ids to their data points")
        out: dict[str, dict[str, Any]] = {}
        for key_node, value_node in node.value:
            device = self.typed(key_node, where, str, _nonblank)
            points = self.typed(value_node, f"{where}.{device}", dict, lambda v: None if v else "must not be empty")
            out[device] = dict(points)
        return out

    def _turn(self, node: yaml.Node, where: str) -> Turn:
        keys = self.mapping(node, where, ("say", "expect"), ("say",))
        say = self.typed(keys["say"], f"{where}.say", str, _nonblank)
        if "expect" not in keys:
            return Turn(say=say)  # a turn that only sets the scene
        own = self._expectations(keys["expect"], f"{where}.expect")
        named = {e.rule for e in own}
        return Turn(say=say, expect=own + tuple(e for e in self._every_turn if e.rule not in named))

    def _expectations(self, node: yaml.Node, where: str) -> tuple[Expectation, ...]:
        from scenarios.rules import RULES  # the rules validate their own expected values

        expectations: list[Expectation] = []
        for rule, value_node in self.mapping(node, where, tuple(RULES)).items():
            value = self.value(value_node)
            problem = RULES[rule].validate(value)
            if problem:
                raise self.fail(value_node, f"{where}.{rule}", problem)
            expectations.append(Expectation(rule, value, value_node.start_mark.line + 1))
        return tuple(expectations)


def load_suite(path: Path) -> Suite:
    """Read and check one suite file; raises ScenarioError naming file, line and field."""
    text = path.read_text("utf-8")
    if len(text) > FILE_CHARS_MAX:
        raise ScenarioError(str(path), 1, "file", f"is larger than {FILE_CHARS_MAX} characters")
    return _SuiteReader(str(path), text).suite(path.stem)


def bundled_suites() -> list[Path]:
    """The suites shipped with the product (scenarios/suites/*.yaml)."""
    return sorted((Path(__file__).parent / "suites").glob("*.yaml"))
