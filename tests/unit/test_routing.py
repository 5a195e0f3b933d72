"""The mention parser and router (docs/agents.md#routing), by example and by property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat import mentions, route

AGENT_NAMES = ("ava", "zee", "yori", "rafal")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("turn on the light", ()),
        ("@zee status of the AC", ("zee",)),
        ("@ZEE, lights", ("zee",)),
        ("hey @Rafal!", ("rafal",)),
        ("@zee @zee @Zee", ("zee",)),
        ("@yori then @zee", ("yori", "zee")),
        ("mail me@zee.com", ()),
        ("@zeebo hi", ()),
        ("@bob hi", ()),
        ("@@zee", ()),
        ("(@zee)", ("zee",)),
        ("@zee_x", ()),
        ("@zee.", ("zee",)),
    ],
)
def test_mentions(text: str, expected: tuple[str, ...]) -> None:
    assert mentions(text) == expected


@pytest.mark.parametrize(
    ("text", "agent"),
    [
        ("turn on the light", "ava"),
        ("@rafal any email today?", "rafal"),
        ("@zee status", "zee"),
        ("@zee and @yori", "ava"),
        ("@bob hi", "ava"),
        ("@ava hi", "ava"),
        ("@zee @ZEE hi", "zee"),
    ],
)
def test_route(text: str, agent: str) -> None:
    assert route(text) == agent


words = st.text(alphabet=st.characters(blacklist_characters="@"), max_size=30)


@given(st.lists(st.tuples(words, st.sampled_from(AGENT_NAMES), st.booleans()), max_size=6), words)
def test_mentions_are_the_distinct_tags_in_order(parts: list[tuple[str, str, bool]], tail: str) -> None:
    text = ""
    expected: list[str] = []
    for filler, name, upper in parts:
        text += filler + " @" + (name.upper() if upper else name) + " "
        if name not in expected:
            expected.append(name)
    text += tail
    assert mentions(text) == tuple(expected)


@given(st.text(max_size=200))
def test_route_is_always_a_known_agent_and_agrees_with_mentions(text: str) -> None:
    agent = route(text)
    assert agent in AGENT_NAMES
    found = mentions(text)
    assert agent == (found[0] if len(found) == 1 else "ava")
    assert len(set(found)) == len(found)


@given(st.text(alphabet=st.characters(blacklist_characters="@"), max_size=200))
def test_text_without_at_signs_goes_to_ava(text: str) -> None:
    assert mentions(text) == ()
    assert route(text) == "ava"


@given(st.sampled_from(AGENT_NAMES), st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=5))
def test_a_longer_name_is_not_a_mention(name: str, suffix: str) -> None:
    assert mentions(f"@{name}{suffix} hi") == ()
