"""The chat domain's errors. Each has a stable `type` (the same vocabulary as the
ledger's and voice's errors); how a type answers at each door — an HTTP status, a
WebSocket close code, a sentence on a call — is chosen at the edges, never here."""

from __future__ import annotations

from typing import ClassVar


class ChatError(Exception):
    """Base of every error the chat domain raises on purpose; `str()` is safe to show."""

    type: ClassVar[str] = "chat_error"


class Unauthorized(ChatError):
    type = "unauthorized"


class NotFound(ChatError):
    type = "not_found"


class MessageBlank(ChatError):
    type = "message_blank"


class MessageTooLong(ChatError):
    type = "message_too_long"


class TextInvalid(ChatError):
    """Text with characters no thread can keep (NUL, lone surrogates)."""

    type = "text_invalid"


class TimeZoneInvalid(ChatError):
    type = "time_zone_invalid"


class ThreadBusy(ChatError):
    type = "thread_busy"


class KnowledgeUnavailable(ChatError):
    """The memory service (Zep, or the graph) did not answer in time."""

    type = "knowledge_unavailable"


class TooManyStreams(ChatError):
    type = "too_many_streams"

    def __init__(self, message: str, *, retry_after_s: int = 5) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class RateLimited(ChatError):
    """Too many attempts (sign-ins, runs) in a window, or too many at once; `retry_after_s`
    says when the next may succeed."""

    type = "rate_limited"

    def __init__(self, message: str, *, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SignInDisabled(ChatError):
    type = "local_sign_in_disabled"


class AdminDisabled(ChatError):
    type = "admin_disabled"


class DateInvalid(ChatError):
    type = "date_invalid"


class PairingCodeInvalid(ChatError):
    """A pairing code that is malformed, wrong, used or expired: nothing was paired."""

    type = "pairing_code_invalid"


class PairingCodeBurnt(PairingCodeInvalid):
    """A pairing that took too many wrong codes: even its right code pairs nothing now;
    the speaker must start again."""

    type = "pairing_code_burnt"


class TooManyDevices(ChatError):
    type = "too_many_devices"


class PhoneNumberInvalid(ChatError):
    type = "phone_number_invalid"


class PhoneCodeInvalid(ChatError):
    """A phone verification code that is wrong, expired, used or burnt: nothing was verified."""

    type = "phone_code_invalid"


class PhoneTaken(ChatError):
    """The number is verified on another account."""

    type = "phone_taken"


class TooManyPhones(ChatError):
    type = "too_many_phones"


class PhoneDeliveryFailed(ChatError):
    """The code could not be sent to the number (the text-message provider refused or was away)."""

    type = "phone_delivery_failed"
