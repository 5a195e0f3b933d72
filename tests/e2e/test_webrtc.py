"""The browser call door over real WebRTC: an aiortc peer stands in for the browser against
a real uvicorn on 127.0.0.1. Its microphone says "turn on the bedroom light" in real time;
Whisper hears it over Opus, the offline model answers, espeak-ng speaks back, and the
peer hears the reply and reads the captions on the data channel. Signalling refusals
(no token, a second call, someone else's call) are checked too.
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import av
import httpx
import pytest
from aioice.ice import get_host_addresses
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError

from agents import SandboxHome
from tests.conftest import App
from tests.fakes.netns import veth_pair
from tests.fakes.servers import serve_in_process
from tests.fakes.speech import Heard, rms, silence, speech_pcm16, wait_for
from voice.webrtc import end_webrtc_calls

RATE = 48_000  # what a browser's microphone track carries
FRAME_S = 0.02
LOUD_RMS = 300.0
OFFER = "/v1/voice/webrtc/offer"


class SpeechTrack(MediaStreamTrack):
    """A microphone that says one thing in real time, then stays silent."""

    kind = "audio"

    def __init__(self, pcm: bytes, rate: int = RATE) -> None:
        super().__init__()
        self._pcm = pcm
        self._rate = rate
        self._samples = int(rate * FRAME_S)
        self._pts = 0
        self._started_at: float | None = None

    async def recv(self) -> av.AudioFrame:
        if self._started_at is None:
            self._started_at = time.monotonic()
        wait = self._started_at + self._pts / self._rate - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        start = self._pts * 2
        chunk = self._pcm[start : start + self._samples * 2].ljust(self._samples * 2, b"\x00")
        frame = av.AudioFrame(format="s16", layout="mono", samples=self._samples)
        frame.planes[0].update(chunk)
        frame.sample_rate = self._rate
        frame.pts = self._pts
        frame.time_base = fractions.Fraction(1, self._rate)
        self._pts += self._samples
        return frame


@dataclass
class Peer:
    pc: RTCPeerConnection
    answer: dict[str, Any]
    heard: Heard = field(default_factory=Heard)

    def loud_frames(self) -> int:
        return sum(1 for item in self.heard.items if isinstance(item, bytes) and rms(item) > LOUD_RMS)


@pytest.fixture
def ice_addresses() -> Iterator[None]:
    """aiortc offers no loopback candidates; a machine with no other address (a CI
    container without network) gets one from a veth pair."""
    if get_host_addresses(use_ipv4=True, use_ipv6=True):
        yield
        return
    with veth_pair():
        yield


@pytest.fixture
async def base_url(app: App, ice_addresses: None) -> AsyncIterator[str]:
    async with serve_in_process(app.app) as url:
        yield url
        # A failed test must not leave a pipeline running when the loop shuts down.
        await end_webrtc_calls()


async def offer(base_url: str, pc: RTCPeerConnection, headers: dict[str, str]) -> httpx.Response:
    await pc.setLocalDescription(await pc.createOffer())
    async with httpx.AsyncClient(base_url=base_url, timeout=20) as client:
        return await client.post(OFFER, json={"sdp": pc.localDescription.sdp, "type": "offer"}, headers=headers)


def microphone_peer(pcm: bytes) -> tuple[RTCPeerConnection, Heard, set[asyncio.Task[None]]]:
    """A peer like the call page: a microphone track, a data channel for captions, and
    whatever audio comes back recorded frame by frame."""
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    heard = Heard()
    listening: set[asyncio.Task[None]] = set()
    pc.addTrack(SpeechTrack(pcm))
    channel = pc.createDataChannel("captions")
    channel.on("message", lambda message: heard.items.append(json.loads(message)))

    async def record(track: MediaStreamTrack) -> None:
        with contextlib.suppress(MediaStreamError):
            while True:
                frame = await track.recv()
                assert isinstance(frame, av.AudioFrame)
                heard.items.append(frame.to_ndarray().tobytes())

    def on_track(track: MediaStreamTrack) -> None:
        listening.add(asyncio.ensure_future(record(track)))

    pc.on("track", on_track)
    return pc, heard, listening


@contextlib.asynccontextmanager
async def webrtc_call(base_url: str, headers: dict[str, str], pcm: bytes) -> AsyncIterator[Peer]:
    pc, heard, listening = microphone_peer(pcm)
    try:
        response = await offer(base_url, pc, headers)
        assert response.status_code == 200, response.text
        answer = response.json()
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))
        yield Peer(pc=pc, answer=answer, heard=heard)
    finally:
        await pc.close()
        for task in listening:
            task.cancel()
        await asyncio.gather(*listening, return_exceptions=True)


async def connected(peer: Peer, *, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while peer.pc.connectionState != "connected":
            await asyncio.sleep(0.02)


async def calls_end(app: App, *, timeout_s: float = 10.0) -> None:
    """The server noticed the peer leave and gave the person's call slot back."""
    async with asyncio.timeout(timeout_s):
        while len(app.services.voice.registry):
            await asyncio.sleep(0.05)


async def words(text: str) -> bytes:
    return silence(1.0, RATE) + await speech_pcm16(text, RATE) + silence(1.0, RATE)


async def test_a_webrtc_call_switches_the_light_and_ava_answers_aloud_with_captions(app: App, base_url: str) -> None:
    headers = await app.sign_in("Budi")
    async with webrtc_call(base_url, headers, await words("turn on the bedroom light")) as peer:
        assert peer.answer["type"] == "answer" and peer.answer["pc_id"]
        await wait_for(
            peer.heard,
            # The acknowledgement and then Zee's answer, said as it is.
            lambda h: (
                h.of("transcript", "user") and len(h.of("transcript", "assistant")) >= 2 and peer.loud_frames() >= 25
            ),
            timeout_s=40,
        )
    await calls_end(app)

    user = peer.heard.of("transcript", "user")
    assert "bedroom" in user[0]["text"].lower()
    assistant = peer.heard.of("transcript", "assistant")
    assert assistant[0]["text"] == "On it." and assistant[0]["emotion"] == "neutral"  # the acknowledgement
    assert "#" not in json.dumps(peer.heard.events)

    me = await app.services.people.get(await app.services.local_tokens.verify(headers["Authorization"][7:]))
    assert me is not None
    status = await SandboxHome(app.services.pool).device_status(person_id=me.id, device_id="sbx-light-bedroom")
    assert status["switch_led"] is True
    thread = await app.services.threads.page(me.id, before=None, after=None, limit=50)
    assert [(m.author, m.channel) for m in thread] == [
        ("human", "voice"),
        ("ava", "voice"),
        ("zee", "voice"),
    ]  # Zee's answer was said as it is, with no relay from Ava
    assert "bedroom" in thread[0].text.lower()
    assert any(c["text"] == thread[-1].text for c in assistant[1:])


async def test_goodbye_is_heard_in_full_then_the_server_hangs_up(app: App, base_url: str) -> None:
    headers = await app.sign_in("Budi")
    async with webrtc_call(base_url, headers, await words("okay, goodbye")) as peer:
        await wait_for(peer.heard, lambda h: bool(h.of("hangup")), timeout_s=40)
        async with asyncio.timeout(10):
            while peer.pc.connectionState != "closed":
                await asyncio.sleep(0.05)
        await calls_end(app)
    items = peer.heard.items
    hangup_at = next(i for i, item in enumerate(items) if isinstance(item, dict) and item["type"] == "hangup")
    assert items[hangup_at] == {"type": "hangup", "reason": "agent_ended"}
    goodbye = peer.heard.of("transcript", "assistant")[-1]
    assert "#" not in goodbye["text"]
    loud_before = sum(1 for item in items[:hangup_at] if isinstance(item, bytes) and rms(item) > LOUD_RMS)
    assert loud_before >= 25, "the goodbye was spoken before the hang-up"
    after = [item for item in items[hangup_at + 1 :] if isinstance(item, bytes)]
    assert not any(rms(item) > LOUD_RMS for item in after), "the hang-up comes after the last word"


async def test_an_offer_without_a_valid_token_is_401_problem_json(app: App) -> None:
    body = {"sdp": "v=0\r\n", "type": "offer"}
    for headers in ({}, {"Authorization": "Bearer forged"}, {"Authorization": "Basic abc"}):
        response = await app.client.post(OFFER, json=body, headers=headers)
        assert response.status_code == 401
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["type"] == "unauthorized"
    patch = await app.client.patch(OFFER, json={"pc_id": "x", "candidates": []})
    assert patch.status_code == 401


async def test_one_call_per_person_and_calls_answer_only_to_their_caller(app: App, base_url: str) -> None:
    budi, siti = await app.sign_in("Budi"), await app.sign_in("Siti")
    async with webrtc_call(base_url, budi, silence(30, RATE)) as first:
        await connected(first)
        pc, _, _ = microphone_peer(b"")
        try:
            second = await offer(base_url, pc, budi)
        finally:
            await pc.close()
        assert second.status_code == 409, second.text
        assert second.headers["content-type"].startswith("application/problem+json")
        assert second.json()["type"] == "call_in_progress"

        pc_id = first.answer["pc_id"]
        candidate = {"candidate": "", "sdp_mid": "0", "sdp_mline_index": 0}
        strangers = await app.client.patch(OFFER, json={"pc_id": pc_id, "candidates": [candidate]}, headers=siti)
        assert (strangers.status_code, strangers.json()["type"]) == (404, "call_not_found")
        renegotiate = await app.client.post(
            OFFER, json={"sdp": "v=0\r\n", "type": "offer", "pc_id": pc_id}, headers=siti
        )
        assert renegotiate.status_code == 404
        garbage = {"candidate": "not a candidate", "sdp_mid": "0", "sdp_mline_index": 0}
        bad = await app.client.patch(OFFER, json={"pc_id": pc_id, "candidates": [garbage]}, headers=budi)
        assert (bad.status_code, bad.json()["type"]) == (400, "offer_invalid")
        own = await app.client.patch(OFFER, json={"pc_id": pc_id, "candidates": [candidate]}, headers=budi)
        assert own.status_code == 200, own.text

        # The caller may renegotiate their own live call (same pc_id); it stays one call.
        await first.pc.setLocalDescription(await first.pc.createOffer())
        sdp = first.pc.localDescription.sdp
        renegotiated = await app.client.post(OFFER, json={"sdp": sdp, "type": "offer", "pc_id": pc_id}, headers=budi)
        assert renegotiated.status_code == 200, renegotiated.text
        assert renegotiated.json()["pc_id"] == pc_id and len(app.services.voice.registry) == 1
        answer = RTCSessionDescription(sdp=renegotiated.json()["sdp"], type="answer")
        await first.pc.setRemoteDescription(answer)
    await calls_end(app)

    # Hanging up gave the slot back: Budi can call again.
    async with webrtc_call(base_url, budi, silence(5, RATE)) as again:
        await connected(again)
    await calls_end(app)


async def test_a_broken_offer_is_refused_and_frees_the_slot(app: App) -> None:
    headers = await app.sign_in("Budi")
    response = await app.client.post(OFFER, json={"sdp": "v=0\r\nnonsense", "type": "offer"}, headers=headers)
    assert (response.status_code, response.json()["type"]) == (400, "offer_invalid")
    assert len(app.services.voice.registry) == 0


async def test_ending_all_calls_hangs_up_live_peers_before_shutdown(app: App, base_url: str) -> None:
    headers = await app.sign_in("Budi")
    async with webrtc_call(base_url, headers, silence(30, RATE)) as peer:
        await connected(peer)
        await end_webrtc_calls()
        assert len(app.services.voice.registry) == 0
        async with asyncio.timeout(10):
            while peer.pc.connectionState != "closed":
                await asyncio.sleep(0.05)


async def test_end_all_calls_says_goodbye_to_a_webrtc_peer_then_hangs_up_with_shutdown(app: App, base_url: str) -> None:
    headers = await app.sign_in("Budi")
    async with webrtc_call(base_url, headers, silence(30, RATE)) as peer:
        await connected(peer)
        await app.services.voice.end_all_calls(reason="shutdown", timeout_s=20)
        assert len(app.services.voice.registry) == 0
        async with asyncio.timeout(10):
            while peer.pc.connectionState != "closed":
                await asyncio.sleep(0.05)
    items = peer.heard.items
    hangup_at = next(i for i, item in enumerate(items) if isinstance(item, dict) and item["type"] == "hangup")
    assert items[hangup_at] == {"type": "hangup", "reason": "shutdown"}
    assert "bye" in peer.heard.of("transcript", "assistant")[-1]["text"].lower()
    loud_before = sum(1 for item in items[:hangup_at] if isinstance(item, bytes) and rms(item) > LOUD_RMS)
    assert loud_before >= 25, "the goodbye was spoken before the hang-up"
