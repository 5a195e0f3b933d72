"""A fifth specialist joins the room from one package and nothing else
(docs/adding-an-agent.md): the package is written into a temporary folder, named in
AGENT_PACKAGES, and a person talks to it through the text door on the offline model.

What must follow from the package alone: `@weather` routes to it; Ava hands a weather
question to it without a mention; its tool runs on its sandbox (a table of its own, from
its own migration); its answer lands in the thread; its runs are charged to the wallet;
and Ava's team layer and the room name it.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents import AGENTS, current_roster
from app.server import running
from settings import Settings
from tests.conftest import App

_PACKAGE = "weather_toy"

_FILES = {
    "__init__.py": '''
        """A toy weather specialist, written by a test to show what a new agent needs."""
    ''',
    "persona.txt": """
        You are Weather, the group's weather specialist. You read forecasts with your get_forecast tool.
        {tools: get_forecast} Always call get_forecast before saying anything about the weather.
    """,
    "sql/0001_forecasts.sql": """
        CREATE TABLE weather_toy_forecasts (
            city      TEXT PRIMARY KEY,
            forecast  TEXT NOT NULL
        );
        INSERT INTO weather_toy_forecasts VALUES ('jakarta', 'rain at four'), ('bandung', 'cool and cloudy');
    """,
    "agent.py": '''
        """Weather, as the room knows it."""

        from __future__ import annotations

        import re
        from typing import Any, Protocol

        import asyncpg

        from agents import Tool, ToolSpec
        from agents.capabilities import Capability, words
        from agents.offline.situation import Situation, call
        from agents.offline.skillset import SkillSet
        from agents.roster import AgentSpec
        from agents.specialist import Port, Specialist
        from agents.tools import object_schema


        class Forecasts(Protocol):
            async def forecast(self, *, city: str) -> str | None: ...


        class SandboxForecasts:
            def __init__(self, pool: asyncpg.Pool) -> None:
                self._pool = pool

            async def forecast(self, *, city: str) -> str | None:
                value = await self._pool.fetchval(
                    "SELECT forecast FROM weather_toy_forecasts WHERE city = $1", city.lower()
                )
                return str(value) if value is not None else None


        def tools(choose: Any, context: Any, pending: Any) -> list[Tool]:
            async def get_forecast(args: dict[str, Any]) -> dict[str, Any]:
                account = await choose()
                found = await account.port.forecast(city=str(args.get("city", "")))
                return {"forecast": found, "account": account.kind}

            spec = ToolSpec(
                "get_forecast",
                "Read the weather forecast for a city.",
                object_schema({"city": {"type": "string"}}, ("city",)),
            )
            return [Tool(spec, get_forecast)]


        _CITY = re.compile(r"\\bin ([A-Za-z]+)")


        def claims(clause: str) -> bool:
            return bool(re.search(r"\\b(weather|forecast|rain)\\b", clause, re.IGNORECASE))


        def forecast_turn(s: Situation) -> tuple[str, list[Any]] | None:
            result = s.last_result("get_forecast")
            if result is None:
                city = _CITY.search(s.request)
                return "", [call("get_forecast", {"city": city.group(1) if city else "Jakarta"})]
            return f"The forecast: {result.get('forecast') or 'unknown'} (sandbox).", []


        SPECIALIST: Specialist[Forecasts] = Specialist(
            agent=AgentSpec("weather", "Weather", "specialist", "weather", "Weather specialist: forecasts."),
            capabilities=(
                Capability(
                    "forecasts",
                    words(r"\\b(reads? (the )?forecasts?)\\b"),
                    frozenset({"get_forecast"}),
                    "read the forecast",
                    "baca prakiraan cuaca",
                ),
            ),
            port=Port(kind="weather", sandbox=SandboxForecasts),
            tools=tools,
            offline=SkillSet(
                claims=claims,
                skills=(forecast_turn,),
                not_yet=("I can't read forecasts yet.", "Aku belum bisa baca prakiraan cuaca."),
            ),
        )
    ''',
}


@pytest.fixture
def toy_package(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "packages"
    for name, text in _FILES.items():
        path = root / _PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).strip() + "\n")
    sys.path.insert(0, str(root))
    try:
        yield _PACKAGE
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m == _PACKAGE or m.startswith(_PACKAGE + ".")]:
            del sys.modules[module]


@pytest.fixture
async def weather_app(settings: Settings, toy_package: str) -> AsyncIterator[App]:
    with_toy = settings.model_copy(update={"agent_packages": [*settings.agent_packages, toy_package]})
    async with running(with_toy) as (services, fastapi_app):
        harness = App(services, fastapi_app)
        try:
            yield harness
        finally:
            await harness.client.aclose()
    assert "weather" not in AGENTS, "the room is as it was once the server has stopped"


async def _turn(app: App, headers: dict[str, str], text: str) -> dict[str, Any]:
    response = await app.say(headers, text)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert all(r["status"] == "succeeded" for r in body["runs"]), body["runs"]
    return body


async def _balance(app: App, headers: dict[str, str]) -> int:
    response = await app.client.get("/v1/wallet", headers=headers)
    assert response.status_code == 200, response.text
    return int(response.json()["balance_micros"])


async def test_a_mention_reaches_the_new_specialist_and_its_tool_reads_its_own_table(weather_app: App) -> None:
    headers = await weather_app.sign_in("Sari")
    granted = await _balance(weather_app, headers)
    body = await _turn(weather_app, headers, "@weather what's the forecast in Bandung?")
    assert [r["agent"] for r in body["runs"]] == ["weather"]
    assert body["runs"][0]["tool_calls"] == 1
    replies = [m["text"] for m in body["messages"] if m["author"] == "weather"]
    assert replies == ["The forecast: cool and cloudy (sandbox)."]
    assert body["runs"][0]["cost_micros"] > 0
    for _ in range(50):  # the charge is booked beside the reply
        if await _balance(weather_app, headers) < granted:
            break
        await asyncio.sleep(0.1)
    assert await _balance(weather_app, headers) == granted - body["runs"][0]["cost_micros"]


async def test_ava_hands_a_weather_question_on_without_a_mention(weather_app: App) -> None:
    headers = await weather_app.sign_in("Budi")
    body = await _turn(weather_app, headers, "will it rain in Jakarta?")
    assert [(r["agent"], r["trigger"]) for r in body["runs"]] == [("ava", "human"), ("weather", "ava")]
    authors = [(m["author"], m["text"]) for m in body["messages"]]
    assert ("ava", "@weather") in authors
    assert ("weather", "The forecast: rain at four (sandbox).") in authors


async def test_the_room_and_the_team_name_the_new_specialist(weather_app: App) -> None:
    from agents.instructions import room_layer
    from agents.team import team_layer

    assert "Weather (weather)" in room_layer(current_roster())
    team = weather_app.services.toolbox.team()
    assert [s.name for s in team["weather"]] == ["get_forecast"]
    assert "- Weather (weather): read the forecast. Tools: get_forecast." in team_layer(team)
    assert "weather" in {s.name for s in team["ava"]}, "Ava has a handoff tool for it"


async def test_the_recogniser_expects_the_new_specialists_name(weather_app: App) -> None:
    """Every call's recogniser is prompted with the room's names (voice/vocabulary.py), read
    from the roster when the call starts: the new specialist's name is among them."""
    from voice.engines.whisper import WhisperSTTService

    stt = weather_app.services.voice.engines.stt()
    assert isinstance(stt, WhisperSTTService)
    team = stt.prompt.split(".")[0]
    assert team == "Ava, Zee, Yori, Rafal and Weather"
