"""Limits through the real app (docs/http.md#limits): each refusal is 429 problem+json with
`Retry-After`, each count lives in the database, so two instances sharing it share the
limit, and simultaneous opens of live-event streams take exactly the cap."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest

from app.server import running
from chat import Limits, Rate, RateLimited
from settings import Settings
from tests.conftest import App
from tests.fakes.servers import serve_in_process

PROBLEM = "application/problem+json"
SIGN_INS_MAX = 7
STREAMS_MAX = 5


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "sign_ins_per_address_max": SIGN_INS_MAX,
            "sign_in_window_s": 3600,
            "runs_per_person_per_minute_max": 3,
            "runs_in_flight_per_person_max": 1,
            "sse_streams_per_person_max": STREAMS_MAX,
        }
    )


def assert_limited(response: httpx.Response, type_: str = "rate_limited") -> None:
    assert response.status_code == 429, response.text
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["type"] == type_
    assert int(response.headers["retry-after"]) >= 1


def client_from(app: App, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app.app, client=(address, 40_000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def people_count(app: App) -> int:
    count: int = await app.services.pool.fetchval("SELECT count(*) FROM people")
    return count


async def test_a_flood_of_sign_ins_from_one_address_is_limited_after_the_configured_count(app: App) -> None:
    async with client_from(app, "203.0.113.7") as client:
        answers = [await client.post("/v1/auth/local", json={"name": f"Farm {n}"}) for n in range(1_000)]
    assert [a.status_code for a in answers[:SIGN_INS_MAX]] == [200] * SIGN_INS_MAX
    for answer in answers[SIGN_INS_MAX:]:
        assert_limited(answer)
    # Only the admitted sign-ins made people (and gave grants); another address is not held back.
    assert await people_count(app) == SIGN_INS_MAX
    async with client_from(app, "198.51.100.9") as elsewhere:
        assert (await elsewhere.post("/v1/auth/local", json={"name": "Sari"})).status_code == 200


async def test_the_sign_in_limit_holds_across_instances_sharing_the_database(app: App, settings: Settings) -> None:
    async with running(settings.model_copy(update={"voice_preload": False})) as (_, second_app):
        first = client_from(app, "203.0.113.8")
        second = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=second_app, client=("203.0.113.8", 40_001)), base_url="http://test"
        )
        async with first, second:
            answers = await asyncio.gather(
                *(
                    (first if n % 2 else second).post("/v1/auth/local", json={"name": f"Twin {n}"})
                    for n in range(3 * SIGN_INS_MAX)
                )
            )
    assert sorted(a.status_code for a in answers) == [200] * SIGN_INS_MAX + [429] * (2 * SIGN_INS_MAX)


async def test_messages_per_minute_are_limited_per_person(app: App) -> None:
    headers = await app.sign_in()
    for n in range(3):
        assert (await app.say(headers, f"hello {n}")).status_code == 200
    refused = await app.say(headers, "one more")
    assert_limited(refused)
    # The refused message never reached the thread; another person is not held back.
    page = (await app.client.get("/v1/messages", headers=headers)).json()["messages"]
    assert "one more" not in [m["text"] for m in page]
    assert (await app.say(await app.sign_in("Sari"), "hello")).status_code == 200


async def test_messages_in_flight_are_limited_per_person(app: App) -> None:
    headers = await app.sign_in()
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    # Another instance's message in flight holds the person's one place (the lease is in the database).
    other_instance = Limits(app.services.pool)
    held = await other_instance.take(f"runs_in_flight:{me}", cap=1, ttl_s=60, refused=RateLimited("taken"))
    try:
        assert_limited(await app.say(headers, "while another is running"))
    finally:
        await other_instance.release(held)
    assert (await app.say(headers, "now it is my turn")).status_code == 200


@contextlib.asynccontextmanager
async def opened(client: httpx.AsyncClient, headers: dict[str, str]) -> AsyncIterator[httpx.Response]:
    async with client.stream("GET", "/v1/events", headers=headers) as response:
        yield response


async def open_at_once(urls: list[str], headers: dict[str, str], n: int) -> tuple[list[int], contextlib.AsyncExitStack]:
    """Open `n` live-event streams at once, round the given servers; their statuses, and
    the stack that holds the accepted ones open."""
    stack = contextlib.AsyncExitStack()
    clients = [await stack.enter_async_context(httpx.AsyncClient(base_url=u, timeout=30)) for u in urls]
    answers = await asyncio.gather(
        *(stack.enter_async_context(opened(clients[i % len(clients)], headers)) for i in range(n))
    )
    return [a.status_code for a in answers], stack


async def test_twenty_simultaneous_streams_for_one_person_yield_exactly_the_cap(app: App) -> None:
    headers = await app.sign_in()
    async with serve_in_process(app.app) as url:
        statuses, stack = await open_at_once([url], headers, 20)
        async with stack:
            assert sorted(statuses) == [200] * STREAMS_MAX + [429] * (20 - STREAMS_MAX)
            refused = await stack.enter_async_context(httpx.AsyncClient(base_url=url))
            assert_limited(await refused.get("/v1/events", headers=headers), "too_many_streams")
        # Closed streams give their places back.
        statuses, stack = await open_at_once([url], headers, STREAMS_MAX)
        async with stack:
            assert statuses == [200] * STREAMS_MAX


async def test_streams_are_capped_across_instances(app: App, settings: Settings) -> None:
    headers = await app.sign_in()
    async with (
        running(settings.model_copy(update={"voice_preload": False})) as (_, second_app),
        serve_in_process(app.app) as first_url,
        serve_in_process(second_app) as second_url,
    ):
        statuses, stack = await open_at_once([first_url, second_url], headers, 20)
        async with stack:
            assert sorted(statuses) == [200] * STREAMS_MAX + [429] * (20 - STREAMS_MAX)


class _LosingReleases:
    """The pool, except that the first `lose` releases meet a lost database."""

    def __init__(self, pool: object, lose: int) -> None:
        self._pool = pool
        self.lose = lose

    async def execute(self, query: str, *args: object) -> str:
        if query.startswith("DELETE FROM limit_leases WHERE id = $1") and self.lose:
            self.lose -= 1
            raise ConnectionResetError("the database went away")
        result: str = await self._pool.execute(query, *args)  # type: ignore[attr-defined]
        return result

    def __getattr__(self, name: str) -> object:
        return getattr(self._pool, name)


async def test_a_release_lost_to_an_outage_is_let_go_with_the_next_take(app: App) -> None:
    """The lease tables survive a clean restart of the database (they are unlogged, not
    truncated): a release the outage swallowed must not hold its place for the lease's time
    to live, or a person whose turns were cut off is refused for minutes afterwards."""
    losing = _LosingReleases(app.services.pool, lose=2)
    limits = Limits(losing)  # type: ignore[arg-type]
    refused = RateLimited("full", retry_after_s=1)
    for _ in range(2):
        async with limits.lease("runs_in_flight:usr_x", cap=2, ttl_s=900, refused=refused):
            pass  # released into the outage
    assert losing.lose == 0
    async with limits.lease("runs_in_flight:usr_x", cap=2, ttl_s=900, refused=refused):
        held = await app.services.pool.fetchval("SELECT count(*) FROM limit_leases WHERE key = 'runs_in_flight:usr_x'")
        assert held == 1, "the two lost releases were let go before this take"


async def test_a_window_seen_full_refuses_here_without_counting_and_still_holds_elsewhere(app: App) -> None:
    """Once this process saw a window hold its count, it refuses until the window ends
    without asking the database (the count stops growing); another instance, asking the
    database, refuses too."""
    assert app.services.limits is not None
    here, elsewhere = app.services.limits, Limits(app.services.pool)
    rate = Rate(max=SIGN_INS_MAX, window_s=3600)
    for _ in range(SIGN_INS_MAX):
        await here.hit("test:flood", rate, what="tries")
    for _ in range(2 * SIGN_INS_MAX):
        with pytest.raises(RateLimited) as refused:
            await here.hit("test:flood", rate, what="tries")
        assert 1 <= refused.value.retry_after_s <= 3600
    counted = await app.services.pool.fetchval("SELECT hits FROM limit_windows WHERE key = 'test:flood'")
    assert counted == SIGN_INS_MAX, "the refusals after the window was full cost no statement"
    with pytest.raises(RateLimited):
        await elsewhere.hit("test:flood", rate, what="tries")
    with pytest.raises(RateLimited):
        await here.check("test:flood", rate, what="tries")
    # Another key, and the same key under a longer allowance, are not held back by the memory.
    await here.hit("test:other", rate, what="tries")
    await here.hit("test:flood", Rate(max=100, window_s=3600), what="tries")
