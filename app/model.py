"""Building the model port: Gemini with a key, the offline model without, or a test's own.

The SDK is imported only when Gemini is chosen, so a process on the offline model never
loads it; a model built here is closed with the stack, a given one is left to its owner.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from agents import Model, OfflineModel
from settings import Settings


def choose_model(settings: Settings) -> Model:
    if settings.gemini_api_key is not None:
        from agents.gemini import GeminiModel  # the SDK loads only when it is used

        return GeminiModel(
            api_key=settings.gemini_api_key.get_secret_value(),
            timeout_s=settings.gemini_timeout_s,
            retries_max=settings.gemini_retries_max,
            base_url=settings.gemini_base_url,
        )
    return OfflineModel()


def build_model(settings: Settings, stack: contextlib.AsyncExitStack, model: Model | None) -> Model:
    """The model given (a test's, which its owner closes), or the configured one, closed here."""
    if model is not None:
        return model
    chosen = choose_model(settings)
    aclose: Callable[[], Awaitable[None]] | None = getattr(chosen, "aclose", None)
    if aclose is not None:
        stack.push_async_callback(aclose)
    return chosen
