"""One contract for the `Model` port, run against every implementation: the scripted
model, the offline model, and the Gemini adapter speaking to a fake Gemini endpoint.

Each implementation comes with a driver that primes it for "answer with a call to this
tool" and "answer in text"; the assertions are the same for all of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from agents import (
    AGENTS,
    FunctionCall,
    Model,
    ModelRequest,
    ModelResponse,
    OfflineModel,
    ScriptedModel,
    Session,
    ToolSpec,
    compose,
)
from agents.model import Content, FunctionResult
from tests.fakes.gemini_server import FakeGemini, call_part, content_reply, text_reply, usage

TOOL = ToolSpec("list_devices", "List every device.", {"type": "object", "properties": {}})
NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)


def zee_request(contents: tuple[Content, ...]) -> ModelRequest:
    from zoneinfo import ZoneInfo

    system = compose(
        agent=AGENTS["zee"], channel="text", trigger="human", session=Session(now=NOW, time_zone=ZoneInfo("UTC"))
    )
    return ModelRequest(model="m", system=system, contents=contents, tools=(TOOL,))


ASK = (Content(role="user", text="[2026-11-30 03:00 Budi] @zee turn on the bedroom light"),)


@dataclass
class Driver:
    model: Model
    # Prepare the next answer: a call to TOOL, or a final text.
    expect_call: Callable[[], Awaitable[None]]
    expect_text: Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


@pytest.fixture(params=["scripted", "offline", "gemini"])
async def driver(request: pytest.FixtureRequest) -> AsyncIterator[Driver]:
    if request.param == "scripted":
        scripted = ScriptedModel()

        async def call() -> None:
            scripted.extend([ModelResponse("", (FunctionCall("c1", TOOL.name, {}),))])

        async def text() -> None:
            scripted.extend([ModelResponse("The bedroom light is on.")])

        yield Driver(scripted, call, text)
    elif request.param == "offline":
        yield Driver(OfflineModel(), _nothing, _nothing)
    else:
        from agents.gemini import GeminiModel

        async with FakeGemini() as fake:
            gemini = GeminiModel(api_key="k", base_url=fake.base_url, timeout_s=5.0, retries_max=0)

            async def gemini_call() -> None:
                fake.script(content_reply([call_part(TOOL.name, {})], usage_metadata=usage(prompt=50, candidates=5)))

            async def gemini_text() -> None:
                fake.script(text_reply("The bedroom light is on.", usage_metadata=usage(prompt=60, candidates=8)))

            try:
                yield Driver(gemini, gemini_call, gemini_text)
            finally:
                await gemini.aclose()


async def test_a_call_names_a_declared_tool_and_reports_usage(driver: Driver) -> None:
    await driver.expect_call()
    response = await driver.model.generate(request=zee_request(ASK))
    assert response.calls, "the model was primed to call a tool"
    assert {c.name for c in response.calls} <= {TOOL.name}
    assert len({c.id for c in response.calls}) == len(response.calls)
    assert all(isinstance(c.args, dict) for c in response.calls)
    assert response.usage.prompt_tokens > 0 and response.usage.output_tokens > 0
    assert response.model


async def test_results_fed_back_lead_to_a_text_answer(driver: Driver) -> None:
    await driver.expect_call()
    first = await driver.model.generate(request=zee_request(ASK))
    results = tuple(
        FunctionResult(
            c.id,
            c.name,
            {
                "devices": [
                    {
                        "id": "sbx-light-bedroom",
                        "name": "Bedroom light",
                        "category": "dj",
                        "status": [{"code": "switch_led", "value": True}],
                    }
                ]
            },
        )
        for c in first.calls
    )
    await driver.expect_text()
    follow = zee_request((*ASK, Content(role="model", calls=first.calls), Content(role="user", results=results)))
    second = await driver.model.generate(request=follow)
    assert isinstance(second.text, str)
    assert second.text.strip() or second.calls
    # The follow-up is a model call of its own, so it reports tokens to be charged for.
    assert second.usage.prompt_tokens > 0 and second.usage.output_tokens > 0, second.usage
