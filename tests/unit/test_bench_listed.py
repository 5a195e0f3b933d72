"""Every benchmark in bench/ runs in `make bench` and has a row in BENCHMARKS.md's table of
when each figure was taken, so a new bench cannot be forgotten in either (issue 23 item 8)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Processes a bench starts and drives, not benches: they have a main so that they can be spawned.
STARTED_BY_A_BENCH = {"overhead_server", "voice_server"}


def _benches() -> set[str]:
    """The modules in bench/ that run as `python -m bench.<name>`, but the servers they start."""
    return {
        path.stem for path in (ROOT / "bench").glob("*.py") if 'if __name__ == "__main__":' in path.read_text()
    } - STARTED_BY_A_BENCH


def _make_bench() -> set[str]:
    """The modules the Makefile's `bench` target runs."""
    recipe = ROOT.joinpath("Makefile").read_text().split("\nbench:", 1)[1]
    lines = []
    for line in recipe.splitlines()[1:]:
        if not line.startswith("\t"):
            break
        lines.append(line)
    return set(re.findall(r"-m bench\.(\w+)", "\n".join(lines)))


def _table() -> set[str]:
    """The benches named at the start of a row of the table under BENCHMARKS.md's "When each
    figure was taken"."""
    text = ROOT.joinpath("BENCHMARKS.md").read_text()
    section = text.split("\n## When each figure was taken\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `bench\.(\w+)` \|", section, flags=re.MULTILINE))


def test_there_are_benches_to_check() -> None:
    assert {"turn_overhead", "voice_latency", "call_memory"} <= _benches()


def test_make_bench_runs_every_bench() -> None:
    benches, run = _benches(), _make_bench()
    assert not sorted(benches - run), "not in the Makefile's bench target"
    assert not sorted(run - benches), "the Makefile runs a module that is no bench"


def test_benchmarks_md_says_when_each_bench_last_ran() -> None:
    benches, rows = _benches(), _table()
    assert not sorted(benches - rows), "no row in BENCHMARKS.md's table"
    assert not sorted(rows - benches), "a row in BENCHMARKS.md's table for a module that is no bench"
