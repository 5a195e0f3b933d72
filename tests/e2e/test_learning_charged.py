"""Knowledge extraction is charged to the person (docs/money.md#learning), through the
whole server: real PostgreSQL, the product's Gemini extractor against the simulated Gemini
on 127.0.0.1, the turn on the scripted model. One batch read is one charge on the wallet,
its receipt and the day's usage, however often the batch is read again; on an empty wallet
the batch is passed over with no model call."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from pydantic import SecretStr

from agents import Model, ModelResponse, ScriptedModel, Usage
from agents.model import ModelRequest
from bench.cloudsim.gemini import Answer, SimulatedGemini, scripted_responder
from settings import Settings
from tests.conftest import App, offline_settings
from tests.e2e.test_knowledge import learned

_WAIT_S = 30.0
_HUMAN_LINE = re.compile(r"^- (msg_\S+) \| human \| (.*)$", re.MULTILINE)


async def extract_rendang(request: ModelRequest) -> Answer:
    """The simulated Gemini reads the extractor's prompt as Gemini would: one fact on the
    person's first message, with the prompt's size as its billed input."""
    prompt = "\n".join(content.text for content in request.contents)
    found = _HUMAN_LINE.search(prompt)
    assert found is not None, prompt
    fact = {
        "message_id": found.group(1),
        "subject": "SELF",
        "subject_type": "person",
        "relation": "favourite",
        "object": "rendang",
        "object_type": "food",
        "text": "Budi's favourite food is rendang",
        "slot": "favourite:food",
    }
    return Answer(text=json.dumps({"facts": [fact]}), first_token_s=0.01)


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedGemini]:
    async with SimulatedGemini(scripted_responder([]), extractor=extract_rendang) as simulated:
        yield simulated


@pytest.fixture
def settings(database_url: str, tmp_path: Path, sim: SimulatedGemini) -> Settings:
    # A Gemini key and endpoint make the server read facts with the Gemini extractor; the
    # turn itself runs on the scripted model the `model` fixture hands it.
    return offline_settings(database_url, tmp_path).model_copy(
        update={"gemini_api_key": SecretStr("sim-key"), "gemini_base_url": sim.base_url}
    )


@pytest.fixture
def model(scripted: ScriptedModel) -> Model:
    return scripted


async def extraction_charges(app: App, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = await app.client.get("/v1/wallet/entries", params={"limit": 200}, headers=headers)
    assert response.status_code == 200, response.text
    return [e for e in response.json()["entries"] if e["ref"].startswith("learn:")]


async def until_charged(app: App, headers: dict[str, str]) -> list[dict[str, Any]]:
    async with asyncio.timeout(_WAIT_S):
        while not (charges := await extraction_charges(app, headers)):
            await asyncio.sleep(0.05)
    return charges


async def until_learned(app: App) -> None:
    """Until the learning worker's cursor has passed every message (read, or passed over);
    a pass is asked for each round, as the worker's own poll would."""
    async with asyncio.timeout(_WAIT_S):
        while await app.services.pool.fetchval(
            "SELECT coalesce(c.last_seq, 0) < t.last_seq FROM threads t LEFT JOIN knowledge_cursors c USING (person_id)"
        ):
            await app.services.knowledge.learning.drain()
            await asyncio.sleep(0.05)


async def test_reading_a_batch_is_charged_once_however_often_it_is_read(
    app: App, scripted: ScriptedModel, sim: SimulatedGemini
) -> None:
    headers = await app.sign_in("Budi")
    scripted.extend([ModelResponse("Noted!")])
    said = await app.say(headers, "my favourite food is rendang")
    assert said.status_code == 200, said.text
    await learned(app, headers, "rendang")
    [charge] = await until_charged(app, headers)
    [served] = sim.served
    receipt = charge["receipt"]
    assert charge["type"] == "agent_call"
    assert receipt["agent"] == "knowledge" and receipt["trigger"] == "learning"
    assert receipt["tokens"]["prompt_tokens"] == served.prompt_tokens
    assert receipt["tokens"]["output_tokens"] == served.output_tokens
    assert -charge["amount_micros"] == receipt["cost_micros"] > 0

    # A crash after the charge and before the cursor moved: the batch is read again (a
    # second call Google bills us) and the person is still charged once.
    services = app.services
    # The charge is written before the cursor moves: wait for the move, or deleting the
    # cursor in between is undone by it and nothing is read again.
    await until_learned(app)
    await services.pool.execute("DELETE FROM knowledge_cursors")
    await until_learned(app)
    assert len(sim.served) == 2
    assert await extraction_charges(app, headers) == [charge]

    # The wallet, the day's usage and the ledger agree: the turn's call and the extraction.
    entries = (await app.client.get("/v1/wallet/entries", params={"limit": 200}, headers=headers)).json()["entries"]
    balance = (await app.client.get("/v1/wallet", headers=headers)).json()["balance_micros"]
    assert balance == sum(e["amount_micros"] for e in entries)
    day = datetime.fromisoformat(charge["created_at"]).astimezone(ZoneInfo("Asia/Jakarta")).date()
    usage = (await app.client.get("/v1/wallet/usage", params={"date": day.isoformat()}, headers=headers)).json()
    charged = [e for e in entries if e["type"] in ("agent_call", "voice_usage")]
    assert usage["calls"] == len(charged) == 2
    assert usage["cost_micros"] == -sum(e["amount_micros"] for e in charged)
    assert (await services.ledger.verify()).ok


async def test_an_empty_wallet_skips_the_batch_without_a_model_call(
    app: App, scripted: ScriptedModel, sim: SimulatedGemini
) -> None:
    headers = await app.sign_in("Budi")
    # The turn's one call costs more than the grant (Rp 30,000 of input on Rp 5,000).
    scripted.extend([ModelResponse("Noted!", usage=Usage(prompt_tokens=3_000_000))])
    said = await app.say(headers, "my favourite food is rendang")
    assert said.status_code == 200, said.text
    await until_learned(app)
    assert sim.served == []
    assert await extraction_charges(app, headers) == []
    assert (await app.client.get("/v1/knowledge", headers=headers)).json()["edges"] == []
    assert (await app.client.get("/v1/wallet", headers=headers)).json()["balance_micros"] < 0
