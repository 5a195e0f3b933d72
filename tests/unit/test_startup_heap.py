"""A serving process takes what startup built out of the garbage collector's sight, and
again once the speech models have loaded (`app.server.freeze_startup_heap`)."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator
from typing import Any, cast

import pytest

from app.server import Services, freeze_startup_heap


class _Loaded:
    """Stands in for Services: only the preload thread is read."""

    def __init__(self, preload: threading.Thread | None) -> None:
        self.preload = preload
        self.voice_later = None  # the doors built at startup, as a test's server does


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # this test process builds many servers; none of their objects stays frozen


async def test_what_startup_built_is_frozen_and_a_full_pass_no_longer_walks_it() -> None:
    built = [{"n": n} for n in range(50_000)]  # long-lived objects, as startup's are
    assert len(gc.get_objects()) > len(built)
    await freeze_startup_heap(cast(Services, _Loaded(preload=None)))
    assert gc.get_freeze_count() > len(built)
    assert len(gc.get_objects()) < 5_000, "what the collector still walks: only what came after"


async def test_what_the_speech_models_load_is_frozen_once_they_have_loaded() -> None:
    release = threading.Event()
    loaded: list[Any] = []

    def preload() -> None:
        release.wait(5)
        loaded.extend({"model": n} for n in range(20_000))

    thread = threading.Thread(target=preload, daemon=True)
    thread.start()
    freezing = asyncio.create_task(freeze_startup_heap(cast(Services, _Loaded(preload=thread))))
    await asyncio.sleep(0.05)
    assert not freezing.done(), "waits for the models"
    release.set()
    await asyncio.wait_for(freezing, 5)
    assert len(loaded) == 20_000
    assert len(gc.get_objects()) < 5_000, "the models' objects were frozen with the rest"
