"""Memory that does not answer never holds up a reply, and what it could not learn is
learned after a restart: the backlog lives in the thread and the person's cursor."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from agents import KnowledgeMessage
from agents.knowledge import Fact, Forgotten, Graph
from app.server import running
from settings import Settings
from tests.conftest import App
from tests.e2e.test_knowledge import learned

_FOREVER_S = 3_600


class Hanging:
    """A `Knowledge` that never answers, like a memory service lost behind a dead socket."""

    def __init__(self) -> None:
        self.ingesting = asyncio.Event()

    async def ingest(self, *, person_id: str, person_name: str, messages: Sequence[KnowledgeMessage]) -> None:
        self.ingesting.set()
        await asyncio.sleep(_FOREVER_S)

    async def search(self, *, person_id: str, text: str, limit: int = 10) -> list[Fact]:
        await asyncio.sleep(_FOREVER_S)
        return []

    async def graph(self, *, person_id: str) -> Graph:
        await asyncio.sleep(_FOREVER_S)
        return Graph()

    async def forget(self, *, person_id: str) -> Forgotten:
        await asyncio.sleep(_FOREVER_S)
        return Forgotten()


async def test_a_hanging_memory_never_delays_a_reply_and_the_backlog_survives_a_restart(settings: Settings) -> None:
    hanging = Hanging()
    patient = settings.model_copy(update={"knowledge_timeout_s": 1.0})
    async with running(patient, knowledge=hanging) as (services, fastapi_app):
        app = App(services, fastapi_app)
        headers = await app.sign_in("Budi")
        for text in ("my favourite food is rendang", "turn on the bedroom light"):
            started = time.perf_counter()
            response = await app.say(headers, text)
            assert response.status_code == 200
            assert [r["status"] for r in response.json()["runs"]][-1] == "succeeded"
            # At most the session layer's one-second wait for facts, never the memory's.
            assert time.perf_counter() - started < 5
        async with asyncio.timeout(10):
            await hanging.ingesting.wait()
        # The graph and forget me answer 503 in bounded time (forget me waits for the batch
        # being learned, which never ends here); forget me erased nothing.
        for method, problem in (("GET", "knowledge_unavailable"), ("DELETE", "thread_busy")):
            started = time.perf_counter()
            response = await app.client.request(method, "/v1/knowledge", headers=headers)
            assert (response.status_code, response.json()["type"]) == (503, problem)
            assert time.perf_counter() - started < 5
        assert len((await app.client.get("/v1/messages", headers=headers)).json()["messages"]) >= 4
        await app.client.aclose()

    async with running(settings) as (services, fastapi_app):
        app = App(services, fastapi_app)
        headers = await app.sign_in("Budi")
        graph = await learned(app, headers, "rendang")
        assert [e["text"] for e in graph["edges"]] == ["Budi's favourite food is rendang"]
        await app.client.aclose()
