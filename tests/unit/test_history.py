"""The token-budgeted history window and how lines are shown to each agent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from agents import ThreadMessage, to_contents, window

START = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)


def thread(n: int, text: str = "x" * 40) -> list[ThreadMessage]:
    return [ThreadMessage(f"m{i}", i, "human", f"{i} {text}", START + timedelta(minutes=i)) for i in range(1, n + 1)]


def test_window_takes_the_newest_messages_that_fit() -> None:
    messages = thread(100)
    chosen = window(messages, budget_tokens=200)
    assert chosen == messages[-len(chosen) :]
    assert 5 <= len(chosen) < 20


def test_window_always_keeps_the_pinned_messages_in_order() -> None:
    messages = thread(100)
    chosen = window(messages, budget_tokens=200, pinned_ids=["m3", "m100"])
    assert chosen[0].id == "m3"
    assert [m.seq for m in chosen] == sorted(m.seq for m in chosen)
    assert chosen[-1].id == "m100"


def test_a_pinned_message_is_kept_even_over_budget() -> None:
    messages = [ThreadMessage("big", 1, "human", "y" * 100000, START), *thread(3)[1:]]
    chosen = window(messages, budget_tokens=100, pinned_ids=["big"])
    assert [m.id for m in chosen] == ["big"]


def test_contents_show_own_messages_as_model_turns_with_local_time() -> None:
    messages = [
        ThreadMessage("a", 1, "human", "turn on the light", START),
        ThreadMessage("b", 2, "ava", "@zee", START),
        ThreadMessage("c", 3, "zee", "Done.", START),
        ThreadMessage("d", 4, "postera", "Check the AC", START),
    ]
    contents = to_contents(messages, agent_name="zee", person_name="Budi", time_zone=ZoneInfo("Asia/Jakarta"))
    assert [c.role for c in contents] == ["user", "user", "model", "user"]
    assert contents[0].text == "[2026-11-30 08:00 Budi] turn on the light"
    assert contents[1].text == "[2026-11-30 08:00 Ava] @zee"
    assert contents[3].text.startswith("[2026-11-30 08:00 Ava (note to self)]")
