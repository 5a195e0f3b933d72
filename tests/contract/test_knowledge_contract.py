"""One suite over every `Knowledge` adapter: the local graph in PostgreSQL (with the rule
extractor) and Zep (against an in-process fake of its v4 API). The same conversation
must give the same answers: what is true now, what used to be, search, isolation
between people, idempotent ingestion and forgetting."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from agents.knowledge import Knowledge, KnowledgeMessage, LocalKnowledge, RuleExtractor
from agents.knowledge.zep import ZepKnowledge
from tests.fakes.zep import FakeZep

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
_seq = itertools.count(1)


@pytest.fixture(params=["local", "zep"])
async def knowledge(request: pytest.FixtureRequest, pool: asyncpg.Pool) -> AsyncIterator[Knowledge]:
    # (Zep needs no database; the fixture is shared so one suite runs over both.)
    if request.param == "local":
        yield LocalKnowledge(pool, extractor=RuleExtractor())
        return
    fake = FakeZep()
    zep = ZepKnowledge(api_key="test-key", base_url=fake.base_url, httpx_client=fake.client())
    yield zep
    await zep.aclose()
    assert fake.unknown == 0, "the adapter called an endpoint the fake does not know"


def said(text: str, *, minutes: int, author: str = "human") -> KnowledgeMessage:
    seq = next(_seq)
    return KnowledgeMessage(f"msg_{seq:06d}", seq, author, text, T0 + timedelta(minutes=minutes))


async def test_a_newer_favourite_invalidates_the_older_one(knowledge: Knowledge) -> None:
    rendang, soto = said("my favourite food is rendang", minutes=0), said("I've switched to soto, actually", minutes=5)
    await knowledge.ingest(person_id="usr_a", person_name="Budi", messages=[rendang])
    await knowledge.ingest(person_id="usr_a", person_name="Budi", messages=[soto])
    graph = await knowledge.graph(person_id="usr_a")
    names = {n.id: n for n in graph.nodes}
    by_object = {names[e.object_id].name: e for e in graph.edges}
    assert set(by_object) == {"rendang", "soto"}
    assert {names[e.object_id].type for e in graph.edges} == {"food"}
    assert by_object["rendang"].invalid_at == soto.created_at
    assert by_object["rendang"].valid_at == rendang.created_at
    assert by_object["soto"].valid and by_object["soto"].valid_at == soto.created_at
    assert names[by_object["soto"].subject_id].type == "person"
    assert any(n.is_self and n.name == "Budi" for n in graph.nodes)
    found = await knowledge.search(person_id="usr_a", text="what's my favourite food?")
    assert [f.text for f in found] == ["Budi's favourite food is soto"]


async def test_search_finds_relevant_facts_and_an_empty_query_the_newest(knowledge: Knowledge) -> None:
    messages = [
        said("I live in Bandung", minutes=0),
        said("I'm allergic to peanuts", minutes=1),
        said("my favourite food is rendang", minutes=2),
        said("sure, noted!", minutes=3, author="ava"),
    ]
    await knowledge.ingest(person_id="usr_b", person_name="Sari", messages=messages)
    allergy = await knowledge.search(person_id="usr_b", text="allergic peanuts")
    assert allergy[0].text == "Sari is allergic to peanuts"
    newest = await knowledge.search(person_id="usr_b", text="", limit=2)
    assert [f.text for f in newest] == ["Sari's favourite food is rendang", "Sari is allergic to peanuts"]
    assert await knowledge.search(person_id="usr_nobody", text="food") == []


async def test_ingesting_the_same_messages_again_learns_nothing_new(knowledge: Knowledge) -> None:
    batch = [said("my favourite food is rendang", minutes=0), said("my wife is Sari", minutes=1)]
    await knowledge.ingest(person_id="usr_c", person_name="Budi", messages=batch)
    first = await knowledge.graph(person_id="usr_c")
    await knowledge.ingest(person_id="usr_c", person_name="Budi", messages=batch)
    again = await knowledge.graph(person_id="usr_c")
    assert len(again.edges) == len(first.edges) == 2
    assert len(again.nodes) == len(first.nodes) == 3


async def test_forgetting_one_person_leaves_the_others(knowledge: Knowledge) -> None:
    await knowledge.ingest(person_id="usr_d", person_name="Budi", messages=[said("I work at Gojek", minutes=0)])
    await knowledge.ingest(person_id="usr_e", person_name="Sari", messages=[said("I work at Tokopedia", minutes=0)])
    forgotten = await knowledge.forget(person_id="usr_d")
    assert (forgotten.nodes, forgotten.edges) == (2, 1)
    gone = await knowledge.graph(person_id="usr_d")
    assert gone.nodes == () and gone.edges == ()
    assert await knowledge.search(person_id="usr_d", text="work") == []
    kept = await knowledge.graph(person_id="usr_e")
    assert [e.text for e in kept.edges] == ["Sari works at Tokopedia"]
    assert (await knowledge.forget(person_id="usr_nobody")).edges == 0


async def test_a_forgotten_person_is_learned_anew(knowledge: Knowledge) -> None:
    await knowledge.ingest(person_id="usr_f", person_name="Budi", messages=[said("I live in Bandung", minutes=0)])
    await knowledge.forget(person_id="usr_f")
    await knowledge.ingest(person_id="usr_f", person_name="Budi", messages=[said("I live in Depok", minutes=9)])
    graph = await knowledge.graph(person_id="usr_f")
    assert [e.text for e in graph.edges] == ["Budi lives in Depok"]
    assert all(e.valid for e in graph.edges)
