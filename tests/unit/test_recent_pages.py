"""`RecentPages`: bounded in people and in idle time, a page keeps at most its limit and
forgets what it derived from messages it lets go."""

from __future__ import annotations

from datetime import UTC, datetime

from chat.recent import RecentPage, RecentPages
from chat.threads import Message

AT = datetime(2026, 12, 2, tzinfo=UTC)


def message(seq: int) -> Message:
    return Message(id=f"msg_{seq}", seq=seq, author="human", text=f"m{seq}", channel="text", run_id=None, created_at=AT)


def test_a_page_keeps_its_newest_limit_and_the_memo_of_those_only() -> None:
    page = RecentPage([message(1), message(2)], limit=2)
    memo = page.memo("Asia/Jakarta")
    memo.update({"msg_1": "line 1", "msg_2": "line 2"})
    page.extend([message(3)])
    assert [m.seq for m in page.messages] == [2, 3]
    assert page.memo("Asia/Jakarta") == {"msg_2": "line 2"}
    assert page.memo("UTC") == {}  # another context starts afresh


def test_a_written_message_joins_the_page_it_follows_and_a_gap_drops_it() -> None:
    pages: RecentPages[Message] = RecentPages()
    pages.keep("p", RecentPage([message(1)], limit=5))
    pages.wrote("p", message(2))
    kept = pages.get("p", limit=5)
    assert kept is not None and [m.seq for m in kept.messages] == [1, 2]
    pages.wrote("p", message(4))  # seq 3 came from elsewhere: the next read fills it in
    assert pages.get("p", limit=5) is None
    pages.wrote("nobody", message(5))  # no page kept: nothing to do
    assert len(pages) == 0


def test_pages_are_bounded_by_people_and_by_idle_time() -> None:
    now = [0.0]
    pages: RecentPages[Message] = RecentPages(people_max=2, idle_s=10.0, clock=lambda: now[0])
    for person in ("a", "b", "c"):
        pages.keep(person, RecentPage([message(1)], limit=5))
    assert len(pages) == 2 and pages.get("a", limit=5) is None  # the least recently used went first
    now[0] = 11.0
    assert pages.get("b", limit=5) is None  # unused for longer than idle_s
    assert pages.get("c", limit=6) is None  # kept for another limit: read afresh


def test_pages_are_bounded_by_the_text_they_hold() -> None:
    pages: RecentPages[Message] = RecentPages(chars_max=5)
    pages.keep("a", RecentPage([message(1)], limit=5))  # "m1": 2 characters
    pages.keep("b", RecentPage([message(2)], limit=5))
    pages.keep("c", RecentPage([message(3), message(4)], limit=5))  # 4 more: over 5, "a" goes, then "b"
    assert pages.get("a", limit=5) is None and pages.get("b", limit=5) is None
    kept = pages.get("c", limit=5)
    assert kept is not None and kept.chars == 4
    kept.extend([message(5)])
    assert kept.chars == 6
    pages.keep("c", kept)  # the newest page stays even alone over the bound
    assert pages.get("c", limit=5) is kept
