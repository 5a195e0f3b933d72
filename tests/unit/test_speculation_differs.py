"""Which part of a turn's first request was not its guess's (chat.speculation.differs): the
label a differed guess is counted under, so a falling adoption says what to look at."""

from __future__ import annotations

from agents import ModelRequest, ToolSpec
from agents.model import Content
from chat.speculation import PARTS, differs

GUESS = ModelRequest(
    model="gemini-2.5-flash",
    system="You are Ava. Now: 2026-12-03 21:00.",
    contents=(
        Content(role="user", text="[2026-12-03 20:58 Budi] hello"),
        Content(role="model", text="[2026-12-03 20:58 Ava] Hi!"),
        Content(role="user", text="[2026-12-03 21:00 Budi] what time is it"),
    ),
    tools=(ToolSpec("ask_zee", "Hand on to Zee.", {"type": "object"}),),
)


def test_an_equal_request_differs_nowhere() -> None:
    assert differs(GUESS, GUESS) is None


def test_each_part_is_named_first_part_first() -> None:
    older = (Content(role="user", text="[2026-12-03 20:57 Budi] remember I like tea"), *GUESS.contents)
    new_minute = (*GUESS.contents[:-1], Content(role="user", text="[2026-12-03 21:01 Budi] what time is it"))
    cases = {
        "model": ModelRequest("gemini-2.5-pro", GUESS.system, GUESS.contents, GUESS.tools),
        "instruction": ModelRequest(GUESS.model, GUESS.system + " Facts: likes tea.", older, GUESS.tools),
        "history": ModelRequest(GUESS.model, GUESS.system, older, GUESS.tools),
        "words": ModelRequest(GUESS.model, GUESS.system, new_minute, GUESS.tools),
        "tools": ModelRequest(GUESS.model, GUESS.system, GUESS.contents, ()),
    }
    assert {part: differs(GUESS, real) for part, real in cases.items()} == {p: p for p in PARTS}
