"""A browser call when there are two server instances behind one address and nothing routes
a call's signalling back to the instance that answered its offer (docs/sockets.md#several-instances).

The call lives in the memory of the instance that answered the offer. Its answer carries
every server candidate and the offer every browser candidate, so the peers reach each other
with no trickled candidate at all: trickled candidates that land on the other instance are
refused there as 404 `call_not_found` (never a 500), and the call connects anyway. The call
slot is one per person across instances, so a second call through the other instance is
409. Only renegotiating a live call needs the instance that holds it."""

from __future__ import annotations

from pathlib import Path

from aiortc import RTCSessionDescription

from app.server import running
from settings import Settings
from tests.conftest import App
from tests.e2e.test_webrtc import OFFER, RATE, base_url, connected, ice_addresses, microphone_peer, webrtc_call
from tests.fakes.speech import silence

__all__ = ["base_url", "ice_addresses"]  # fixtures


def browser_candidates(sdp: str) -> list[dict[str, object]]:
    """The candidate lines of an SDP, as the call page trickles them."""
    return [
        {"candidate": line.removeprefix("a="), "sdp_mid": "0", "sdp_mline_index": 0}
        for line in sdp.splitlines()
        if line.startswith("a=candidate:")
    ]


async def test_signalling_that_reaches_the_other_instance_is_refused_and_the_call_connects(
    app: App, base_url: str, settings: Settings, tmp_path: Path
) -> None:
    other_settings = settings.model_copy(update={"avagenc_home": tmp_path / "other"})
    async with running(other_settings) as (other_services, other_fastapi):
        other = App(other_services, other_fastapi)
        try:
            budi = await app.sign_in("Budi")
            async with webrtc_call(base_url, budi, silence(20, RATE)) as call:
                pc_id = call.answer["pc_id"]
                trickled = browser_candidates(call.pc.localDescription.sdp)
                assert trickled, "the peer has candidates to trickle"
                lost = await other.client.patch(OFFER, json={"pc_id": pc_id, "candidates": trickled}, headers=budi)
                assert lost.status_code == 404, lost.text
                assert lost.headers["content-type"].startswith("application/problem+json")
                assert lost.json()["type"] == "call_not_found"
                await connected(call)

                # One call per person on every instance: the other one refuses a second.
                pc, _, _ = microphone_peer(b"")
                try:
                    await pc.setLocalDescription(await pc.createOffer())
                    second = await other.client.post(
                        OFFER, json={"sdp": pc.localDescription.sdp, "type": "offer"}, headers=budi
                    )
                finally:
                    await pc.close()
                assert (second.status_code, second.json()["type"]) == (409, "call_in_progress")

                # Renegotiating is the one thing that needs the instance holding the call.
                await call.pc.setLocalDescription(await call.pc.createOffer())
                again = {"sdp": call.pc.localDescription.sdp, "type": "offer", "pc_id": pc_id}
                elsewhere = await other.client.post(OFFER, json=again, headers=budi)
                assert (elsewhere.status_code, elsewhere.json()["type"]) == (404, "call_not_found")
                here = await app.client.post(OFFER, json=again, headers=budi)
                assert here.status_code == 200, here.text
                await call.pc.setRemoteDescription(RTCSessionDescription(sdp=here.json()["sdp"], type="answer"))
                assert call.pc.connectionState == "connected"
        finally:
            await other.client.aclose()
