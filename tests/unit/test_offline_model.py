"""The offline model plays each agent from the request alone, in English and Indonesian."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from agents import AGENTS, Channel, ModelRequest, OfflineModel, Session, Trigger, compose
from agents.model import Content, FunctionResult
from tests.fakes.toolbox import described_toolbox

NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
# The deployment's team as main wires it (describing tools does no I/O, so no pool is needed).
TEAM = described_toolbox().team()


def request(
    agent: str,
    lines: list[str],
    *,
    channel: Channel = "text",
    trigger: Trigger = "human",
    results: list[FunctionResult] | None = None,
    speaks: bool = False,
) -> ModelRequest:
    system = compose(
        agent=AGENTS[agent],
        channel=channel,
        trigger=trigger,
        session=Session(now=NOW, time_zone=ZoneInfo("UTC")),
        team=TEAM,
        speaks=speaks,
    )
    contents = [Content(role="model" if f"{agent.title()}]" in line else "user", text=line) for line in lines]
    if results:
        contents.append(Content(role="user", results=tuple(results)))
    return ModelRequest(model="offline-1", system=system, contents=tuple(contents), tools=tuple(TEAM[agent]))


async def answer(req: ModelRequest) -> tuple[str, list[str]]:
    response = await OfflineModel().generate(request=req)
    assert response.usage.prompt_tokens > 0
    return response.text, [c.name for c in response.calls]


@pytest.mark.parametrize("text", ["turn on the bedroom light", "nyalain lampu kamar", "matikan AC dong"])
async def test_ava_hands_home_requests_to_zee_with_a_bare_tag(text: str) -> None:
    response = await OfflineModel().generate(request=request("ava", [f"[2026-11-30 03:00 Budi] {text}"]))
    assert response.text == ""
    assert [(c.name, c.args) for c in response.calls] == [("zee", {"tag": "@zee"})]


async def test_ava_is_silent_after_a_specialist_in_text_and_relays_on_a_call() -> None:
    lines = ["[2026-11-30 03:00 Budi] turn on the bedroom light"]
    done = [FunctionResult("c", "zee", {"response": "Done, the bedroom light is on."})]
    assert await answer(request("ava", lines, results=done)) == ("", [])
    spoken, calls = await answer(request("ava", lines, channel="voice", results=done))
    assert spoken == "Done, the bedroom light is on. #relieved#" and calls == []


@pytest.mark.parametrize(("text", "expected"), [("hi", "Hi! I'm Ava"), ("halo", "Hai! Aku Ava")])
async def test_ava_greets_in_the_persons_language(text: str, expected: str) -> None:
    spoken, _ = await answer(request("ava", [f"[2026-11-30 03:00 Budi] {text}"]))
    assert spoken.startswith(expected)


@pytest.mark.parametrize("text", ["okay, bye", "udahan dulu ya"])
async def test_ava_says_goodbye_with_end_on_a_call(text: str) -> None:
    spoken, _ = await answer(request("ava", [f"[2026-11-30 03:00 Budi] {text}"], channel="voice"))
    assert spoken.endswith("#affectionate# #end#")


async def test_ava_says_plainly_what_nobody_can_do_yet() -> None:
    spoken, calls = await answer(request("ava", ["[2026-11-30 03:00 Budi] book me a flight"]))
    assert "can't do that yet" in spoken and calls == []
    spoken, _ = await answer(request("ava", ["[2026-11-30 03:00 Budi] pesanin tiket pesawat dong"]))
    assert "belum bisa" in spoken


async def test_zee_lists_then_switches_then_confirms() -> None:
    lines = ["[2026-11-30 03:00 Budi] turn on the bedroom light", "[2026-11-30 03:00 Ava] @zee"]
    assert await answer(request("zee", lines, trigger="ava")) == ("", ["list_devices"])
    devices = {
        "devices": [
            {
                "id": "sbx-light-bedroom",
                "name": "Bedroom light",
                "category": "dj",
                "status": [{"code": "switch_led", "value": False}],
            },
            {
                "id": "sbx-light-living",
                "name": "Living room light",
                "category": "dj",
                "status": [{"code": "switch_led", "value": False}],
            },
        ]
    }
    listed = [FunctionResult("c1", "list_devices", devices)]
    response = await OfflineModel().generate(request=request("zee", lines, trigger="ava", results=listed))
    assert [(c.name, c.args) for c in response.calls] == [
        ("send_commands", {"device_id": "sbx-light-bedroom", "commands": [{"code": "switch_led", "value": True}]})
    ]
    sent = [*listed, FunctionResult("c2", "send_commands", {"ok": True})]
    text, calls = await answer(request("zee", lines, trigger="ava", results=sent))
    assert text == "Done: the bedroom light is on." and calls == []

    # Said aloud on a call: the same sentence, written beside the command (held until it succeeds).
    aloud = request("zee", lines, channel="voice", trigger="ava", results=listed, speaks=True)
    assert await answer(aloud) == ("Done: the bedroom light is on.", ["send_commands"])


async def test_zee_stays_silent_when_it_already_answered_the_request() -> None:
    lines = [
        "[2026-11-30 03:00 Budi] turn on the bedroom light",
        "[2026-11-30 03:00 Ava] @zee",
        "[2026-11-30 03:00 Zee] Done, the bedroom light is on.",
        "[2026-11-30 03:01 Ava] @zee",
    ]
    assert await answer(request("zee", lines, trigger="ava")) == ("", [])


async def test_a_specialist_redirects_out_of_domain_requests_to_ava() -> None:
    text, _ = await answer(request("zee", ["[2026-11-30 03:00 Budi] @zee play some jazz"]))
    assert "Ava" in text


async def test_a_yes_after_rafals_question_goes_back_to_rafal_even_after_avas_relay() -> None:
    lines = [
        "[2026-11-30 10:00 Budi] send an email to Sari saying I'll be late",
        "[2026-11-30 10:00 Ava] @rafal",
        "[2026-11-30 10:00 Rafal] Shall I send this email to sari@example.com?\nSubject: I'll be late",
        "[2026-11-30 10:00 Ava] Shall I send this email to sari@example.com?",
        "[2026-11-30 10:01 Budi] yes",
    ]
    response = await OfflineModel().generate(request=request("ava", lines))
    assert [(c.name, c.args) for c in response.calls] == [("rafal", {"tag": "@rafal"})]
    alone = await OfflineModel().generate(request=request("ava", ["[2026-11-30 10:01 Budi] yes"]))
    assert not alone.calls
