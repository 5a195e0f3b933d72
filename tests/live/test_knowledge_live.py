"""Knowledge against the real services, by hand: `ZEP_API_KEY=… GEMINI_API_KEY=… pytest -m live
tests/live`. Skipped without the keys; never in CI. Zep builds its graph in the background,
so the Zep test waits (up to two minutes) for the fact to appear."""

from __future__ import annotations

import asyncio
import os
import secrets
from datetime import UTC, datetime

import pytest

from agents.knowledge import KnowledgeMessage

pytestmark = [pytest.mark.live, pytest.mark.timeout(300)]


@pytest.mark.skipif(not os.environ.get("ZEP_API_KEY"), reason="needs ZEP_API_KEY")
async def test_zep_learns_searches_and_forgets() -> None:
    from agents.knowledge.zep import ZepKnowledge

    zep = ZepKnowledge(api_key=os.environ["ZEP_API_KEY"], timeout_s=30)
    person = f"usr_live_{secrets.token_hex(4)}"
    said = KnowledgeMessage("msg_live_1", 1, "human", "My favourite food is rendang.", datetime.now(UTC))
    try:
        await zep.ingest(person_id=person, person_name="Budi", messages=[said])
        async with asyncio.timeout(120):
            while not (found := await zep.search(person_id=person, text="favourite food")):
                await asyncio.sleep(5)
        assert any("rendang" in f.text.lower() for f in found)
        graph = await zep.graph(person_id=person)
        assert graph.nodes and graph.edges
    finally:
        await zep.forget(person_id=person)
        await zep.aclose()
    fresh = ZepKnowledge(api_key=os.environ["ZEP_API_KEY"], timeout_s=30)
    try:
        assert (await fresh.graph(person_id=person)).edges == ()
    finally:
        await fresh.aclose()


@pytest.mark.skipif(not os.environ.get("GEMINI_API_KEY"), reason="needs GEMINI_API_KEY")
async def test_gemini_extracts_a_favourite_in_indonesian() -> None:
    from agents.knowledge.gemini import GeminiExtractor

    extractor = GeminiExtractor(
        api_key=os.environ["GEMINI_API_KEY"], model=os.environ.get("GEMINI_MODEL", "gemini-3.5-flash"), timeout_s=60
    )
    said = KnowledgeMessage("msg_1", 1, "human", "makanan favoritku rendang", datetime.now(UTC))
    try:
        claims = (await extractor.extract(person_name="Budi", messages=[said], known=())).claims
    finally:
        await extractor.aclose()
    assert any(c.subject.is_self and "rendang" in c.object.name.lower() for c in claims)
