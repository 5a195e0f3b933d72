"""Semantic memory through the product's doors, on the offline model: what the person says
is learned in the background, drawn by GET /v1/knowledge with its validity, recalled by
Ava, and erased (with the thread and pending wakes) by DELETE /v1/knowledge."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import asyncpg

from tests.conftest import App

_WAIT_S = 15.0


async def learned(app: App, headers: dict[str, str], *objects: str) -> dict[str, Any]:
    """The graph, once edges to all these objects exist (the worker runs in the background)."""
    async with asyncio.timeout(_WAIT_S):
        while True:
            response = await app.client.get("/v1/knowledge", headers=headers)
            assert response.status_code == 200, response.text
            graph: dict[str, Any] = response.json()
            names = {n["id"]: n["name"] for n in graph["nodes"]}
            if all(any(names.get(e["target"]) == o for e in graph["edges"]) for o in objects):
                return graph
            await asyncio.sleep(0.05)


def ava_says(body: dict[str, Any]) -> str:
    return " ".join(m["text"] for m in body["messages"] if m["author"] == "ava")


async def test_rendang_then_soto_keeps_the_old_favourite_as_no_longer_valid(app: App) -> None:
    headers = await app.sign_in("Budi")
    first = (await app.say(headers, "my favourite food is rendang")).json()
    await learned(app, headers, "rendang")
    second = (await app.say(headers, "I've switched to soto, actually")).json()
    graph = await learned(app, headers, "rendang", "soto")

    nodes = {n["name"]: n for n in graph["nodes"]}
    assert nodes["Budi"]["type"] == "person" and nodes["Budi"]["is_self"]
    assert nodes["rendang"]["type"] == "food"
    assert nodes["soto"]["type"] == "food"
    edges = {
        e["relation"] + ":" + next(n for n in graph["nodes"] if n["id"] == e["target"])["name"]: e
        for e in graph["edges"]
    }
    assert set(edges) == {"favourite:rendang", "favourite:soto"}
    rendang, soto = edges["favourite:rendang"], edges["favourite:soto"]
    assert rendang["source"] == soto["source"] == nodes["Budi"]["id"]
    assert rendang["text"] == "Budi's favourite food is rendang"
    assert soto["text"] == "Budi's favourite food is soto"
    # Nothing deleted: the old fact stopped being true when the new one was said.
    said_rendang = datetime.fromisoformat(first["messages"][0]["created_at"])
    said_soto = datetime.fromisoformat(second["messages"][0]["created_at"])
    assert datetime.fromisoformat(rendang["valid_at"]) == said_rendang
    assert datetime.fromisoformat(rendang["invalid_at"]) == said_soto
    assert datetime.fromisoformat(soto["valid_at"]) == said_soto
    assert soto["invalid_at"] is None
    assert (rendang["valid"], soto["valid"]) == (False, True)
    assert rendang["message_ids"] == [first["messages"][0]["id"]]
    assert soto["message_ids"] == [second["messages"][0]["id"]]


async def test_ava_recalls_in_english_and_indonesian(app: App) -> None:
    headers = await app.sign_in("Budi")
    told = (await app.say(headers, "my favourite food is rendang")).json()
    assert ava_says(told) == "Got it, I'll remember that."
    await learned(app, headers, "rendang")
    await app.say(headers, "I'm allergic to peanuts")
    await learned(app, headers, "rendang", "peanuts")

    asked = (await app.say(headers, "what's my favourite food?")).json()
    assert ava_says(asked) == "Your favourite food is rendang."
    assert [r["agent"] for r in asked["runs"]] == ["ava"]
    tonight = (await app.say(headers, "what should I eat tonight?")).json()
    assert ava_says(tonight) == "How about rendang? It's your favourite."
    about = ava_says((await app.say(headers, "what do you know about me?")).json())
    assert about.startswith("Here's what I know: ")
    assert "your favourite food is rendang" in about and "you are allergic to peanuts" in about
    indonesian = (await app.say(headers, "makanan favoritku apa?")).json()
    assert ava_says(indonesian) == "Makanan favoritmu rendang."
    # Asking taught nothing: the graph holds exactly the two facts stated.
    graph = (await app.client.get("/v1/knowledge", headers=headers)).json()
    assert sorted(e["text"] for e in graph["edges"]) == [
        "Budi is allergic to peanuts",
        "Budi's favourite food is rendang",
    ]


async def test_ava_says_so_when_she_does_not_know(app: App) -> None:
    headers = await app.sign_in("Sari")
    body = (await app.say(headers, "what's my favourite food?")).json()
    assert ava_says(body) == "I don't know that about you yet. Tell me and I'll remember."


async def _rows_of(pool: asyncpg.Pool, person_id: str) -> dict[str, int]:
    queries = {
        "messages": "SELECT count(*) FROM messages WHERE person_id = $1",
        "runs": "SELECT count(*) FROM runs WHERE person_id = $1",
        "run_events": "SELECT count(*) FROM run_events e JOIN runs r ON r.id = e.run_id WHERE r.person_id = $1",
        "run_calls": "SELECT count(*) FROM run_calls WHERE person_id = $1",
        "events": "SELECT count(*) FROM events WHERE person_id = $1",
        "knowledge_cursors": "SELECT count(*) FROM knowledge_cursors WHERE person_id = $1",
        "knowledge_entities": "SELECT count(*) FROM knowledge_entities WHERE person_id = $1",
        "knowledge_facts": "SELECT count(*) FROM knowledge_facts WHERE person_id = $1",
    }
    return {name: int(await pool.fetchval(sql, person_id)) for name, sql in queries.items()}


async def test_forget_me_erases_thread_and_graph_and_keeps_the_wallet(app: App) -> None:
    budi = await app.sign_in("Budi")
    sari = await app.sign_in("Sari")
    budi_id = (await app.client.get("/v1/me", headers=budi)).json()["id"]
    await app.say(sari, "my favourite food is sushi")
    await app.say(budi, "my favourite food is rendang")
    await app.say(budi, "turn on the bedroom light")  # a handoff: runs, tool events, model calls
    await learned(app, budi, "rendang")
    await learned(app, sari, "sushi")
    balance = (await app.client.get("/v1/wallet", headers=budi)).json()["balance_micros"]
    before = await _rows_of(app.services.pool, budi_id)
    assert all(before[name] > 0 for name in ("messages", "runs", "run_events", "run_calls", "knowledge_facts"))

    response = await app.client.delete("/v1/knowledge", headers=budi)
    assert response.status_code == 200, response.text
    body = response.json()
    erased = body["erased"]
    assert erased["messages"] == before["messages"] and erased["runs"] == before["runs"]
    assert erased["run_events"] == before["run_events"] and erased["run_calls"] == before["run_calls"]
    assert erased["knowledge_nodes"] == before["knowledge_entities"] == 2
    assert erased["knowledge_edges"] == before["knowledge_facts"] == 1
    assert erased["wake_notes"] == 0
    assert "money history" in body["kept"] and body["summary"].startswith("Erased ")
    assert all(n == 0 for n in (await _rows_of(app.services.pool, budi_id)).values())
    assert (await app.client.get("/v1/knowledge", headers=budi)).json() == {"nodes": [], "edges": []}
    assert (await app.client.get("/v1/wallet", headers=budi)).json()["balance_micros"] == balance

    # The next message starts a fresh thread.
    fresh = (await app.say(budi, "hi")).json()
    assert fresh["messages"][0]["seq"] == 1
    thread = (await app.client.get("/v1/messages", headers=budi)).json()["messages"]
    assert (thread[0]["seq"], thread[0]["text"]) == (1, "hi")
    # What the process kept of the thread for the agents' history holds none of the erased text.
    kept = await app.services.threads.recent(budi_id, limit=200)
    assert [m.id for m in kept.messages] == [m["id"] for m in thread]
    # Sari's graph and thread are untouched.
    graph = (await app.client.get("/v1/knowledge", headers=sari)).json()
    assert [e["text"] for e in graph["edges"]] == ["Sari's favourite food is sushi"]
    assert len((await app.client.get("/v1/messages", headers=sari)).json()["messages"]) == 2


async def test_knowledge_needs_a_signed_in_person(app: App) -> None:
    for method in ("GET", "DELETE"):
        response = await app.client.request(method, "/v1/knowledge")
        assert response.status_code == 401
        assert response.headers["content-type"] == "application/problem+json"
