"""Voice text frames are parsed within limits, in time linear in their size: brackets
inside strings do not count as nesting, and no frame (however its quotes and escapes
are arranged) makes the check itself slow."""

from __future__ import annotations

import json
import time

import pytest

from voice.edge import FRAME_DEPTH_MAX, parse_frame
from voice.errors import BadJson, FrameTooLarge, ProtocolViolation, VoiceError

LIMIT = 64 * 1024


def test_brackets_inside_strings_are_not_nesting() -> None:
    event = {"type": "x", "text": "[" * 100, "quoted": '\\"{{{{'}
    assert parse_frame(json.dumps(event), bytes_max=LIMIT) == event


def test_nesting_at_the_limit_passes_and_beyond_it_is_refused() -> None:
    at = '{"a": ' + "[" * (FRAME_DEPTH_MAX - 1) + "]" * (FRAME_DEPTH_MAX - 1) + "}"
    assert "a" in parse_frame(at, bytes_max=LIMIT)  # the object and its lists: exactly the limit
    with pytest.raises(ProtocolViolation):
        parse_frame('{"a": ' + "[" * FRAME_DEPTH_MAX + "]" * FRAME_DEPTH_MAX + "}", bytes_max=LIMIT)


@pytest.mark.parametrize(
    "frame",
    [
        '"' + '\\"' * 30_000,  # one string that never closes, full of escaped quotes
        '"' * 60_000,
        '"x"' * 20_000,
        "[" * 60_000,
        '{"a":' * 12_000,
        "\\" * 60_000,
    ],
)
def test_no_frame_makes_the_check_slow(frame: str) -> None:
    began = time.perf_counter()
    with pytest.raises(VoiceError):
        parse_frame(frame, bytes_max=LIMIT)
    assert time.perf_counter() - began < 0.5


def test_size_and_shape_refusals() -> None:
    with pytest.raises(FrameTooLarge):
        parse_frame("x" * (LIMIT + 1), bytes_max=LIMIT)
    with pytest.raises(FrameTooLarge):
        parse_frame("é" * (LIMIT // 2 + 1), bytes_max=LIMIT)  # counted in bytes, not characters
    with pytest.raises(BadJson):
        parse_frame("{nope", bytes_max=LIMIT)
    with pytest.raises(ProtocolViolation):
        parse_frame("[1, 2]", bytes_max=LIMIT)
    with pytest.raises(ProtocolViolation):
        parse_frame(None, bytes_max=LIMIT)
