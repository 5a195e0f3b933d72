"""The thread's newest page kept between turns (`Threads.recent`, chat.recent) is always
what a fresh read would give, whatever another process (another `Threads` on the same
database) wrote or erased meanwhile: erased text is never handed out."""

from __future__ import annotations

import asyncio

import asyncpg

from chat.people import People
from chat.threads import Threads


async def _person(pool: asyncpg.Pool, name: str) -> str:
    person, _ = await People(pool, default_time_zone="UTC").sign_in_local(name)
    return person.id


async def _erase(pool: asyncpg.Pool, person_id: str) -> None:
    """What forgetting does to the thread (chat.forgetting), from another process."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("DELETE FROM events WHERE person_id = $1", person_id)
        await conn.execute("DELETE FROM messages WHERE person_id = $1", person_id)
        await conn.execute("UPDATE threads SET last_seq = 0 WHERE person_id = $1", person_id)


async def test_a_thread_forgotten_elsewhere_and_refilled_to_the_same_seq_is_read_afresh(pool: asyncpg.Pool) -> None:
    here, elsewhere = Threads(pool), Threads(pool)
    me = await _person(pool, "Budi")
    for text in ("my pin is 1234", "and my address is Jalan Mawar 5", "thanks"):
        await here.append(me, author="human", text=text, channel="text")
    kept = await here.recent(me, limit=200)
    kept.memo("ctx")[kept.messages[0].id] = "rendered: my pin is 1234"
    await _erase(pool, me)
    # The new thread reaches the very seq the kept page ended at: only the ids tell them apart.
    for text in ("hello", "what time is it", "ok"):
        await elsewhere.append(me, author="human", text=text, channel="text")
    page = await here.recent(me, limit=200)
    assert [(m.seq, m.text) for m in page.messages] == [(1, "hello"), (2, "what time is it"), (3, "ok")]
    assert "rendered: my pin is 1234" not in page.memo("ctx").values()


async def test_more_written_elsewhere_than_a_page_holds_gives_the_newest_page(pool: asyncpg.Pool) -> None:
    here, elsewhere = Threads(pool), Threads(pool)
    me = await _person(pool, "Sari")
    await here.append(me, author="human", text="m1", channel="text")
    assert [m.text for m in (await here.recent(me, limit=3)).messages] == ["m1"]
    for n in range(2, 8):
        await elsewhere.append(me, author="human", text=f"m{n}", channel="text")
    assert [m.text for m in (await here.recent(me, limit=3)).messages] == ["m5", "m6", "m7"]
    await here.append(me, author="human", text="m8", channel="text")  # joins the kept page
    assert [m.text for m in (await here.recent(me, limit=3)).messages] == ["m6", "m7", "m8"]


async def test_forgetting_in_this_process_drops_the_kept_page(pool: asyncpg.Pool) -> None:
    threads = Threads(pool)
    me = await _person(pool, "Wati")
    await threads.append(me, author="human", text="secret", channel="text")
    page = await threads.recent(me, limit=200)
    await _erase(pool, me)
    threads.forgotten(me)
    assert (await threads.recent(me, limit=200)).messages == []
    assert page.messages[0].text == "secret"  # what a reader already held is its own; the store keeps none


async def test_a_write_landing_while_the_page_is_brought_up_to_date_is_kept_once(pool: asyncpg.Pool) -> None:
    threads = Threads(pool)
    me = await _person(pool, "Dewi")
    await threads.append(me, author="human", text="m1", channel="text")
    await threads.recent(me, limit=200)
    # A turn brings its page up to date while another request of this process writes.
    page, _ = await asyncio.gather(
        threads.recent(me, limit=200), threads.append(me, author="human", text="m2", channel="text")
    )
    again = await threads.recent(me, limit=200)
    assert [m.text for m in again.messages] == ["m1", "m2"]
    assert [m.seq for m in page.messages] == sorted({m.seq for m in page.messages})
