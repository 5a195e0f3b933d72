"""The call clock on a clock moved by hand: the idle check at idle/2, the idle hang-up at
idle (the person speaking resets it; Ava's own check does not), and the length limit
however lively the call; the idle check is a small trace of its own."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents import SpokenReply
from chat import Person
from telemetry import span
from tests.fakes.clock import ManualClock
from voice.calls import Call, CallClock, CallLimits


def started(limits: CallLimits) -> tuple[Call, CallClock, ManualClock, list[SpokenReply]]:
    said: list[SpokenReply] = []

    async def speak(reply: SpokenReply) -> None:
        said.append(reply)

    clock = ManualClock()
    call = Call(id="call_1", person=Person("usr_1", "Budi", "UTC", datetime.now(UTC)), channel="voice")
    return call, CallClock(call, limits, speak=speak, clock=clock), clock, said


async def test_silence_is_checked_on_then_hung_up_and_only_the_person_resets_it() -> None:
    call, limits_clock, clock, said = started(CallLimits(idle_s=4.0))
    task = asyncio.create_task(limits_clock.run())
    for _ in range(3):
        await clock.advance(0.5)
    assert said == []
    limits_clock.activity()  # the person speaks at 1.5 s: the silence starts again
    for _ in range(3):
        await clock.advance(0.5)
    assert said == []
    await clock.advance(0.5)  # 2 s of silence since the person spoke
    assert [r.text for r in said] == ["Are you still there?"] and not said[0].end_call
    limits_clock.activity(by_person=False)  # Ava asking is no answer
    for _ in range(4):
        await clock.advance(0.5)
    assert call.end_reason == "idle" and said[-1].end_call
    await asyncio.wait_for(task, 1)


async def test_a_lively_call_still_ends_at_its_length_limit() -> None:
    call, limits_clock, clock, said = started(CallLimits(duration_max_s=3.0, idle_s=2.0))
    task = asyncio.create_task(limits_clock.run())
    for _ in range(5):
        limits_clock.activity()
        await clock.advance(0.5)
    assert call.end_reason is None and said == []
    limits_clock.activity()
    await clock.advance(0.5)
    assert call.end_reason == "max_duration" and said[-1].end_call
    await asyncio.wait_for(task, 1)


async def test_the_idle_check_is_a_small_trace_of_its_own(spans: InMemorySpanExporter) -> None:
    call, _, clock, _ = started(CallLimits(idle_s=2.0))
    asked_within: list[str] = []

    async def speak(reply: SpokenReply) -> None:
        # What the call's `say` opens its span under (voice.session.CallSession.say).
        with span("say"):
            asked_within.append(reply.text)

    limits_clock = CallClock(call, CallLimits(idle_s=2.0), speak=speak, clock=clock)
    task = asyncio.create_task(limits_clock.run())
    for _ in range(2):
        await clock.advance(0.5)
    assert asked_within == ["Are you still there?"]
    call.end_reason = "client_gone"
    await clock.advance(0.5)
    await asyncio.wait_for(task, 1)

    finished = {s.name: s for s in spans.get_finished_spans()}
    idle, say = finished["idle prompt"], finished["say"]
    assert idle.parent is None and dict(idle.attributes or {}) == {"avagenc.call": "call_1", "avagenc.channel": "voice"}
    assert say.parent is not None and say.parent.span_id == idle.context.span_id
