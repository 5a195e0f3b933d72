"""Ava's offline memory: she looks up questions about the person with `recall`, answers from
what it returned (in the person's language), acknowledges facts she is told, and does none
of it when the deployment gave her no `recall` tool."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents import AGENTS, Channel, ModelRequest, OfflineModel, Session, compose
from agents.knowledge import RECALL
from agents.model import Content, FunctionResult

NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
KNOWN = {
    "person": "Budi",
    "facts": [
        {"text": "Budi's favourite food is soto", "relation": "favourite", "object": "soto", "since": "2026-11-30"},
        {"text": "Budi lives in Bandung", "relation": "lives_in", "object": "Bandung", "since": "2026-11-29"},
    ],
}


def ask(
    text: str, *, recall: dict[str, Any] | None = None, tools: bool = True, channel: Channel = "text"
) -> ModelRequest:
    system = compose(
        agent=AGENTS["ava"], channel=channel, trigger="human", session=Session(now=NOW, time_zone=ZoneInfo("UTC"))
    )
    contents = [Content(role="user", text=f"[2026-11-30 03:00 Budi] {text}")]
    if recall is not None:
        contents.append(Content(role="user", results=(FunctionResult("c", "recall", recall),)))
    return ModelRequest(model="offline-1", system=system, contents=tuple(contents), tools=(RECALL,) if tools else ())


async def reply(req: ModelRequest) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    response = await OfflineModel().generate(request=req)
    return response.text, [(c.name, c.args) for c in response.calls]


@pytest.mark.parametrize(
    ("question", "query"),
    [
        ("what's my favourite food?", "favourite food"),
        ("makanan favoritku apa?", "favourite food"),
        ("what should I eat tonight?", "favourite food"),
        ("what do you know about me?", ""),
        ("kamu tahu apa tentang aku?", ""),
    ],
)
async def test_questions_about_the_person_are_looked_up(question: str, query: str) -> None:
    assert await reply(ask(question)) == ("", [("recall", {"query": query})])


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("what's my favourite food?", "Your favourite food is soto."),
        ("makanan favoritku apa?", "Makanan favoritmu soto."),
        ("what should I eat tonight?", "How about soto? It's your favourite."),
        ("what do you know about me?", "Here's what I know: your favourite food is soto; you live in Bandung."),
    ],
)
async def test_answers_come_from_what_recall_returned(question: str, answer: str) -> None:
    assert await reply(ask(question, recall=KNOWN)) == (answer, [])


@pytest.mark.parametrize(
    ("question", "query", "answer"),
    [
        ("where do I live?", "lives", "You live in Bandung."),
        ("aku tinggal di mana?", "lives", "Kamu tinggal di Bandung."),
        ("kamu tahu apa tentang aku?", "", "Yang aku tahu: makanan favoritmu soto; kamu tinggal di Bandung."),
        (
            "what's my favourite song?",
            "favourite song",
            "I don't know your favourite song yet. Tell me and I'll remember.",
        ),
    ],
)
async def test_other_questions_about_the_person(question: str, query: str, answer: str) -> None:
    assert await reply(ask(question)) == ("", [("recall", {"query": query})])
    found = {"person": "Budi", "facts": KNOWN["facts"][1:]} if query == "lives" else KNOWN
    assert await reply(ask(question, recall=found)) == (answer, [])


async def test_an_empty_recall_is_admitted_and_a_call_gets_an_emotion() -> None:
    text, _ = await reply(ask("what's my favourite food?", recall={"person": "Budi", "facts": []}, channel="voice"))
    assert text == "I don't know that about you yet. Tell me and I'll remember. #affectionate#"


async def test_a_stated_fact_is_acknowledged() -> None:
    assert await reply(ask("my favourite food is rendang")) == ("Got it, I'll remember that.", [])
    assert await reply(ask("aku alergi udang")) == ("Oke, aku ingat ya.", [])


async def test_without_recall_she_neither_looks_up_nor_promises() -> None:
    text, calls = await reply(ask("what's my favourite food?", tools=False))
    assert calls == [] and "remember" not in text
    text, calls = await reply(ask("my favourite food is rendang", tools=False))
    assert calls == [] and "remember" not in text


@pytest.mark.parametrize("request_text", ["turn on my favourite lamp", "turn on the bedroom light"])
async def test_home_requests_are_not_memorys(request_text: str) -> None:
    assert await reply(ask(request_text)) == await reply(ask(request_text, tools=False))
