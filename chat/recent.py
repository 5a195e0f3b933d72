"""The newest page of each person's thread, kept in this process between their turns.

Why: every turn reads the newest messages of the thread (up to 200) for the agents'
history window and renders each as a line. Once an exchange is long that page is full,
and reading, decoding and rendering it again on every turn was the part of a voice turn
that grew along a call (a home request's turn went from 13-15 ms to 22-24 after fifty
turns in the voice benchmark).

Why it is safe: a message never changes once written, and the only thing that removes
messages is forgetting, which deletes the whole thread and restarts its counter. So a kept
page is brought up to date by reading what follows it, starting at its own newest
message: when that message is still there (the same seq and id; ids are random and never
reused) the page plus what was read is the thread's newest page, whoever wrote since, in
whichever process. Otherwise (the thread was forgotten, or more was written elsewhere than
a page holds) the page is read whole again. Erased text is therefore never handed out;
a process that did the forgetting also drops its page at once (`drop`), and other
processes drop theirs at the person's next turn or when it ages out.

Bounded: at most `people_max` pages holding at most `chars_max` characters of message text
between them (their rendered lines take about as much again), least recently used first
out; and a page unused for `idle_s` is dropped when it is next looked at.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

PEOPLE_MAX = 256
# 200 messages of up to 4,000 characters each make a page of up to 800,000: a few of the
# longest threads, or hundreds of everyday ones (a voice exchange is ~40 characters a line).
CHARS_MAX = 4_000_000
IDLE_S = 600.0


class Numbered(Protocol):
    """A thread message as far as a page cares (chat.threads.Message)."""

    @property
    def id(self) -> str: ...

    @property
    def seq(self) -> int: ...

    @property
    def text(self) -> str: ...


M = TypeVar("M", bound=Numbered)


@dataclass(slots=True)
class RecentPage(Generic[M]):
    """The newest messages of one thread in seq order, and what a reader derived from them."""

    messages: list[M]
    limit: int
    # Per message id, something a reader worked out from the message for one context (the
    # agents' rendered history line for one time zone and name): kept while the page keeps
    # the message, forgotten when the context changes.
    _memo: dict[str, str] = field(default_factory=dict)
    _memo_for: Hashable = None
    chars: int = field(init=False)  # of message text, for the pages' bound

    def __post_init__(self) -> None:
        self.chars = sum(len(m.text) for m in self.messages)

    def memo(self, context: Hashable) -> dict[str, str]:
        """The memo for `context`, emptied first when it was kept for another one."""
        if context != self._memo_for:
            self._memo, self._memo_for = {}, context
        return self._memo

    def extend(self, newer: Iterable[M]) -> None:
        """Add messages that follow the page, keeping only the newest `limit`."""
        added = list(newer)
        self.messages.extend(added)
        self.chars += sum(len(m.text) for m in added)
        if len(self.messages) > self.limit:
            gone, self.messages = self.messages[: -self.limit], self.messages[-self.limit :]
            for message in gone:
                self._memo.pop(message.id, None)
                self.chars -= len(message.text)


class RecentPages(Generic[M]):
    """Each person's newest page, kept for their next turn in this process."""

    def __init__(
        self,
        *,
        people_max: int = PEOPLE_MAX,
        chars_max: int = CHARS_MAX,
        idle_s: float = IDLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._people_max = people_max
        self._chars_max = chars_max
        self._idle_s = idle_s
        self._clock = clock
        self._pages: OrderedDict[str, tuple[RecentPage[M], float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pages)

    def get(self, person_id: str, *, limit: int) -> RecentPage[M] | None:
        """The person's kept page if it was kept for `limit` and used lately."""
        kept = self._pages.get(person_id)
        if kept is None:
            return None
        page, used_at = kept
        if page.limit != limit or self._clock() - used_at > self._idle_s:
            del self._pages[person_id]
            return None
        return page

    def keep(self, person_id: str, page: RecentPage[M]) -> RecentPage[M]:
        """Keep `page` as the person's newest (the most recently used)."""
        self._pages[person_id] = (page, self._clock())
        self._pages.move_to_end(person_id)
        # Pages grow between keeps (`wrote`), so their sizes are summed here, not tracked.
        chars = sum(kept.chars for kept, _ in self._pages.values())
        while len(self._pages) > self._people_max or (chars > self._chars_max and len(self._pages) > 1):
            _, (oldest, _) = self._pages.popitem(last=False)
            chars -= oldest.chars
        return page

    def wrote(self, person_id: str, message: M) -> None:
        """A message this process wrote: it joins the person's page when it follows it."""
        kept = self._pages.get(person_id)
        if kept is None:
            return
        page = kept[0]
        if page.messages and page.messages[-1].seq == message.seq - 1:
            page.extend([message])
        else:
            del self._pages[person_id]  # something came between: the next read fills it in

    def drop(self, person_id: str) -> None:
        self._pages.pop(person_id, None)
