"""The live Gemini adapter's streaming path against the simulated Gemini API
(bench.cloudsim): text heard as it arrives, a function call mid-stream, an error
mid-stream, and what a stream stopped early is billed. The simulator runs with no
pacing here; its latency models are for the bench."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agents import FunctionCall, ModelRequest, ModelUnavailable
from agents.gemini import GeminiModel
from agents.model import Content, ToolSpec
from bench.cloudsim.gemini import Answer, SimulatedGemini, scripted_responder
from bench.cloudsim.latency import LogNormal, ModelLatency

TOOL = ToolSpec("zee", "Hand on to Zee.", {"type": "object", "properties": {"tag": {"type": "string"}}})
REQUEST = ModelRequest(
    model="gemini-2.5-flash",
    system="You are Ava.",
    contents=(Content(role="user", text="turn on the bedroom light"),),
    tools=(TOOL,),
)
LONG = "The bedroom light is on now. " * 6


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedGemini]:
    async with SimulatedGemini(scripted_responder([])) as simulated:
        yield simulated


def script(sim: SimulatedGemini, *answers: Answer) -> None:
    sim.responder = scripted_responder(list(answers))


@pytest.fixture
async def gemini(sim: SimulatedGemini) -> AsyncIterator[GeminiModel]:
    model = GeminiModel(api_key="sim-key", base_url=sim.base_url, timeout_s=10.0, retries_max=1, backoff_s=0.0)
    yield model
    await model.aclose()


async def test_text_is_heard_piece_by_piece_and_usage_is_the_last_figure(
    sim: SimulatedGemini, gemini: GeminiModel
) -> None:
    script(sim, Answer(text=LONG, prompt_tokens=120))
    heard: list[str] = []
    response = await gemini.stream(request=REQUEST, on_text=heard.append)
    assert len(heard) > 1 and "".join(heard) == LONG == response.text
    assert response.usage.prompt_tokens == 120
    assert response.usage.output_tokens == sim.served[-1].output_tokens > 0
    assert not response.cut and not response.calls
    assert sim.served[-1].streamed


async def test_a_function_call_arrives_whole_after_its_text(sim: SimulatedGemini, gemini: GeminiModel) -> None:
    script(sim, Answer(text="Sure, I'll ask Zee to turn it on. ", calls=(FunctionCall("", "zee", {"tag": "@zee"}),)))
    heard: list[str] = []
    response = await gemini.stream(request=REQUEST, on_text=heard.append)
    assert "".join(heard) == "Sure, I'll ask Zee to turn it on. "
    assert [(c.name, c.args) for c in response.calls] == [("zee", {"tag": "@zee"})]
    assert response.calls[0].id  # the adapter numbers calls Gemini left without an id
    # The simulator saw our tools and text, translated back from the wire.
    seen = sim.served[-1].request
    assert seen is not None and seen.tools[0].name == "zee" and seen.contents[0].text == "turn on the bedroom light"


async def test_an_error_mid_stream_is_raised_with_the_usage_sent_before_it(
    sim: SimulatedGemini, gemini: GeminiModel
) -> None:
    script(sim, Answer(text=LONG, prompt_tokens=80, fail_after=40))
    heard: list[str] = []
    with pytest.raises(ModelUnavailable) as failure:
        await gemini.stream(request=REQUEST, on_text=heard.append)
    # Never retried once text has been heard (it would be said twice and billed twice).
    assert len(sim.served) == 1 and sim.served[0].failed
    assert heard and LONG.startswith("".join(heard))
    assert failure.value.usage.prompt_tokens == 80
    assert failure.value.usage.output_tokens == sim.served[0].output_tokens > 0


async def test_a_refusal_before_the_first_chunk_is_retried(sim: SimulatedGemini, gemini: GeminiModel) -> None:
    script(sim, Answer(status=503, message="busy"), Answer(text="Hello."))
    response = await gemini.stream(request=REQUEST, on_text=lambda _piece: None)
    assert response.text == "Hello." and len(sim.served) == 2


async def test_a_stream_stopped_early_is_billed_for_what_arrived(sim: SimulatedGemini, gemini: GeminiModel) -> None:
    script(sim, Answer(text=LONG, prompt_tokens=90, calls=(FunctionCall("", "zee", {"tag": "@zee"}),)))
    stop = asyncio.Event()
    heard: list[str] = []

    def hear(piece: str) -> None:
        heard.append(piece)
        stop.set()  # the person spoke over the first words

    response = await gemini.stream(request=REQUEST, on_text=hear, stop=stop)
    assert response.cut and response.text == heard[0] and not response.calls
    assert response.usage.prompt_tokens == 90
    # The first chunk's own count: what Google had sent when we stopped reading.
    assert 0 < response.usage.output_tokens <= sim.served[-1].output_tokens
    assert response.usage.output_tokens == (len(heard[0]) + 3) // 4


async def test_a_stream_stopped_early_ends_at_the_vendor_too(sim: SimulatedGemini, gemini: GeminiModel) -> None:
    """Stopping must close the HTTP response, not only stop reading it: a response left
    open kept Google generating, and billing, the rest of an answer nobody would hear."""
    sim.latency = ModelLatency(first_token=LogNormal(p50_s=0.01, p95_s=0.02), tokens_per_s=40.0)
    script(sim, Answer(text=LONG * 10, prompt_tokens=90), Answer(text="Next.", prompt_tokens=20))
    stop = asyncio.Event()
    response = await gemini.stream(request=REQUEST, on_text=lambda _piece: stop.set(), stop=stop)
    assert response.cut
    served = sim.served[-1]
    async with asyncio.timeout(5):  # the vendor notices at its next write (one every 0.2 s here)
        while not served.dropped:
            await asyncio.sleep(0.02)
    full_tokens = (len(LONG * 10) + 3) // 4
    assert response.usage.output_tokens <= served.output_tokens < full_tokens // 4
    # The next call is served as usual, on a connection of its own.
    assert (await gemini.stream(request=REQUEST, on_text=lambda _piece: None)).text == "Next."


async def test_a_stream_cut_short_is_billed_exactly_what_the_vendor_bills_once(
    sim: SimulatedGemini, gemini: GeminiModel
) -> None:
    """A barge-in stops a paced stream (docs/money.md#a-stream-cut-short): the charge is
    the usage on the last event Google sent, and that is the vendor's record too. The
    simulated vendor used to hear the close only at its next write, and billed one event
    more (48 tokens) than it had sent the adapter (40). Events 200 ms apart here (Gemini's
    are about 36 ms apart), so a loaded machine cannot make our close later than the next."""
    sim.latency = ModelLatency(first_token=LogNormal(p50_s=0.01, p95_s=0.02), tokens_per_s=40.0)
    script(sim, Answer(text=LONG * 10, prompt_tokens=90))
    stop = asyncio.Event()
    pieces: list[str] = []

    def hear(piece: str) -> None:
        pieces.append(piece)
        if len(pieces) == 5:
            stop.set()  # the person spoke over the fifth piece

    response = await gemini.stream(request=REQUEST, on_text=hear, stop=stop)
    assert response.cut and len(pieces) == 5
    [served] = sim.served
    async with asyncio.timeout(5):
        while not served.dropped:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # several events' time at this pace: the vendor sends no more
    assert response.usage.output_tokens == served.output_tokens == 5 * sim.latency.tokens_per_event
    assert response.usage.prompt_tokens == served.prompt_tokens == 90


async def test_the_connection_is_kept_for_the_next_call(sim: SimulatedGemini, gemini: GeminiModel) -> None:
    script(sim, Answer(text="One."), Answer(text="Two."))
    await gemini.stream(request=REQUEST, on_text=lambda _piece: None)
    await gemini.generate(request=REQUEST)
    assert sim.connections == 1
