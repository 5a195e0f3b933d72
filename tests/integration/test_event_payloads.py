"""What a live client hears is what the API shows: the `message`, `run.started` and
`run.finished` events, which PostgreSQL now builds in the statement that writes the row (one
round trip instead of four or five), carry exactly `as_json()` of the stored row, times
included to the microsecond."""

from __future__ import annotations

import asyncpg

from chat import EventLog, People, Runs, Threads


async def test_each_event_is_the_row_as_the_api_writes_it(pool: asyncpg.Pool) -> None:
    person, _ = await People(pool, default_time_zone="UTC").sign_in_local("Budi")
    threads, runs, log = Threads(pool), Runs(pool), EventLog(pool)

    said = await threads.append(person.id, author="human", text="nyalakan lampu", channel="voice", client_id="c-1")
    run = await runs.start(
        person.id,
        agent="ava",
        trigger="human",
        parent_run_id=None,
        trigger_message_id=said.id,
        origin_message_id=said.id,
        channel="voice",
    )
    await runs.record_call(run.id, index=1, model="offline", usage={"input_tokens": 12, "output_tokens": 3})
    await runs.record_cost(run.id, index=1, cost_micros=246)
    reply = await threads.append(
        person.id, author="ava", text="Sudah, lampunya menyala.", channel="voice", run_id=run.id, emotions=["happy"]
    )
    failed = await runs.finish(run.id, status="failed", error_code="model_error", error_detail="no answer")

    events = await log.since(person.id, 0)
    assert [(e.type, e.data) for e in events] == [
        ("message", said.as_json()),
        ("run.started", run.as_json()),
        ("message", reply.as_json()),
        ("run.finished", failed.as_json()),
    ]
    finished = events[-1].data
    assert finished["usage"] == {"input_tokens": 12, "output_tokens": 3} and finished["cost_micros"] == 246
    assert finished["error"] == {"type": "model_error", "detail": "no answer"}
    assert finished["finished_at"] is not None and events[1].data["finished_at"] is None


async def test_an_append_for_a_person_without_a_thread_writes_nothing(pool: asyncpg.Pool) -> None:
    threads, log = Threads(pool), EventLog(pool)
    try:
        await threads.append("usr_nobody", author="human", text="hello", channel="text")
    except AssertionError:
        pass
    else:
        raise AssertionError("an append without a thread must not succeed")
    assert await log.since("usr_nobody", 0) == []
