"""The voice doors: one Pipecat pipeline for partner speakers, the browser call page and
phones; Ava's voice processor; speech engines; emotion prosody and hang-up.

The composition root (`app`) imports the names listed here; engines are imported by it from
`voice.engines.*` only when chosen, so cloud SDKs load only when configured, and the
browser's door from `voice.webrtc`, which it builds last (its WebRTC stack is a third of
voice's import, app.voice.VoiceLater).
"""

from voice.call_slots import CallSlots
from voice.calls import Call, CallLimits, CallRegistry
from voice.doors import build_voice_router
from voice.errors import VoiceError
from voice.phone_webhook import PhoneWebhook, twilio_signature
from voice.pipeline import Engines, TurnTiming
from voice.shared import VoiceDoors

__all__ = [
    "Call",
    "CallLimits",
    "CallRegistry",
    "CallSlots",
    "Engines",
    "PhoneWebhook",
    "TurnTiming",
    "VoiceDoors",
    "VoiceError",
    "build_voice_router",
    "twilio_signature",
]
