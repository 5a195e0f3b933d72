"""The product's Gemini adapter (agents.gemini) pointed at the simulated Gemini of
bench.cloudsim.gemini, for tests that run the whole server on it: one set-up, so a test
module says only how long a model call may take before the adapter gives up."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from agents import Model
from agents.gemini import GeminiModel
from bench.cloudsim.gemini import SimulatedGemini


@contextlib.asynccontextmanager
async def gemini_on(sim: SimulatedGemini, *, timeout_s: float) -> AsyncIterator[Model]:
    """A `GeminiModel` on `sim` with no retries (a failure shows at once), closed after."""
    gemini = GeminiModel(api_key="sim-key", base_url=sim.base_url, timeout_s=timeout_s, retries_max=0)
    try:
        yield gemini
    finally:
        await gemini.aclose()
