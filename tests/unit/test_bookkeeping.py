"""`Books`: a turn's bookkeeping writes run beside it, in order, and are waited for only
where the turn needs them; a write that fails is reported once and never blocks the rest."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from chat.bookkeeping import Books


async def test_writes_run_in_the_order_they_were_asked_for_while_the_caller_goes_on() -> None:
    books, done = Books(), []
    gate = asyncio.Event()

    async def slow() -> None:
        await gate.wait()
        done.append("first")

    async def quick() -> None:
        done.append("second")

    books.write(slow)
    books.write(quick)
    await asyncio.sleep(0)
    assert done == [], "the caller was not held up by the writes"
    gate.set()
    await books.settled()
    assert done == ["first", "second"]


async def test_settled_raises_a_failed_write_once_and_the_writes_after_it_still_run() -> None:
    books, done = Books(), []

    async def broken() -> None:
        raise RuntimeError("the database went away")

    async def after() -> None:
        done.append("after")

    books.write(broken)
    books.write(after)
    with pytest.raises(RuntimeError, match="went away"):
        await books.settled()
    assert done == ["after"]
    await books.settled()  # reported once


async def test_each_burst_of_writes_holds_its_own_place_and_lets_it_go_when_idle() -> None:
    opened: list[str] = []

    @contextlib.asynccontextmanager
    async def apart() -> AsyncIterator[None]:
        opened.append("open")
        yield
        opened.append("closed")

    async def nothing() -> None:
        await asyncio.sleep(0)

    books = Books(apart)
    books.write(nothing)
    books.write(nothing)
    await books.settled()
    await asyncio.sleep(0)
    books.write(nothing)
    await books.settled()
    await asyncio.sleep(0)
    assert opened == ["open", "closed", "open", "closed"]


async def test_writes_that_cannot_get_a_connection_are_reported_not_waited_for_for_ever() -> None:
    @contextlib.asynccontextmanager
    async def unreachable() -> AsyncIterator[None]:
        raise OSError("connection refused")
        yield

    ran: list[str] = []

    async def work() -> None:
        ran.append("ran")

    books = Books(unreachable)
    books.write(work)
    books.write(work)
    with pytest.raises(OSError, match="refused"):
        await asyncio.wait_for(books.settled(), timeout=5)
    assert ran == []


async def test_a_write_that_never_runs_is_told_so_its_charge_goes_to_the_sweep() -> None:
    @contextlib.asynccontextmanager
    async def unreachable() -> AsyncIterator[None]:
        raise OSError("connection refused")
        yield

    async def work() -> None:
        raise AssertionError("never runs without a connection")

    told: list[str] = []
    books = Books(unreachable)
    books.write(work, unwritten=lambda: told.append("charge"))
    books.write(work)  # a write nobody asked to hear about
    books.write(work, unwritten=lambda: told.append("tool"))
    with pytest.raises(OSError, match="refused"):
        await asyncio.wait_for(books.settled(), timeout=5)
    assert told == ["charge", "tool"]
