"""Vendor errors as hints the agent can turn into a sentence (docs/agents.md#tools-and-integrations).

Every adapter, live or sandbox, raises these instead of its vendor's errors, so the
tools and the model see one vocabulary: "not linked", "token expired", "rate limited",
"premium required", "no active device", "not found", "not allowed", "input invalid". Each
message is written for the model: what went wrong and what to do next. A rate limit carries
the wait the vendor asked for, in whole seconds or minutes, since the model repeats it to
the person (docs/integrations.md).
"""

from __future__ import annotations

import math

from agents.errors import ToolError


class NotLinked(ToolError):
    type = "not_linked"


class TokenExpired(ToolError):
    type = "token_expired"


class RateLimited(ToolError):
    type = "rate_limited"
    retry_after_s: int | None = None  # the vendor's own wait, when it gave one


class PremiumRequired(ToolError):
    type = "premium_required"


class NoActiveDevice(ToolError):
    type = "no_active_device"


class NotFound(ToolError):
    type = "not_found"


class NotAllowed(ToolError):
    type = "not_allowed"


class InputInvalid(ToolError):
    type = "input_invalid"


class VendorUnavailable(ToolError):
    type = "vendor_unavailable"


def not_linked(service: str) -> NotLinked:
    return NotLinked(
        f"No {service} account is linked, so this cannot reach it. "
        "It can be linked in the app's integrations page; do not retry."
    )


def token_expired(service: str) -> TokenExpired:
    return TokenExpired(
        f"the link to the {service} account has expired or was revoked. "
        "It needs linking again in the app's integrations page; do not retry."
    )


RETRY_AFTER_MAX_S = 24 * 3600  # a longer wait than a day is not worth repeating to anyone


def retry_after_s(header: str | None) -> int | None:
    """A `Retry-After` header's wait in whole seconds, or None if absent or not a number of
    seconds (the vendors here send seconds; an HTTP date is read as no hint)."""
    if header is None or not header.strip().isdigit():
        return None
    return min(int(header.strip()), RETRY_AFTER_MAX_S)


def wait_words(seconds: int | None) -> str:
    """The wait as said: "in 30 seconds" up to 90, else "in 2 minutes", rounded up, never shortened."""
    if seconds is None:
        return "in a minute"
    if seconds <= 90:
        seconds = max(1, seconds)
        return f"in {seconds} second{'s' if seconds != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    return f"in {minutes} minutes"


def rate_limited(service: str, *, retry_after_s: int | None = None) -> RateLimited:
    error = RateLimited(f"{service} is asking us to slow down; try again {wait_words(retry_after_s)}.")
    error.retry_after_s = retry_after_s
    return error


def unavailable(service: str) -> VendorUnavailable:
    return VendorUnavailable(f"{service} did not answer properly just now; try again shortly.")
