"""One spoken-or-typed request is one trace: the turn, its routing, Ava's run, her model
calls, the tool that hands on to Zee, Zee's run and his tool call, each a child of the one
before (telemetry/traces.py), recorded by the SDK's in-memory exporter (the `spans` fixture)."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import App


def _parent(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> ReadableSpan | None:
    return by_id.get(span.parent.span_id) if span.parent is not None else None


async def test_a_turn_is_one_trace_from_routing_to_the_specialists_tool(app: App, spans: InMemorySpanExporter) -> None:
    headers = await app.sign_in()
    posted = await app.say(headers, "turn on the bedroom light")
    assert posted.status_code == 200

    finished = [s for s in spans.get_finished_spans() if s.name != "POST /v1/messages"]
    turn = next(s for s in finished if s.name == "turn")
    in_turn = [s for s in finished if s.context.trace_id == turn.context.trace_id]
    by_id = {s.context.span_id: s for s in in_turn}
    names = [s.name for s in in_turn]
    assert {"route", "run ava", "run zee", "model call", "tool send_commands"} <= set(names), names
    assert turn.attributes is not None and turn.attributes["avagenc.channel"] == "text"

    route = next(s for s in in_turn if s.name == "route")
    assert _parent(route, by_id) is turn
    assert route.attributes is not None and route.attributes["avagenc.agent"] == "ava"
    ava = next(s for s in in_turn if s.name == "run ava")
    assert _parent(ava, by_id) is turn
    zee = next(s for s in in_turn if s.name == "run zee")
    handoff = _parent(zee, by_id)
    assert handoff is not None and handoff.name.startswith("tool ") and _parent(handoff, by_id) is ava
    assert zee.attributes is not None and zee.attributes["avagenc.trigger"] == "ava"
    command = next(s for s in in_turn if s.name == "tool send_commands")
    assert _parent(command, by_id) is zee
    calls = [s for s in in_turn if s.name == "model call"]
    assert {_parent(c, by_id) for c in calls} == {ava, zee}
    # Each model call's charge, written after it on the turn's books, sits under its run.
    charges = [s for s in in_turn if s.name == "charge"]
    assert len(charges) == len(calls)
    assert {_parent(c, by_id) for c in charges} == {ava, zee}
    # Ids and names only: nothing anyone said is an attribute.
    assert not any("bedroom" in str(v) for s in in_turn for v in (s.attributes or {}).values())
