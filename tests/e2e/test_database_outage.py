"""The database going away and coming back: every server connection is cut (as a
PostgreSQL restart or a failover does), and the product carries on without a restart:
turns, the learning worker and the wallet's announcements.

Cut connections are found by the pool on their next use; the request that meets one
must not be a 500 that loses the person's message, and the next ones must simply work.
"""

from __future__ import annotations

import asyncio

import asyncpg
import httpx

from tests.conftest import App
from tests.e2e.test_knowledge import learned
from tests.fakes.servers import collect, read_events, serve_in_process


async def _cut_every_connection(database_url: str) -> int:
    """Terminate every other connection to the database and wait until they are gone.

    pg_terminate_backend only signals: each backend exits a moment later. Requests sent in
    that moment meet connections that are still dying, two of them as often as one on a busy
    machine, which is not the outage this test is about (a restart: every connection gone)."""
    conn = await asyncpg.connect(database_url)
    try:
        pids = await conn.fetch(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        cut = [row["pid"] for row in pids]
        async with asyncio.timeout(10):
            while await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])", cut):
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)  # and the server's goodbyes have reached the pools' sockets
    finally:
        await conn.close()
    return len(cut)


async def test_turns_work_again_after_every_connection_is_cut(app: App, database_url: str) -> None:
    headers = await app.sign_in("Budi")
    first = await app.say(headers, "turn on the bedroom light")
    assert first.status_code == 200, first.text

    assert await _cut_every_connection(database_url) > 0

    statuses = []
    for text in ("turn off the bedroom light", "turn on the bedroom light", "hello"):
        response = await app.say(headers, text)
        statuses.append(response.status_code)
        assert response.status_code < 500 or response.headers["content-type"] == "application/problem+json"
    # At most the first request after the cut may be refused (503, retry); the rest get through.
    assert statuses[0] in (200, 503) and statuses[1:] == [200, 200], statuses
    thread = (await app.client.get("/v1/messages", headers=headers)).json()
    said = [m["text"] for m in thread["messages"] if m["author"] == "human"]
    assert said[-1] == "hello"
    assert (await app.client.get("/readyz")).status_code == 200


async def test_learning_and_the_wallets_announcement_carry_on_after_every_connection_is_cut(
    app: App, database_url: str
) -> None:
    """The learning worker's backlog check and the wallet's one-statement announcement run on
    connections of their own (chat/learning.py, chat/ports.py): both must find new ones."""
    headers = await app.sign_in("Sari")
    assert (await app.say(headers, "my favourite food is rendang")).status_code == 200
    await learned(app, headers, "rendang")

    assert await _cut_every_connection(database_url) > 0

    async with serve_in_process(app.app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        async with client.stream("GET", "/v1/events", headers=headers) as stream:
            events = read_events(stream)
            told = await client.post("/v1/messages", json={"text": "I'm allergic to peanuts"}, headers=headers)
            if told.status_code == 503:  # the one request that may meet the cut (the test above)
                told = await client.post("/v1/messages", json={"text": "I'm allergic to peanuts"}, headers=headers)
            assert told.status_code == 200, told.text
            seen = await collect(events, "wallet.changed")
        balance = (await client.get("/v1/wallet", headers=headers)).json()["balance_micros"]
    assert seen[-1].data["balance_micros"] == balance
    await learned(app, headers, "rendang", "peanuts")
