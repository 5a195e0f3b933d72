"""More people at once than the server has database connections: turns queue for a
slot and all finish; nobody deadlocks."""

from __future__ import annotations

import asyncio

import pytest

from settings import Settings
from tests.conftest import App


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"database_pool_max": 3, "turns_concurrent_max": 2})


async def test_more_people_than_connections_all_get_answers(app: App) -> None:
    people = [await app.sign_in(f"Person {i}") for i in range(8)]
    async with asyncio.timeout(60):
        responses = await asyncio.gather(*(app.say(h, "turn on the bedroom light") for h in people))
    assert [r.status_code for r in responses] == [200] * 8
    assert all([m["author"] for m in r.json()["messages"]] == ["human", "ava", "zee"] for r in responses)
