"""The real `GeminiModel` against a fake Gemini REST endpoint on 127.0.0.1.

Nothing of ours is mocked: the adapter drives the real google-genai SDK over real HTTP,
and the tests assert on the requests the fake recorded and on what the adapter returned.
"""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from agents.gemini import GeminiModel
from agents.model import (
    Content,
    FunctionCall,
    FunctionResult,
    ModelRejected,
    ModelRequest,
    ModelUnavailable,
    ToolSpec,
    Usage,
)
from tests.fakes.gemini_server import (
    HANG,
    FakeGemini,
    Reply,
    blocked_reply,
    call_part,
    content_reply,
    error_reply,
    text_part,
    text_reply,
    usage,
)

# A hung socket must fail the test, not stall the run.
pytestmark = pytest.mark.timeout(10)

API_KEY = "test-key-0123456789"
MODEL = "gemini-3.5-flash"
RETRIES_MAX = 2
LIGHTS = ToolSpec(
    name="send_commands",
    description="Switch devices in the home.",
    parameters={
        "type": "object",
        "properties": {"device_id": {"type": "string"}, "on": {"type": "boolean"}},
        "required": ["device_id", "on"],
    },
)


def ask(
    text: str = "turn on the bedroom light",
    *,
    system: str = "You are Zee.",
    contents: tuple[Content, ...] | None = None,
    tools: tuple[ToolSpec, ...] = (),
) -> ModelRequest:
    return ModelRequest(
        model=MODEL,
        system=system,
        contents=contents or (Content(role="user", text=text),),
        tools=tools,
    )


@pytest_asyncio.fixture
async def gemini() -> AsyncIterator[FakeGemini]:
    async with FakeGemini() as fake:
        yield fake


@pytest_asyncio.fixture
async def model(gemini: FakeGemini) -> AsyncIterator[GeminiModel]:
    adapter = GeminiModel(
        api_key=API_KEY,
        base_url=gemini.base_url,
        timeout_s=2.0,
        retries_max=RETRIES_MAX,
        backoff_s=0.01,
    )
    yield adapter
    await adapter.aclose()


@pytest.mark.asyncio
async def test_text_reply(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(text_reply("The light is on.", model_version="gemini-3.5-flash-002"))

    response = await model.generate(request=ask())

    assert response.text == "The light is on."
    assert response.calls == ()
    assert response.model == "gemini-3.5-flash-002"
    assert len(gemini.requests) == 1
    assert gemini.requests[0].model == MODEL


@pytest.mark.asyncio
async def test_function_call_reply_with_args(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(
        content_reply(
            [
                text_part("Switching it on."),
                call_part("send_commands", {"device_id": "lamp-1", "on": True}),
                call_part("send_commands", {"device_id": "lamp-2", "on": True}, call_id="fc-9"),
            ]
        )
    )

    response = await model.generate(request=ask(tools=(LIGHTS,)))

    assert response.text == "Switching it on."
    assert response.calls == (
        # Gemini gave the first call no id, so the adapter made one up.
        FunctionCall(id="call_1", name="send_commands", args={"device_id": "lamp-1", "on": True}),
        FunctionCall(id="fc-9", name="send_commands", args={"device_id": "lamp-2", "on": True}),
    )


@pytest.mark.asyncio
async def test_thought_parts_are_not_reply_text(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(
        content_reply(
            [
                text_part("The person wants light; Zee owns devices.", thought=True),
                text_part("On it"),
                text_part("Let me check the switch.", thought=True),
                text_part(", one moment."),
            ]
        )
    )

    response = await model.generate(request=ask())

    assert response.text == "On it, one moment."


@pytest.mark.asyncio
async def test_usage_mapping(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(
        text_reply(
            "ok",
            usage_metadata=usage(prompt=1200, cached=800, tool_use_prompt=40, candidates=25, thoughts=310),
        ),
        # Counts Gemini leaves out are zero, and without modelVersion the requested
        # model name stands in.
        text_reply("ok", usage_metadata=usage(prompt=7), model_version=None),
    )

    first = await model.generate(request=ask())
    second = await model.generate(request=ask())

    assert first.usage == Usage(
        prompt_tokens=1200,
        cached_tokens=800,
        tool_use_prompt_tokens=40,
        output_tokens=25,
        thinking_tokens=310,
    )
    assert first.usage.total_tokens == 1200 + 40 + 25 + 310
    assert second.usage == Usage(prompt_tokens=7)
    assert second.model == MODEL


@pytest.mark.asyncio
async def test_request_translation(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(
        content_reply(
            [
                call_part(
                    "send_commands",
                    {"device_id": "lamp-1", "on": True},
                    signature="c2lnLTE=",
                )
            ]
        ),
        text_reply("Done, the bedroom light is on."),
    )
    first = await model.generate(request=ask(tools=(LIGHTS,)))
    (call,) = first.calls
    history = (
        Content(role="user", text="turn on the bedroom light"),
        Content(role="model", calls=first.calls),
        Content(
            role="user",
            results=(FunctionResult(call_id=call.id, name=call.name, response={"ok": True}),),
        ),
    )

    await model.generate(request=ask(contents=history, tools=(LIGHTS,)))

    sent = gemini.requests[1].body
    assert sent["systemInstruction"]["parts"] == [{"text": "You are Zee."}]
    (declaration,) = sent["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "send_commands"
    assert declaration["description"] == "Switch devices in the home."
    # The SDK sends this one field in snake_case; Google's JSON parser accepts both.
    assert declaration["parameters_json_schema"] == LIGHTS.parameters
    user, model_turn, results = sent["contents"]
    assert user == {"role": "user", "parts": [{"text": "turn on the bedroom light"}]}
    assert model_turn["role"] == "model"
    (call_sent,) = model_turn["parts"]
    assert call_sent["functionCall"] == {
        "id": call.id,
        "name": "send_commands",
        "args": {"device_id": "lamp-1", "on": True},
    }
    # Gemini 3 rejects a function call sent back without the signature it came with.
    assert _decoded(call_sent["thoughtSignature"]) == b"sig-1"
    assert results == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": call.id,
                    "name": "send_commands",
                    "response": {"ok": True},
                }
            }
        ],
    }


@pytest.mark.asyncio
async def test_request_without_tools_or_system(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(text_reply("hi"))

    await model.generate(request=ask("hello", system=""))

    received = gemini.requests[0]
    assert "tools" not in received.body
    assert "systemInstruction" not in received.body
    # The key travels in a header, never in the URL, and the server is told our timeout.
    assert received.headers["x-goog-api-key"] == API_KEY
    assert API_KEY not in received.path
    assert received.headers["x-server-timeout"] == "2"


@pytest.mark.asyncio
async def test_call_without_known_signature_gets_skip_sentinel(gemini: FakeGemini, model: GeminiModel) -> None:
    # A call that carries no signature (e.g. one another model wrote) gets the sentinel.
    gemini.script(text_reply("ok"))
    history = (
        Content(role="user", text="lights on"),
        Content(
            role="model",
            calls=(
                FunctionCall(
                    id="old-1",
                    name="send_commands",
                    args={"device_id": "a", "on": True},
                ),
                FunctionCall(
                    id="old-2",
                    name="send_commands",
                    args={"device_id": "b", "on": True},
                ),
            ),
        ),
        Content(
            role="user",
            results=(
                FunctionResult(call_id="old-1", name="send_commands", response={"ok": True}),
                FunctionResult(call_id="old-2", name="send_commands", response={"ok": True}),
            ),
        ),
    )

    await model.generate(request=ask(contents=history, tools=(LIGHTS,)))

    first, second = gemini.requests[0].body["contents"][1]["parts"]
    assert first["thoughtSignature"] == "skip_thought_signature_validator"
    assert "thoughtSignature" not in second  # parallel calls: only the first is signed


@pytest.mark.asyncio
async def test_continuation_is_followed_and_billed_per_hop(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(
        content_reply(
            [text_part("Here is the long ")],
            finish_reason="CONTINUATION",
            continuation_token="dG9rLTE=",
            usage_metadata=usage(prompt=100, candidates=50),
        ),
        text_reply("answer.", usage_metadata=usage(prompt=100, candidates=10)),
    )

    response = await model.generate(request=ask())

    assert response.text == "Here is the long answer."
    assert response.usage == Usage(prompt_tokens=200, output_tokens=60)
    assert len(gemini.requests) == 2
    assert "continuationToken" not in gemini.requests[0].body
    assert _decoded(gemini.requests[1].body["continuationToken"]) == b"tok-1"


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [429, 500, 503])
async def test_transient_error_then_success(gemini: FakeGemini, model: GeminiModel, status: int) -> None:
    gemini.script(
        error_reply(status),
        text_reply("ok", usage_metadata=usage(prompt=9, candidates=1)),
    )

    response = await model.generate(request=ask())

    assert response.text == "ok"
    assert len(gemini.requests) == 2
    # Only the answer that arrived is counted; the failed attempt produced no usage.
    assert response.usage == Usage(prompt_tokens=9, output_tokens=1)
    assert gemini.requests[0].body == gemini.requests[1].body


@pytest.mark.asyncio
async def test_server_errors_exhaust_retries(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(*[error_reply(500)] * (RETRIES_MAX + 1))

    with pytest.raises(ModelUnavailable, match="500"):
        await model.generate(request=ask())

    assert len(gemini.requests) == RETRIES_MAX + 1


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_client_errors_are_rejected_without_retry(gemini: FakeGemini, model: GeminiModel, status: int) -> None:
    # A provider message that echoes the key must not carry it into our error.
    gemini.script(error_reply(status, f"API key not valid: {API_KEY}"))

    with pytest.raises(ModelRejected) as raised:
        await model.generate(request=ask("my secret diary entry"))

    assert len(gemini.requests) == 1
    message = str(raised.value)
    assert str(status) in message
    assert API_KEY not in message
    assert "secret diary" not in message
    assert raised.value.__cause__ is not None  # the SDK error is chained, not leaked


@pytest.mark.asyncio
async def test_hanging_server_times_out(gemini: FakeGemini) -> None:
    gemini.script(HANG, HANG)
    adapter = GeminiModel(
        api_key=API_KEY,
        base_url=gemini.base_url,
        timeout_s=0.2,
        retries_max=1,
        backoff_s=0.01,
    )
    started = time.monotonic()
    try:
        with pytest.raises(ModelUnavailable):
            await adapter.generate(request=ask())
    finally:
        await adapter.aclose()

    elapsed_s = time.monotonic() - started
    # Both attempts waited out their 0.2 s timeout. The upper bound only catches a
    # timeout that never fires (a hang), so it sits far above the ~0.4 s a run takes
    # and below the 10 s test timeout, which would report a hang less clearly; how fast
    # the adapter gives up is for bench/, not for a timed assertion here.
    assert 0.4 <= elapsed_s < 5.0
    assert len(gemini.requests) == 2


@pytest.mark.asyncio
async def test_connection_refused_is_unavailable() -> None:
    async with FakeGemini() as gone:
        base_url = gone.base_url  # a port that was just closed
    adapter = GeminiModel(api_key=API_KEY, base_url=base_url, retries_max=1, backoff_s=0.01)
    try:
        with pytest.raises(ModelUnavailable, match="ConnectError"):
            await adapter.generate(request=ask())
    finally:
        await adapter.aclose()


@pytest.mark.asyncio
async def test_blocked_prompt_is_rejected(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(blocked_reply("PROHIBITED_CONTENT"))

    with pytest.raises(ModelRejected, match="PROHIBITED_CONTENT"):
        await model.generate(request=ask())

    assert len(gemini.requests) == 1


@pytest.mark.asyncio
async def test_no_candidates_is_rejected(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(Reply(body={"modelVersion": "gemini-fake-001"}))

    with pytest.raises(ModelRejected, match="candidate"):
        await model.generate(request=ask())


@pytest.mark.asyncio
async def test_empty_safety_stop_is_rejected(gemini: FakeGemini, model: GeminiModel) -> None:
    gemini.script(content_reply([], finish_reason="SAFETY"))

    with pytest.raises(ModelRejected, match="SAFETY"):
        await model.generate(request=ask())


@pytest.mark.asyncio
async def test_empty_stop_is_a_silent_reply(gemini: FakeGemini, model: GeminiModel) -> None:
    # After a handoff the lead may rightly say nothing.
    gemini.script(content_reply([]))

    response = await model.generate(request=ask())

    assert response.text == ""
    assert response.calls == ()


def _decoded(value: str) -> bytes:
    """Google accepts standard and URL-safe base64 for bytes; compare what they encode."""
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_"))
