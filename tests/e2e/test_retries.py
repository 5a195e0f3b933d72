"""A `client_id` retry returns the whole turn, as the README promises: ten concurrent
attempts of one message write one turn, and every one of the ten answers carries all of
it — the person's message, Ava's handoff, the specialist's reply, Ava's reply — with
every run finished."""

from __future__ import annotations

import asyncio

import pytest

from agents import FunctionCall, Model, ModelRequest, ModelResponse, ScriptedModel, Usage
from tests.conftest import App

ATTEMPTS = 10


@pytest.fixture
def model(scripted: ScriptedModel) -> Model:
    return scripted


async def test_ten_concurrent_retries_each_return_the_whole_turn(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    scripted.extend(
        [
            ModelResponse("", (FunctionCall("c-1", "zee", {"tag": "@zee"}),), Usage(prompt_tokens=10, output_tokens=5)),
            ModelResponse("The light is on.", (), Usage(prompt_tokens=10, output_tokens=5)),
            ModelResponse("All set!", (), Usage(prompt_tokens=10, output_tokens=5)),
        ]
    )
    started, release = asyncio.Event(), asyncio.Event()

    class Gate:
        """Holds the turn open after its first model call, so the retries arrive mid-turn."""

        async def generate(self, *, request: ModelRequest) -> ModelResponse:
            if len(scripted.requests) == 1:
                started.set()
                await release.wait()
            return await scripted.generate(request=request)

    app.services.turns._model = Gate()
    first = asyncio.create_task(app.say(headers, "turn on the light", client_id="c-42"))
    await asyncio.wait_for(started.wait(), 10)
    retries = [
        asyncio.create_task(app.say(headers, "turn on the light", client_id="c-42")) for _ in range(ATTEMPTS - 1)
    ]
    await asyncio.sleep(0.3)  # every retry has arrived and found the first attempt's message
    release.set()
    answers = [await task for task in [first, *retries]]

    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    bodies = [a.json() for a in answers]
    assert [m["author"] for m in bodies[0]["messages"]] == ["human", "ava", "zee", "ava"]
    assert [r["agent"] for r in bodies[0]["runs"]] == ["ava", "zee"]
    assert all(r["status"] == "succeeded" for r in bodies[0]["runs"])
    assert all(b == bodies[0] for b in bodies), "every attempt returns the same whole turn"
    assert len(scripted.requests) == 3, "the turn ran once"
    thread = (await app.client.get("/v1/messages", headers=headers)).json()["messages"]
    assert len(thread) == 4
