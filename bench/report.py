"""Where a bench's report goes, and what every report says about its own run.

Each bench prints its figures and also keeps them in `bench/results/<name>.md` (git-ignored,
see bench/__init__.py), so `make bench` leaves one file per bench to read or paste from. A
figure is worth little without the code and the machine that made it, so every report opens
with the same header: the commit (`git rev-parse --short HEAD`, "unknown" outside git, with
"+changes" when the tree differs from it), the UTC time and `uptime`'s load averages.
BENCHMARKS.md's table of when each figure was taken is filled from these headers.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

RESULTS = Path(__file__).parent / "results"
_ROOT = Path(__file__).parent.parent
_GIT_TIMEOUT_S = 5.0


def _git(*args: str) -> str | None:
    """One git command's output in the repository, or None outside git (or without git)."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=_ROOT, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit() -> str:
    """The short commit of the code that ran, "+changes" when the tree differs from it."""
    short = _git("rev-parse", "--short", "HEAD")
    if not short:
        return "unknown"
    changed = _git("status", "--porcelain", "--untracked-files=no")
    return short + ("+changes" if changed else "")


def header() -> str:
    """One line: which commit, when (UTC) and how loaded the machine was at the end."""
    one, five, fifteen = os.getloadavg()
    return (
        f"Commit {commit()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores."
    )


def path_for(name: str) -> Path:
    """bench/results/<name>.md."""
    return RESULTS / f"{name}.md"


def write(where: str | Path, text: str) -> Path:
    """Keep `text` under the header, at `where` (a bench's name or a path); returns the path."""
    path = path_for(where) if isinstance(where, str) else where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{header()}\n\n{text.rstrip()}\n", encoding="utf-8")
    return path


class _Tee(io.TextIOBase):
    """Writes to the terminal as it comes, and keeps a copy for the report."""

    def __init__(self, terminal: TextIO) -> None:
        self.terminal = terminal
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.terminal.write(text)

    def flush(self) -> None:
        self.terminal.flush()


@contextlib.contextmanager
def kept(name: str) -> Iterator[None]:
    """For a bench that prints its figures: what it prints inside also goes to its report,
    written even when the run fails part-way (the lines so far say how far it got)."""
    tee = _Tee(sys.stdout)
    try:
        with contextlib.redirect_stdout(tee):
            yield
    finally:
        path = write(name, tee.kept.getvalue())
        print(f"written to {path}")
