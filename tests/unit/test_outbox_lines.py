"""The outbox file's lines (chat.outbox): a model call and a voice slice read back as they
were written, a line written before slices were kept there still reads as a model call, and
a dead process's file holding both kinds is handed to the sweep whole."""

from __future__ import annotations

import fcntl
import os
from datetime import UTC, datetime
from pathlib import Path

from chat.outbox import Outbox, PendingCall, PendingSlice, read_line
from ledger import VoiceUsage

AT = datetime(2026, 12, 3, 7, 30, tzinfo=UTC)
CALL = PendingCall("usr_1", "run_1", 2, "zee", "human", "gemini-2.5-flash", {"prompt_tokens": 10}, AT)
SLICE = PendingSlice(
    "usr_1",
    "call_1",
    3,
    "phone",
    VoiceUsage(stt_engine="whisper", stt_ms=1500, tts_engine="espeak", tts_characters=9),
    AT,
)


def test_both_kinds_read_back_as_written() -> None:
    assert read_line(CALL.as_line()) == CALL
    assert read_line(SLICE.as_line()) == SLICE
    assert SLICE.ref == "voice:call_1:3"
    assert SLICE.key != CALL.key


def test_a_line_without_a_kind_is_a_model_call() -> None:
    older = (
        b'{"person_id":"usr_1","run_id":"run_1","index":2,"agent":"zee","trigger":"human",'
        b'"model":"gemini-2.5-flash","usage":{"prompt_tokens":10},"at":"2026-12-03T07:30:00+00:00"}\n'
    )
    assert read_line(older) == CALL


def test_a_dead_processs_file_gives_the_sweep_its_calls_and_slices(tmp_path: Path) -> None:
    folder = tmp_path / "outbox"
    folder.mkdir()
    left = folder / "calls-1-dead.jsonl"  # its process is gone: nobody holds its lock
    left.write_bytes(CALL.as_line() + SLICE.as_line() + b'{"cut short')
    mine = Outbox(folder)

    [(path, entries)] = mine.orphans()

    assert path == left and entries == [CALL, SLICE]  # the line a crash cut short is skipped
    mine.forget(path)
    assert not left.exists()
    mine.close()


def test_a_living_processs_file_is_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "outbox"
    folder.mkdir()
    other = folder / "calls-2-alive.jsonl"
    other.write_bytes(SLICE.as_line())
    fd = os.open(other, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as its living process holds it
    mine = Outbox(folder)
    try:
        assert mine.orphans() == []
    finally:
        mine.close()
        os.close(fd)
