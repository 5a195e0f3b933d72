"""Barge-in on the Google voice path, through the whole server (issue 28: money stays
exact). A real uvicorn on 127.0.0.1 with VOICE_HEARING=google and VOICE_SPEECH=google-
streaming against the gRPC fakes of Speech-to-Text and Text-to-Speech (bench.cloudsim.
speech), and the product's Gemini adapter against the simulated Gemini: a speaker call asks
for a long story, the person speaks over Ava mid-sentence, and the test checks that her
speech and the generation behind it stopped, that the sentence she was saying was not
finished, and that the call was billed what the vendors bill, once: each model call (the
story's cut short) by its ref and amount, the characters Google's voice received and the
audio its recogniser heard, with nothing billed twice or lost and the ledger whole."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agents import Model, ModelRequest
from bench.cloudsim.gemini import Answer, SimulatedGemini
from bench.cloudsim.latency import GOOGLE_TTS_STREAMING_FIRST_BYTE, LogNormal, ModelLatency
from bench.cloudsim.speech import SimulatedSpeech, throwaway_credentials
from settings import Settings
from tests.conftest import App, offline_settings
from tests.e2e.test_speaker import call, say, token_for
from tests.fakes.servers import serve_in_process
from tests.fakes.simulated_gemini import gemini_on
from tests.fakes.speech import wait_for, wait_quiet

# A story far longer than the test lets Ava say: each sentence distinct, so what was said
# of it can be told apart.
STORY_SENTENCES = [f"Chapter {n} begins as the moon rises slowly over the quiet grey sea." for n in range(1, 121)]
STORY = " ".join(STORY_SENTENCES)
STORY_PROMPT_TOKENS, NOON_PROMPT_TOKENS = 300, 200
NOON = "It is noon."
# Gemini writing slowly enough (40 tokens/s against its 220) that the story is still being
# generated when the person speaks over it: a generation that did not stop would show.
SLOW_GEMINI = ModelLatency(first_token=LogNormal(p50_s=0.3, p95_s=0.4), tokens_per_s=40.0)
# The recogniser calls an utterance over soon after its last loud audio (the bench paces it
# at Google's figures; here only what is billed matters).
QUICK_FINAL = LogNormal(p50_s=0.25, p95_s=0.3)
BYTES_PER_S = 2 * 16_000  # PCM16 at the speaker door's 16 kHz
SETTLE_S = 20.0  # a bound on waiting for the call's charges after it ends, never a measure


def newest_words(request: ModelRequest) -> str:
    return next((c.text for c in reversed(request.contents) if c.role == "user"), "").lower()


async def respond(request: ModelRequest) -> Answer:
    """The story for a request for one (a guess begun on the words included), the time
    for anything else."""
    if "story" in newest_words(request):
        return Answer(text=STORY, prompt_tokens=STORY_PROMPT_TOKENS)
    return Answer(text=f"{NOON} #neutral#", prompt_tokens=NOON_PROMPT_TOKENS)


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedGemini]:
    async with SimulatedGemini(respond, latency=SLOW_GEMINI) as simulated:
        yield simulated


@pytest.fixture
async def model(sim: SimulatedGemini) -> AsyncIterator[Model]:
    async with gemini_on(sim, timeout_s=30.0) as gemini:
        yield gemini


@pytest.fixture
async def speech() -> AsyncIterator[SimulatedSpeech]:
    async with SimulatedSpeech(stt_final=QUICK_FINAL, tts_first_byte=GOOGLE_TTS_STREAMING_FIRST_BYTE) as simulated:
        yield simulated


@pytest.fixture
def settings(database_url: str, tmp_path: Path, speech: SimulatedSpeech) -> Settings:
    credentials = throwaway_credentials(tmp_path / "speech-key.json")
    return offline_settings(database_url, tmp_path).model_copy(
        update={
            "google_speech_credentials": credentials,
            "voice_hearing": "google",
            "voice_speech": "google-streaming",
            "google_stt_endpoint": speech.endpoint,
            "google_tts_endpoint": speech.endpoint,
            "voice_preload": False,
        }
    )


@pytest.fixture
async def base_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app.app) as url:
        yield url.replace("http://", "ws://")


def is_caption(item: dict[str, Any] | bytes) -> bool:
    return isinstance(item, dict) and item.get("type") == "transcript" and item.get("role") == "assistant"


def barge_in_at(items: list[dict[str, Any] | bytes]) -> int:
    """Where the `clear` of the barge-in is: the first after Ava began to speak (each time
    the person starts speaking a `clear` comes, even with nothing playing)."""
    spoke_at = next(i for i, item in enumerate(items) if is_caption(item))
    return next(
        i for i, item in enumerate(items) if i > spoke_at and isinstance(item, dict) and item.get("type") == "clear"
    )


def what_the_speaker_got(items: list[dict[str, Any] | bytes]) -> str:
    """The call as the speaker got it: each event, and the bytes of audio between them."""
    lines: list[str] = []
    audio = 0
    for item in items:
        if isinstance(item, bytes):
            audio += len(item)
            continue
        if audio:
            lines.append(f"audio {audio} bytes")
            audio = 0
        lines.append(json.dumps(item)[:100])
    return "\n".join([*lines, f"audio {audio} bytes"] if audio else lines)


def story_heard_before_the_clear(items: list[dict[str, Any] | bytes]) -> tuple[str, int]:
    """The last story sentence captioned before the barge-in's `clear`, and the bytes of
    audio that reached the client after its caption (what was played of it)."""
    clear_at = barge_in_at(items)
    last = max(i for i in range(clear_at) if is_caption(items[i]))
    caption = items[last]
    assert isinstance(caption, dict)
    played = sum(len(item) for item in items[last + 1 : clear_at] if isinstance(item, bytes))
    return str(caption["text"]), played


async def test_speaking_over_ava_stops_her_voice_and_generation_and_bills_what_was_used_once(
    app: App, base_url: str, sim: SimulatedGemini, speech: SimulatedSpeech
) -> None:
    services = app.services
    token = await token_for(app)
    me = await services.local_tokens.verify(token)
    granted = await services.wallet.balance_micros(me)

    async with call(base_url, token) as (ws, heard):
        await say(ws, "tell me a long story")
        # Ava is well into her story: a second and a half of it has reached the speaker.
        await wait_for(heard, lambda h: len(h.audio) > 1.5 * BYTES_PER_S, timeout_s=40)
        await say(ws, "what time is it")
        await wait_for(heard, lambda h: any(c["text"] == NOON for c in h.of("transcript", "assistant")), timeout_s=30)
        await wait_quiet(heard)

    timeline = what_the_speaker_got(heard.items)  # for the messages of the asserts below
    # She stopped: the sentence being said when the person spoke was not finished.
    sentence, played_bytes = story_heard_before_the_clear(heard.items)
    assert sentence in STORY_SENTENCES
    [synthesis] = [s for s in speech.syntheses if s.inputs and s.inputs[0].startswith(sentence)]
    assert played_bytes < synthesis.audio_bytes or synthesis.cancelled, (played_bytes, synthesis, timeline)
    # Nothing of the story was said after the clear: only the answer to the new question.
    after = [e["text"] for e in heard.items[barge_in_at(heard.items) :] if isinstance(e, dict) and is_caption(e)]
    assert after == [NOON], timeline

    # The generation behind her stopped too: every story request was cut well short.
    story_served = [s for s in sim.served if not s.structured and s.request and "story" in newest_words(s.request)]
    assert story_served and all(s.dropped for s in story_served), story_served
    full_story_tokens = (len(STORY) + 3) // 4
    assert all(s.output_tokens < full_story_tokens // 2 for s in story_served)
    thread = await services.threads.page(me, before=None, after=None, limit=20)
    told = [m.text for m in thread if m.author == "ava" and m.text.startswith("Chapter")]
    assert len(told) == 1 and STORY.startswith(told[0]) and len(told[0]) < len(STORY) // 2, told

    # Billing, once the call's charges have settled (its last slice, any dropped guess).
    served = [s for s in sim.served if not s.structured]
    with contextlib.suppress(TimeoutError):  # what is still missing then, the asserts below name
        async with asyncio.timeout(SETTLE_S):
            while True:
                calls = await services.pool.fetch(
                    "SELECT run_id, idx, model, usage, cost_micros FROM run_calls WHERE person_id = $1", me
                )
                entries = await services.wallet.entries(me, before_id=None, limit=200)
                voiced = sum(e.metadata["tts"]["characters"] for e in entries if e.type == "voice_usage")
                heard_ms = sum(e.metadata["stt"]["ms"] for e in entries if e.type == "voice_usage")
                sent_ms = sum(r.audio_bytes for r in speech.recognitions) * 1000 // BYTES_PER_S
                charged = all(c["cost_micros"] is not None for c in calls)
                # The call's last slice (the audio heard since the last reply) is charged as it ends.
                settled = voiced >= sum(s.characters for s in speech.syntheses) and heard_ms >= sent_ms - 20
                if len(calls) == len(served) and charged and settled:
                    break
                await asyncio.sleep(0.2)
    assert await services.runs.uncharged_calls() == []

    # Each model call Gemini served is charged once, by its ref, at its receipt's cost:
    # the calls that ran to the end for all they used, the ones cut short (the story, and
    # any guess dropped on the way) for the usage on the last event Gemini sent them, which
    # is what it bills for them (docs/money.md#a-stream-cut-short).
    model_charges = {e.ref: e for e in entries if e.type == "agent_call" and e.ref.startswith("run:")}
    assert set(model_charges) == {f"run:{c['run_id']}:call:{c['idx']}" for c in calls}
    for c in calls:
        entry = model_charges[f"run:{c['run_id']}:call:{c['idx']}"]
        assert entry.amount_micros == -c["cost_micros"]
        assert c["cost_micros"] == await services.wallet.cost_of_call(model=c["model"], usage=c["usage"])
    assert Counter(c["usage"]["prompt_tokens"] for c in calls) == Counter(s.prompt_tokens for s in served)
    for prompt_tokens in (STORY_PROMPT_TOKENS, NOON_PROMPT_TOKENS):
        billed = sorted(c["usage"]["output_tokens"] for c in calls if c["usage"]["prompt_tokens"] == prompt_tokens)
        sent = sorted(s.output_tokens for s in served if s.prompt_tokens == prompt_tokens)
        assert billed == sent
    noon_calls = [s for s in served if s.prompt_tokens == NOON_PROMPT_TOKENS and not s.dropped]
    assert noon_calls, "the question after the barge-in was answered"
    for s in noon_calls:  # ran to its end: billed exactly what Gemini reported
        assert any(c["usage"]["output_tokens"] == s.output_tokens for c in calls), s

    # The call's speech: its slices, each once, charged the characters Google's voice
    # received (the cut sentence whole: it was sent whole) at the receipt's prices.
    slices = [e for e in entries if e.type == "voice_usage"]
    call_ids = {e.metadata["call_id"] for e in slices}
    assert len(call_ids) == 1
    assert sorted(e.metadata["slice"] for e in slices) == list(range(1, len(slices) + 1))
    assert sum(e.metadata["tts"]["characters"] for e in slices) == sum(s.characters for s in speech.syntheses)
    heard_ms = sum(e.metadata["stt"]["ms"] for e in slices)
    sent_ms = sum(r.audio_bytes for r in speech.recognitions) * 1000 // BYTES_PER_S
    assert abs(heard_ms - sent_ms) <= 20, (heard_ms, sent_ms)  # within one 20 ms frame
    for e in slices:
        stt, tts = e.metadata["stt"], e.metadata["tts"]
        cost = (
            stt["ms"] * stt["per_million_seconds_idr"] // 1000 + tts["characters"] * tts["per_million_characters_idr"]
        )
        assert e.amount_micros == -max(cost, 1) == -e.metadata["cost_micros"]

    # The wallet lost exactly what the receipts say, and the books balance.
    spent = sum(c["cost_micros"] for c in calls) + sum(e.metadata["cost_micros"] for e in slices)
    assert await services.wallet.balance_micros(me) == granted - spent
    assert (await services.ledger.verify()).ok
