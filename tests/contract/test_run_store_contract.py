"""The `RunStore` port's contract: `Runs` (PostgreSQL) and `MemoryRuns`."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chat import Run
from chat.runs import RunGone
from tests.contract.conftest import Stores


async def started(stores: Stores, name: str = "Budi", agent: str = "ava") -> tuple[str, Run]:
    me, _ = await stores.people.sign_in_local(name)
    origin = await stores.threads.append(me.id, author="human", text="hi", channel="text")
    run = await stores.runs.start(
        me.id,
        agent=agent,
        trigger="human",
        parent_run_id=None,
        trigger_message_id=origin.id,
        origin_message_id=origin.id,
        channel="text",
    )
    return me.id, run


async def test_a_run_starts_running_and_is_found_only_by_its_person(stores: Stores) -> None:
    me, run = await started(stores)
    other, _ = await stores.people.sign_in_local("Sari")
    assert (run.status, run.agent, run.trigger, run.model_calls, run.cost_micros) == ("running", "ava", "human", 0, 0)
    assert run.started_at.tzinfo is not None and run.finished_at is None
    assert await stores.runs.get(me, run.id) == run
    assert await stores.runs.get(other.id, run.id) is None


async def test_model_calls_add_up_and_each_is_charged_once(stores: Stores) -> None:
    me, run = await started(stores)
    at = await stores.runs.record_call(run.id, index=1, model="m-1", usage={"prompt_tokens": 100, "output_tokens": 5})
    await stores.runs.record_call(run.id, index=2, model="m-2", usage={"prompt_tokens": 50, "thinking_tokens": 7})
    assert at is not None and at.tzinfo is not None
    # Recorded again (a charge replayed from the outbox): nothing. For a run that is not
    # there: nothing, and the caller is told (so it never charges a call without a receipt).
    assert await stores.runs.record_call(run.id, index=1, model="m-1", usage={"prompt_tokens": 100}) is None
    with pytest.raises(RunGone):
        await stores.runs.record_call("run_gone", index=1, model="m-1", usage={"prompt_tokens": 1})
    # The sweep leaves a call that returned a moment ago to the turn charging it.
    assert await stores.runs.uncharged_calls(returned_before=at) == []
    assert [c.index for c in await stores.runs.uncharged_calls(returned_before=at + timedelta(microseconds=1))] == [1]
    uncharged = await stores.runs.uncharged_calls()
    assert [(c.run_id, c.index, c.person_id, c.model, c.agent) for c in uncharged] == [
        (run.id, 1, me, "m-1", "ava"),
        (run.id, 2, me, "m-2", "ava"),
    ]
    await stores.runs.record_cost(run.id, index=1, cost_micros=700)
    await stores.runs.record_cost(run.id, index=1, cost_micros=700)  # a retry charges nothing more
    assert [c.index for c in await stores.runs.uncharged_calls()] == [2]
    now = await stores.runs.get(me, run.id)
    assert now is not None
    assert (now.model_calls, now.model, now.cost_micros) == (2, "m-2", 700)
    assert now.usage == {"prompt_tokens": 150, "output_tokens": 5, "thinking_tokens": 7}


async def test_tool_calls_are_counted(stores: Stores) -> None:
    me, run = await started(stores)
    await stores.runs.record_tool(run.id, name="zee", args={"tag": "@zee"}, result={"response": "Done."})
    await stores.runs.record_tool(run.id, name="zee", args={"tag": "@zee"}, result={"response": "Done."})
    now = await stores.runs.get(me, run.id)
    assert now is not None and now.tool_calls == 2


async def test_a_run_finishes_exactly_once(stores: Stores) -> None:
    me, run = await started(stores)
    failed = await stores.runs.finish(run.id, status="failed", error_code="model_error", error_detail="no answer")
    assert (failed.status, failed.error_code, failed.error_detail) == ("failed", "model_error", "no answer")
    assert failed.finished_at is not None and failed.finished_at >= failed.started_at
    assert failed.as_json()["error"] == {"type": "model_error", "detail": "no answer"}
    # Finished again (a turn ending a run the sweep already failed): the first end stands.
    assert await stores.runs.finish(run.id, status="succeeded") == failed
    assert await stores.runs.get(me, run.id) == failed


async def test_the_runs_of_a_message_come_in_the_order_they_started(stores: Stores) -> None:
    me, ava = await started(stores)
    handoff = await stores.threads.append(me, author="ava", text="@zee", channel="text", run_id=ava.id)
    zee = await stores.runs.start(
        me,
        agent="zee",
        trigger="ava",
        parent_run_id=ava.id,
        trigger_message_id=handoff.id,
        origin_message_id=ava.origin_message_id,
        channel="text",
    )
    runs = await stores.runs.of_origin(me, ava.origin_message_id)
    assert [(r.id, r.parent_run_id) for r in runs] == [(ava.id, None), (zee.id, ava.id)]
    assert await stores.runs.of_origin(me, handoff.id) == []


async def test_runs_left_running_are_abandoned_from_inside_the_persons_turn(stores: Stores) -> None:
    me, left = await started(stores)
    sari, theirs = await started(stores, "Sari")
    async with stores.threads.turn(me, wait_s=5):
        abandoned = await stores.runs.abandon_held(me)
        assert [r.id for r in abandoned] == [left.id]
        assert await stores.runs.abandon_held(me) == [], "once"
    now = await stores.runs.get(me, left.id)
    assert now is not None and (now.status, now.error_code) == ("failed", "abandoned")
    untouched = await stores.runs.get(sari, theirs.id)
    assert untouched is not None and untouched.status == "running", "another person's run is theirs"
