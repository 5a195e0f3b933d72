"""Vendor errors as hints the agent can turn into a sentence (docs/agents.md#tools-and-integrations).

Every adapter, live or sandbox, raises these instead of its vendor's errors, so the
tools and the model see one vocabulary: "not linked", "token expired", "rate limited",
"premium required", "no active device", "not found", "input invalid". Each message is
written for the model: what went wrong and what to do next.
"""

from __future__ import annotations

from agents.errors import ToolError


class NotLinked(ToolError):
    type = "not_linked"


class TokenExpired(ToolError):
    type = "token_expired"


class RateLimited(ToolError):
    type = "rate_limited"


class PremiumRequired(ToolError):
    type = "premium_required"


class NoActiveDevice(ToolError):
    type = "no_active_device"


class NotFound(ToolError):
    type = "not_found"


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


def rate_limited(service: str) -> RateLimited:
    return RateLimited(f"{service} is asking us to slow down; try again in a minute.")


def unavailable(service: str) -> VendorUnavailable:
    return VendorUnavailable(f"{service} did not answer properly just now; try again shortly.")
