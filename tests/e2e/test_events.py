"""Live events over SSE through a real uvicorn: the order a turn's events arrive in,
every one of a person's streams receiving all of them (they share their reads),
resuming with Last-Event-ID, the per-person stream cap, and events written by another
server process reaching this one's clients through LISTEN/NOTIFY."""

from __future__ import annotations

import asyncio

import httpx

from settings import Settings
from tests.conftest import App
from tests.fakes.servers import collect, read_events, serve_in_process, serve_subprocess


async def test_a_turn_streams_its_messages_and_runs_in_order(app: App) -> None:
    headers = await app.sign_in()
    async with serve_in_process(app.app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        async with client.stream("GET", "/v1/events", headers=headers) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = read_events(stream)
            posted = asyncio.create_task(
                client.post("/v1/messages", json={"text": "turn on the bedroom light"}, headers=headers)
            )
            seen = await collect(events, "message:zee")
            seen += await collect(events, "run.finished:ava")
            assert (await posted).status_code == 200
    charges = [e.data["balance_micros"] for e in seen if e.type == "wallet.changed"]
    assert len(charges) == 1, "the turn's charges are announced once, after the last, before the turn ends"
    assert seen[-2].type == "wallet.changed"
    kinds = [(e.type, e.data.get("author") or e.data.get("agent")) for e in seen if e.type != "wallet.changed"]
    assert kinds == [
        ("message", "human"),
        ("run.started", "ava"),
        ("message", "ava"),
        ("run.started", "zee"),
        ("message", "zee"),
        ("run.finished", "zee"),
        ("run.finished", "ava"),
    ]
    ids = [e.id or 0 for e in seen]
    assert ids == sorted(ids) and 0 not in ids


async def test_every_stream_of_a_person_receives_every_event_of_two_turns(app: App) -> None:
    headers = await app.sign_in()
    async with serve_in_process(app.app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        opened = [client.stream("GET", "/v1/events", headers=headers) for _ in range(3)]
        streams = [await s.__aenter__() for s in opened]
        try:
            readers = [read_events(stream) for stream in streams]
            for text in ("turn on the bedroom light", "hi"):
                answered = await client.post("/v1/messages", json={"text": text}, headers=headers)
                assert answered.status_code == 200
            seen = []
            for events in readers:
                got = await collect(events, "run.finished:zee")
                got += await collect(events, "run.finished:ava")
                got += await collect(events, "run.finished:ava")
                seen.append([(e.id, e.type, e.data) for e in got])
        finally:
            for s in opened:
                await s.__aexit__(None, None, None)
    assert seen[0] == seen[1] == seen[2]
    assert [data["text"] for _, kind, data in seen[0] if kind == "message" and data["author"] == "human"] == [
        "turn on the bedroom light",
        "hi",
    ]
    ids = [event_id or 0 for event_id, _, _ in seen[0]]
    assert ids == sorted(set(ids)) and 0 not in ids


async def test_a_client_resumes_from_last_event_id(app: App) -> None:
    headers = await app.sign_in()
    async with serve_in_process(app.app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        async with client.stream("GET", "/v1/events", headers=headers) as stream:
            events = read_events(stream)
            await client.post("/v1/messages", json={"text": "hi"}, headers=headers)
            first = await collect(events, "run.finished:ava")
        last_id = first[-1].id
        # Offline for a while: another message is answered meanwhile.
        await client.post("/v1/messages", json={"text": "@zee status of the AC"}, headers=headers)
        async with client.stream("GET", "/v1/events", headers={**headers, "Last-Event-ID": str(last_id)}) as stream:
            missed = await collect(read_events(stream), "run.finished:zee")
    assert [e.type for e in missed if e.type != "wallet.changed"] == [
        "message",
        "run.started",
        "message",
        "run.finished",
    ]
    assert missed[0].data["text"] == "@zee status of the AC"
    assert all(e.id is not None and last_id is not None and e.id > last_id for e in missed)


async def test_events_accept_a_token_in_the_query_for_browsers(app: App) -> None:
    headers = await app.sign_in()
    token = headers["Authorization"].removeprefix("Bearer ")
    async with serve_in_process(app.app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        async with client.stream("GET", "/v1/events", params={"access_token": token}) as stream:
            assert stream.status_code == 200
            events = read_events(stream)
            await client.post("/v1/messages", json={"text": "hi"}, headers=headers)
            assert (await collect(events, "message:ava"))[0].data["text"] == "hi"
        refused = await client.get("/v1/events", params={"access_token": "forged"})
        assert refused.status_code == 401


async def test_open_streams_per_person_are_capped(app: App) -> None:
    headers = await app.sign_in()
    cap = app.services.settings.sse_streams_per_person_max
    async with serve_in_process(app.app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        streams = [client.stream("GET", "/v1/events", headers=headers) for _ in range(cap)]
        opened = [await s.__aenter__() for s in streams]
        try:
            assert all(r.status_code == 200 for r in opened)
            await asyncio.sleep(0.2)
            extra = await client.get("/v1/events", headers=headers)
            assert extra.status_code == 429
            assert extra.json()["type"] == "too_many_streams"
            other = await app.sign_in("Someone Else")
            async with client.stream("GET", "/v1/events", headers=other) as theirs:
                assert theirs.status_code == 200
        finally:
            for s in streams:
                await s.__aexit__(None, None, None)


async def test_a_message_posted_through_process_a_reaches_an_sse_client_of_process_b(settings: Settings) -> None:
    assert settings.database_url and settings.session_secret
    env = {
        "DATABASE_URL": settings.database_url,
        "SESSION_SECRET": settings.session_secret.get_secret_value(),
        "AVAGENC_HOME": str(settings.avagenc_home),
    }
    with serve_subprocess(env) as a_url, serve_subprocess(env) as b_url:
        async with httpx.AsyncClient(timeout=30) as client:
            signed = (await client.post(f"{a_url}/v1/auth/local", json={"name": "Budi"})).json()
            headers = {"Authorization": f"Bearer {signed['token']}"}
            async with client.stream("GET", f"{b_url}/v1/events", headers=headers) as stream:
                events = read_events(stream)
                await asyncio.sleep(0.3)
                posted = await client.post(
                    f"{a_url}/v1/messages", json={"text": "turn on the bedroom light"}, headers=headers
                )
                assert posted.status_code == 200
                seen = await collect(events, "message:zee")
    assert [e.data.get("author") for e in seen if e.type == "message"] == ["human", "ava", "zee"]
