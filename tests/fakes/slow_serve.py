"""`avagenc serve` with a slow model, for shutdown tests: the real command's serve path
(signals, graceful stop, closing the embedded PostgreSQL), with every model call taking
SLOW_MODEL_S seconds so a turn is reliably in flight when the test sends its signal.

Run as `python -m tests.fakes.slow_serve --port N`, with settings from the environment
exactly like `avagenc serve`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from agents import ModelRequest, ModelResponse, Usage
from cli import serve
from settings import Settings


class SlowModel:
    """Answers every call with the same short text, after `delay_s`."""

    def __init__(self, delay_s: float) -> None:
        self._delay_s = delay_s

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(self._delay_s)
        return ModelResponse("Sorry to keep you waiting: here I am.", (), Usage(prompt_tokens=50, output_tokens=9))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    model = SlowModel(float(os.environ.get("SLOW_MODEL_S", "3")))
    asyncio.run(serve(Settings(port=args.port), model=model))
    sys.exit(0)


if __name__ == "__main__":
    main()
