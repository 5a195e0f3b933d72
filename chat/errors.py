"""The chat domain's errors. Each has a stable problem `type` and an HTTP status that
only the edge (`main.py`'s exception handlers) turns into a response."""

from __future__ import annotations


class ChatError(Exception):
    """Base of every error the chat domain raises on purpose; `str()` is safe to show."""

    type = "chat_error"
    status = 400
    title = "Request failed"


class Unauthorized(ChatError):
    type = "unauthorized"
    status = 401
    title = "Sign in first"


class NotFound(ChatError):
    type = "not_found"
    status = 404
    title = "Not found"


class MessageBlank(ChatError):
    type = "message_blank"
    status = 422
    title = "The message is empty"


class MessageTooLong(ChatError):
    type = "message_too_long"
    status = 422
    title = "The message is too long"


class TimeZoneInvalid(ChatError):
    type = "time_zone_invalid"
    status = 400
    title = "Unknown time zone"


class ThreadBusy(ChatError):
    type = "thread_busy"
    status = 503
    title = "Your thread is busy with another request"


class TooManyStreams(ChatError):
    type = "too_many_streams"
    status = 429
    title = "Too many live connections"


class SignInDisabled(ChatError):
    type = "local_sign_in_disabled"
    status = 404
    title = "Local sign-in is not available"
