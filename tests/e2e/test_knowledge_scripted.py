"""Semantic memory on the scripted model: a message is learned even when the run after it
failed, and what is known about the person reaches the session layer of the next run."""

from __future__ import annotations

import pytest

from agents import Model, ModelResponse, ModelUnavailable, ScriptedModel
from tests.conftest import App
from tests.e2e.test_knowledge import learned


@pytest.fixture
def model(scripted: ScriptedModel) -> Model:
    return scripted


async def test_a_message_whose_run_failed_is_still_learned(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in("Budi")
    scripted.extend([ModelUnavailable("down")])
    body = (await app.say(headers, "my wife is Sari and I live in Bandung")).json()
    assert body["runs"][0]["status"] == "failed"
    graph = await learned(app, headers, "Sari", "Bandung")
    types = {n["name"]: n["type"] for n in graph["nodes"]}
    assert types == {"Budi": "person", "Sari": "person", "Bandung": "place"}
    assert sorted(e["text"] for e in graph["edges"]) == ["Budi lives in Bandung", "Sari is Budi's wife"]


async def test_relevant_facts_reach_the_session_layer(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in("Budi")
    scripted.extend([ModelResponse("Noted!")])
    await app.say(headers, "my favourite food is rendang. I work at Gojek")
    await learned(app, headers, "rendang", "Gojek")
    scripted.extend([ModelResponse("Rendang!"), ModelResponse("Hi!")])
    await app.say(headers, "what should I eat tonight?")
    await app.say(headers, "the weather is nice")
    food, weather = scripted.requests[-2].system, scripted.requests[-1].system
    session = food.split("[SESSION]")[1]
    assert "never recite it):\n- Budi's favourite food is rendang (since " in session
    assert "Gojek" not in session  # only what bears on the message
    assert "What you know about the person" not in weather
