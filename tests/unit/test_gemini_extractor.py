"""`GeminiExtractor` against a fake Gemini endpoint: what it asks (structured output with
our schema, the known facts and the messages) and what it accepts back (only claims on
messages of the batch, with known entity types), and how failures surface."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import pytest_asyncio

from agents.knowledge import SELF, Claim, Extraction, ExtractionFailed, KnowledgeMessage, Mention, ModelSpend
from agents.knowledge.gemini import GeminiExtractor
from agents.model import Usage
from tests.fakes.gemini_server import FakeGemini, error_reply, text_reply, usage

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
MESSAGES = [
    KnowledgeMessage("msg_1", 1, "human", "I've switched to soto, actually", NOW),
    KnowledgeMessage("msg_2", 2, "ava", "Soto it is!", NOW),
]
KNOWN = [
    Claim("msg_0", SELF, "favourite", Mention("rendang", "food"), "Budi's favourite food is rendang", "favourite:food")
]


@pytest_asyncio.fixture
async def gemini() -> AsyncIterator[FakeGemini]:
    async with FakeGemini() as fake:
        yield fake


@pytest_asyncio.fixture
async def extractor(gemini: FakeGemini) -> AsyncIterator[GeminiExtractor]:
    adapter = GeminiExtractor(api_key="test-key", model="gemini-test", base_url=gemini.base_url, timeout_s=2.0)
    yield adapter
    await adapter.aclose()


def facts(*items: dict[str, str]) -> str:
    return json.dumps({"facts": list(items)})


SOTO = {
    "message_id": "msg_1",
    "subject": "SELF",
    "subject_type": "person",
    "relation": "favourite",
    "object": "soto",
    "object_type": "food",
    "text": "Budi's favourite food is soto",
    "slot": "favourite:food",
}


@pytest.mark.asyncio
async def test_asks_for_structured_facts_and_reads_them(gemini: FakeGemini, extractor: GeminiExtractor) -> None:
    gemini.script(text_reply(facts(SOTO), usage_metadata=usage(prompt=420, candidates=37, thoughts=5)))
    read = await extractor.extract(person_name="Budi", messages=MESSAGES, known=KNOWN)
    # What Google reported comes back with the claims, for the learning worker to charge.
    assert read.spent == ModelSpend("gemini-fake-001", Usage(prompt_tokens=420, output_tokens=37, thinking_tokens=5))
    claims = read.claims
    assert claims == [Claim("msg_1", SELF, "favourite", Mention("soto", "food"), SOTO["text"], "favourite:food")]
    sent = gemini.requests[0]
    assert sent.model == "gemini-test"
    config = sent.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["required"] == ["facts"]
    prompt = sent.body["contents"][0]["parts"][0]["text"]
    assert "favourite:food: Budi's favourite food is rendang" in prompt
    assert "msg_1 | human | I've switched to soto, actually" in prompt


@pytest.mark.asyncio
async def test_claims_outside_the_batch_or_malformed_are_dropped(
    gemini: FakeGemini, extractor: GeminiExtractor
) -> None:
    stranger = SOTO | {"message_id": "msg_999"}
    odd_type = SOTO | {"object_type": "spaceship", "object": "bakso", "subject": "Budi"}
    empty = SOTO | {"object": "  "}
    gemini.script(text_reply(facts(stranger, odd_type, empty)))
    claims = (await extractor.extract(person_name="Budi", messages=MESSAGES, known=())).claims
    assert [(c.subject, c.object) for c in claims] == [(SELF, Mention("bakso", "thing"))]


@pytest.mark.asyncio
async def test_messages_without_the_person_cost_no_call(gemini: FakeGemini, extractor: GeminiExtractor) -> None:
    assert await extractor.extract(person_name="Budi", messages=MESSAGES[1:], known=()) == Extraction([])
    assert gemini.requests == []


@pytest.mark.asyncio
async def test_refusals_and_garbage_become_extraction_failed(gemini: FakeGemini, extractor: GeminiExtractor) -> None:
    gemini.script(error_reply(400, "bad"))
    with pytest.raises(ExtractionFailed, match="HTTP 400"):
        await extractor.extract(person_name="Budi", messages=MESSAGES, known=())
    gemini.script(text_reply("not json", usage_metadata=usage(prompt=300, candidates=4)))
    with pytest.raises(ExtractionFailed) as garbage:
        await extractor.extract(person_name="Budi", messages=MESSAGES, known=())
    # An answer that cannot be read was still billed by Google: its usage goes with the error.
    assert garbage.value.spent == ModelSpend("gemini-fake-001", Usage(prompt_tokens=300, output_tokens=4))
