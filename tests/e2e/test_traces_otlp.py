"""One spoken request is one trace, as a collector receives it: a real `avagenc serve`
process exporting to a real OTLP/HTTP receiver (tests/fakes/otlp.py) through
TRACES_OTLP_ENDPOINT, a speaker call saying "turn on the bedroom light" in espeak-ng's
voice, and the trace that arrives holding the voice turn with the person's speech, its
recognition and turn end, the chat turn under it (Ava's run, the handoff, Zee's run and his
tool call, every model call's charge) and the reply's first audio and sentences
(docs/operations.md#traces). A wake note that falls due during a call is a trace of its
own too: its `wake` root, Ava's run on it and the reply said on the call."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from settings import Settings
from tests.e2e.test_speaker import START, say
from tests.fakes.otlp import OtlpReceiver, ReceivedSpan, otlp_receiver
from tests.fakes.servers import serve_subprocess
from tests.fakes.speech import Heard, listen, wait_for, wait_quiet


async def _received(receiver: OtlpReceiver, done: Callable[[list[ReceivedSpan]], bool]) -> list[ReceivedSpan]:
    """The spans received once `done` holds of them (the exporter sends in batches)."""
    async with asyncio.timeout(30):
        while not done(spans := receiver.spans()):
            await asyncio.sleep(0.1)
    return spans


def _voice_trace(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    """The spans of the first voice turn's trace that holds Zee's tool call, charges included."""
    for root in (s for s in spans if s.name == "voice turn"):
        in_trace = [s for s in spans if s.trace_id == root.trace_id]
        names = [s.name for s in in_trace]
        if "tool send_commands" in names and names.count("charge") >= names.count("model call") > 0:
            return in_trace
    return []


def _env(settings: Settings, receiver: OtlpReceiver) -> dict[str, str]:
    assert settings.database_url and settings.session_secret
    return {
        "DATABASE_URL": settings.database_url,
        "SESSION_SECRET": settings.session_secret.get_secret_value(),
        "AVAGENC_HOME": str(settings.avagenc_home),
        "TRACES_OTLP_ENDPOINT": receiver.url,
        # The SDK's batch delay (5 s by default), short so the test need not wait it out.
        "OTEL_BSP_SCHEDULE_DELAY": "200",
    }


@dataclass(frozen=True)
class Served:
    """A server exporting to the receiver, and a person signed in on it."""

    receiver: OtlpReceiver
    base_url: str
    person: str
    headers: dict[str, str]


@pytest.fixture
def served(settings: Settings, tmp_path: Path) -> Iterator[Served]:
    with otlp_receiver() as receiver:
        with serve_subprocess(_env(settings, receiver), log_path=tmp_path / "server.log") as base_url:
            signed_in = httpx.post(f"{base_url}/v1/auth/local", json={"name": "Budi"}, timeout=30)
            token = signed_in.json()["token"]
            yield Served(receiver, base_url, signed_in.json()["user"]["id"], {"Authorization": f"Bearer {token}"})


@contextlib.asynccontextmanager
async def _call(served: Served) -> AsyncIterator[tuple[ClientConnection, dict[str, Any], Heard]]:
    """A speaker call on the server: its socket, its `ready` message and what it hears,
    recorded until the block ends."""
    url = served.base_url.replace("http://", "ws://") + "/v1/voice/speaker"
    # The call doors are built after /readyz and the handshake waits for them (web/doors.py).
    async with connect(url, additional_headers=served.headers, max_size=2**20, open_timeout=60) as ws:
        await ws.send(json.dumps(START))
        ready = json.loads(await ws.recv())
        assert ready["type"] == "ready", ready
        heard = Heard()
        listener = asyncio.create_task(listen(ws, heard))
        try:
            yield ws, ready, heard
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await listener


async def test_a_spoken_request_reaches_a_collector_as_one_trace(served: Served) -> None:
    async with _call(served) as (ws, ready, heard):
        await say(ws, "turn on the bedroom light")
        await wait_for(heard, lambda h: any("light" in c["text"].lower() for c in h.of("transcript", "assistant")))
        await wait_quiet(heard)
    spans = await _received(served.receiver, lambda received: bool(_voice_trace(received)))

    in_trace = _voice_trace(spans)
    by_id = {s.span_id: s for s in in_trace}

    def parent(span: ReceivedSpan) -> ReceivedSpan | None:
        return by_id.get(span.parent_id) if span.parent_id is not None else None

    def one(name: str) -> ReceivedSpan:
        found = [s for s in in_trace if s.name == name]
        assert len(found) == 1, (name, [s.name for s in in_trace])
        return found[0]

    assert {s.service for s in in_trace} == {"avagenc"}
    # The voice turn is the trace's root: the call's, on the speaker door, for this person.
    root = one("voice turn")
    assert root.parent_id is None
    assert root.attributes["avagenc.call"] == ready["call_id"]
    assert root.attributes["avagenc.channel"] == "voice"
    assert root.attributes["avagenc.person"] == served.person
    assert isinstance(root.attributes["avagenc.sentences"], int) and root.attributes["avagenc.sentences"] >= 2
    assert all(parent(s) is not None for s in in_trace if s is not root), "every other span hangs off the root"

    # The voice pipeline's stages, in the order a person lives them.
    speech, stt, turn_end, first_audio = one("speech"), one("stt"), one("turn end"), one("first audio")
    assert {parent(s) for s in (speech, stt, turn_end, first_audio)} == {root}
    assert root.start_ns <= speech.start_ns < speech.end_ns <= stt.end_ns <= turn_end.end_ns
    assert speech.end_ns == stt.start_ns == turn_end.start_ns == first_audio.start_ns
    sentences = [s for s in in_trace if s.name == "tts"]
    assert sentences and {parent(s) for s in sentences} == {root}
    assert [s.attributes["avagenc.index"] for s in sorted(sentences, key=lambda s: s.start_ns)] == list(
        range(1, len(sentences) + 1)
    )
    assert first_audio.end_ns == min(s.end_ns for s in sentences)
    assert turn_end.end_ns <= first_audio.end_ns <= root.end_ns

    # The chat turn under it, as a typed turn's (tests/e2e/test_traces.py).
    turn = one("turn")
    assert parent(turn) is root and turn.attributes["avagenc.channel"] == "voice"
    assert turn_end.end_ns <= turn.start_ns
    route, ava, zee, command = one("route"), one("run ava"), one("run zee"), one("tool send_commands")
    assert parent(route) is turn and route.attributes["avagenc.agent"] == "ava"
    assert parent(ava) is turn
    handoff = parent(zee)
    assert handoff is not None and handoff.attributes["avagenc.handoff"] is True and parent(handoff) is ava
    assert zee.attributes["avagenc.trigger"] == "ava"
    assert parent(command) is zee
    calls = [s for s in in_trace if s.name == "model call"]
    charges = [s for s in in_trace if s.name == "charge"]
    assert {parent(c) for c in calls} == {ava, zee}
    assert len(charges) == len(calls) and {parent(c) for c in charges} == {ava, zee}
    assert not any(s.failed for s in in_trace)
    # Ids and names only: nothing anyone said is an attribute.
    assert not any("bedroom" in str(v).lower() for s in in_trace for v in s.attributes.values())


def _wake_trace(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    """The spans of the first wake's trace once its run, its charges, the sentences said on
    the call and the charge of that speech are all in."""
    for root in (s for s in spans if s.name == "wake"):
        in_trace = [s for s in spans if s.trace_id == root.trace_id]
        names = [s.name for s in in_trace]
        if {"run ava", "say", "tts", "voice charge"} <= set(names) and names.count("charge") >= names.count(
            "model call"
        ) > 0:
            return in_trace
    return []


async def test_a_note_said_on_a_call_reaches_a_collector_as_a_trace_of_its_own(served: Served) -> None:
    base_url, headers = served.base_url, served.headers
    async with httpx.AsyncClient(timeout=30) as client:
        async with _call(served) as (_, ready, heard):
            # Asked for in the text door while the call is live: due in 2 s, said on the call.
            asked = await client.post(
                f"{base_url}/v1/messages", json={"text": "remind me in 2 seconds to stretch my legs"}, headers=headers
            )
            assert asked.status_code == 200, asked.text
            # Generous: the note waits 2 s, then the process's first sentence loads the voice.
            await wait_for(
                heard,
                lambda h: any("stretch" in c["text"].lower() for c in h.of("transcript", "assistant")),
                timeout_s=90,
            )
            await wait_quiet(heard)
        reminders = (await client.get(f"{base_url}/v1/reminders", headers=headers)).json()
        spans = await _received(served.receiver, lambda received: bool(_wake_trace(received)))
        # The charge's span has ended: what it billed is on /metrics, by channel.
        scraped = (await client.get(f"{base_url}/metrics")).text

    (note,) = reminders["past"]
    in_trace = _wake_trace(spans)
    by_id = {s.span_id: s for s in in_trace}

    def parent(span: ReceivedSpan) -> ReceivedSpan | None:
        return by_id.get(span.parent_id) if span.parent_id is not None else None

    def one(name: str) -> ReceivedSpan:
        found = [s for s in in_trace if s.name == name]
        assert len(found) == 1, (name, [s.name for s in in_trace])
        return found[0]

    person = served.person
    root = one("wake")
    assert root.parent_id is None
    assert root.attributes["avagenc.note"] == note["id"]
    assert root.attributes["avagenc.person"] == person
    assert root.attributes["avagenc.channel"] == "voice" and root.attributes["avagenc.outcome"] == "ran"
    assert all(parent(s) is not None for s in in_trace if s is not root), "every other span hangs off the root"
    assert "voice turn" not in {s.name for s in in_trace}, "nobody spoke: no voice turn"

    # The turn on the note, Ava's run (woken by her note) and each model call's charge.
    turn, ava = one("turn"), one("run ava")
    assert parent(turn) is root and turn.attributes["avagenc.note"] == note["id"]
    assert parent(ava) is turn and ava.attributes["avagenc.trigger"] == "postera"
    calls = [s for s in in_trace if s.name == "model call"]
    charges = [s for s in in_trace if s.name == "charge"]
    assert {parent(c) for c in calls} == {ava} and {parent(c) for c in charges} == {ava}
    assert len(charges) == len(calls)

    # Said on the call: each sentence to its first audio, and the speech's charge after it.
    said = one("say")
    assert parent(said) is root
    assert said.attributes["avagenc.call"] == ready["call_id"] and said.attributes["avagenc.person"] == person
    sentences = sorted((s for s in in_trace if s.name == "tts"), key=lambda s: s.start_ns)
    assert {parent(s) for s in sentences} == {said}
    assert [s.attributes["avagenc.index"] for s in sentences] == list(range(1, len(sentences) + 1))
    assert said.attributes["avagenc.sentences"] == len(sentences)
    assert ava.end_ns <= said.start_ns <= sentences[0].start_ns and sentences[-1].end_ns <= said.end_ns
    charged = [s for s in in_trace if s.name == "voice charge"]
    assert charged and {parent(s) for s in charged} == {said}
    first = charged[0]
    assert first.attributes["avagenc.call"] == ready["call_id"] and first.attributes["avagenc.channel"] == "voice"
    assert (
        isinstance(first.attributes["avagenc.tts_characters"], int) and first.attributes["avagenc.tts_characters"] > 0
    )
    assert not any(s.failed for s in in_trace)
    billed = {
        name: float(line.split()[-1])
        for line in scraped.splitlines()
        for name in ("avagenc_voice_characters_billed_total", "avagenc_voice_cost_micros_total")
        if line.startswith(f'{name}{{channel="voice"}} ')
    }
    assert billed["avagenc_voice_characters_billed_total"] >= first.attributes["avagenc.tts_characters"]
    assert billed["avagenc_voice_cost_micros_total"] > 0
    # Ids and names only: neither the note's words nor Ava's are an attribute.
    assert not any("stretch" in str(v).lower() for s in in_trace for v in s.attributes.values())
