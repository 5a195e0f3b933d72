"""The call doors loading after a start give way to text requests (app.voice.GivingWay,
web.doors.DoorsStarting): the loading thread stops before its next module while a text
request is answered and goes on once it is; a call waiting for the doors, or the bound on
the stops, ends the stopping; live-event streams and calls are not counted as text."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from app.voice import GivingWay, import_giving_way
from web.doors import DoorsStarting


@pytest.fixture
def package(tmp_path: Path) -> Iterator[str]:
    """A package of two modules, the first importing the second, importable once."""
    name = f"giving_way_{tmp_path.name.replace('-', '_')}"
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import inner\n")
    (folder / "inner.py").write_text("VALUE = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield name
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def _loading(name: str, giving_way: GivingWay) -> threading.Thread:
    thread = threading.Thread(target=import_giving_way, args=(name, giving_way), daemon=True)
    thread.start()
    return thread


async def _until(condition: object) -> None:
    async with asyncio.timeout(30):  # a hang fails the test; nothing here is timed
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.005)


async def test_the_loading_stops_while_a_text_request_is_answered_and_goes_on_after(package: str) -> None:
    giving_way = GivingWay(wait_s=60, total_s=60)
    with giving_way.serving():
        thread = _loading(package, giving_way)
        await _until(lambda: giving_way.waiting)
        assert package not in sys.modules, "it stopped before importing anything"
    await _until(lambda: not thread.is_alive())
    assert f"{package}.inner" in sys.modules
    assert giving_way.stops == 1


async def test_a_call_waiting_for_the_doors_ends_the_stops(package: str) -> None:
    giving_way = GivingWay(wait_s=60, total_s=60)
    with giving_way.serving():
        thread = _loading(package, giving_way)
        await _until(lambda: giving_way.waiting)
        giving_way.hurry()
        await _until(lambda: not thread.is_alive())  # while the text request still runs
        assert f"{package}.inner" in sys.modules


async def test_the_stops_are_bounded_so_a_request_that_never_ends_holds_nothing(package: str) -> None:
    giving_way = GivingWay(wait_s=0.01, total_s=0.02)
    with giving_way.serving():
        thread = _loading(package, giving_way)
        await _until(lambda: not thread.is_alive())
    assert f"{package}.inner" in sys.modules
    await giving_way.quiet_moment()  # the bound spent: the loop's parts do not wait either


async def test_nothing_stops_without_a_text_request(package: str) -> None:
    giving_way = GivingWay(wait_s=60, total_s=60)
    thread = _loading(package, giving_way)
    await _until(lambda: not thread.is_alive())
    assert giving_way.stops == 0
    await giving_way.quiet_moment()


async def test_the_loop_s_own_loading_work_waits_for_a_moment_without_a_request() -> None:
    giving_way = GivingWay(wait_s=60, total_s=60)
    request = giving_way.serving()
    request.__enter__()
    moment = asyncio.create_task(giving_way.quiet_moment())
    await asyncio.sleep(0.05)
    assert not moment.done()
    request.__exit__(None, None, None)
    await asyncio.wait_for(moment, 30)


def _app(giving_way: GivingWay, seen: list[int], release: asyncio.Event) -> FastAPI:
    app = FastAPI()

    @app.get("/v1/me")
    async def me() -> dict[str, int]:
        seen.append(giving_way.in_flight)
        await release.wait()
        return {"in_flight": giving_way.in_flight}

    app.add_middleware(
        DoorsStarting,
        ready=asyncio.Event(),
        open_=lambda: False,
        wait_s=0.01,
        serving=giving_way.serving,
        hurry=giving_way.hurry,
    )
    return app


async def test_the_doors_middleware_counts_text_requests_not_streams_and_a_call_hurries() -> None:
    giving_way = GivingWay(wait_s=60, total_s=60)
    seen: list[int] = []
    release = asyncio.Event()
    app = _app(giving_way, seen, release)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        text = asyncio.create_task(client.get("/v1/me"))
        await _until(lambda: seen)
        assert giving_way.in_flight == 1
        stream = asyncio.create_task(client.get("/v1/me", headers={"Accept": "text/event-stream"}))
        await _until(lambda: len(seen) == 2)
        assert seen == [1, 1], "a live-event stream is not counted"
        release.set()
        assert (await text).status_code == 200 and (await stream).status_code == 200
        assert giving_way.in_flight == 0
        call = await client.post("/v1/voice/webrtc/offer")  # no door came: told to retry
        assert call.status_code == 503
    with giving_way.serving():
        thread = threading.Thread(target=giving_way.stop)
        thread.start()
        thread.join(30)
        assert not thread.is_alive() and giving_way.stops == 0, "the call ended the stops"


async def test_once_loading_is_over_requests_are_not_counted() -> None:
    giving_way = GivingWay()
    giving_way.finish()
    with giving_way.serving():
        assert giving_way.in_flight == 0
