"""The voice domain's errors, in the same vocabulary as chat's and the ledger's: each
class has a stable `type` a client may branch on and a message that is safe to show.

How a type answers at a door (an HTTP status on WebRTC signalling, a close code and an
error event on a WebSocket, a sentence on a live call) is chosen at the edges
(`chat.edge`, `voice.edge`), never here.
"""

from __future__ import annotations

from typing import ClassVar


class VoiceError(Exception):
    """Base of every error the voice domain raises on purpose; `str()` is safe to show."""

    type: ClassVar[str] = "voice_error"


class ProtocolViolation(VoiceError):
    """A frame the protocol does not allow here (wrong event, no `start` in time, JSON
    nested or sized beyond the limits)."""

    type = "protocol_violation"


class BadJson(VoiceError):
    type = "bad_json"


class UnsupportedFormat(VoiceError):
    type = "unsupported_format"


class FrameTooLarge(VoiceError):
    type = "frame_too_large"


class CallInProgress(VoiceError):
    type = "call_in_progress"


class CallsBusy(VoiceError):
    """This process is at its call cap."""

    type = "server_busy"


class CallNotFound(VoiceError):
    type = "call_not_found"


class OfferInvalid(VoiceError):
    type = "offer_invalid"


class SignatureInvalid(VoiceError):
    """A phone webhook request Twilio did not sign (or signed for another URL or body)."""

    type = "twilio_signature_invalid"


class PhoneWebhookDisabled(VoiceError):
    """The phone webhook is off: no Twilio auth token is configured to check requests with."""

    type = "phone_webhook_disabled"


class WebhookReplayed(VoiceError):
    """A signed phone webhook request for a call already answered (or naming no call)."""

    type = "webhook_replayed"
