"""The local graph fed by the model-backed extractor (against a fake Gemini endpoint): the
model's slot for "I've switched to soto" closes the rendang fact it was shown as known."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import asyncpg

from agents.knowledge import KnowledgeMessage, LocalKnowledge
from agents.knowledge.gemini import GeminiExtractor
from tests.fakes.gemini_server import FakeGemini, text_reply

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def fact(message_id: str, food: str) -> dict[str, str]:
    return {
        "message_id": message_id,
        "subject": "SELF",
        "subject_type": "person",
        "relation": "favourite",
        "object": food,
        "object_type": "food",
        "text": f"Budi's favourite food is {food}",
        "slot": "favourite:food",
    }


async def test_the_models_slot_supersedes_the_known_fact(pool: asyncpg.Pool) -> None:
    first = KnowledgeMessage("msg_1", 1, "human", "rendang is the best, my favourite", T0)
    second = KnowledgeMessage("msg_2", 2, "human", "I've switched to soto, actually", T0 + timedelta(hours=1))
    async with FakeGemini() as gemini:
        extractor = GeminiExtractor(api_key="test-key", model="gemini-test", base_url=gemini.base_url, timeout_s=5)
        knowledge = LocalKnowledge(pool, extractor=extractor)
        gemini.script(text_reply(json.dumps({"facts": [fact("msg_1", "rendang")]})))
        await knowledge.ingest(person_id="usr_a", person_name="Budi", messages=[first])
        gemini.script(text_reply(json.dumps({"facts": [fact("msg_2", "soto")]})))
        await knowledge.ingest(person_id="usr_a", person_name="Budi", messages=[second])
        await extractor.aclose()
        shown = gemini.requests[1].body["contents"][0]["parts"][0]["text"]
    assert "favourite:food: Budi's favourite food is rendang" in shown
    edges = {e.object: e for e in (await knowledge.graph(person_id="usr_a")).edges}
    assert edges["rendang"].invalid_at == second.created_at
    assert edges["soto"].valid and edges["soto"].message_ids == ("msg_2",)
