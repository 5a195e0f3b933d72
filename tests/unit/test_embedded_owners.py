"""pgserver's handle file after `kill -9`: the pids of dead owners are forgotten, so the
next clean stop of the last live owner really stops the embedded PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from database.embedded import forget_dead_owners


def a_dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_dead_owners_are_forgotten_and_live_ones_kept(tmp_path: Path) -> None:
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        dead = a_dead_pid()
        handles = tmp_path / ".handle_pids.json"
        handles.write_text(json.dumps([dead, os.getpid(), alive.pid]))
        assert forget_dead_owners(tmp_path) == [dead]
        assert json.loads(handles.read_text()) == [os.getpid(), alive.pid]
    finally:
        alive.kill()
        alive.wait()


def test_a_reused_pid_of_another_program_is_not_an_owner(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        (tmp_path / ".handle_pids.json").write_text(json.dumps([other.pid]))
        assert forget_dead_owners(tmp_path) == [other.pid]
    finally:
        other.kill()
        other.wait()


def test_a_missing_or_torn_handle_file_is_no_owner(tmp_path: Path) -> None:
    assert forget_dead_owners(tmp_path) == []
    (tmp_path / ".handle_pids.json").write_text("[12")
    assert forget_dead_owners(tmp_path) == []
    assert json.loads((tmp_path / ".handle_pids.json").read_text()) == []
