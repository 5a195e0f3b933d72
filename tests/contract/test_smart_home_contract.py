"""The `SmartHome` port's contract, run against each implementation. Today that is the
sandbox; the Tuya adapter joins the parameter list when it arrives."""

from __future__ import annotations

import asyncpg
import pytest

from agents import Command, SandboxHome, SmartHome
from agents.zee.home import CommandInvalid, DeviceNotFound


@pytest.fixture(params=["sandbox"])
async def home(request: pytest.FixtureRequest, pool: asyncpg.Pool) -> SmartHome:
    assert request.param == "sandbox"
    return SandboxHome(pool)


async def test_a_home_lists_devices_with_status(home: SmartHome) -> None:
    devices = await home.list_devices(person_id="usr_1")
    assert devices
    assert len({d.id for d in devices}) == len(devices)
    assert all(d.name and d.category and isinstance(d.status, dict) for d in devices)


async def test_a_command_changes_the_status_and_it_stays_changed(home: SmartHome) -> None:
    light = next(d for d in await home.list_devices(person_id="usr_1") if d.category == "dj")
    await home.send_commands(person_id="usr_1", device_id=light.id, commands=[Command("switch_led", True)])
    assert (await home.device_status(person_id="usr_1", device_id=light.id))["switch_led"] is True
    await home.send_commands(person_id="usr_1", device_id=light.id, commands=[Command("switch_led", False)])
    assert (await home.device_status(person_id="usr_1", device_id=light.id))["switch_led"] is False


async def test_homes_are_per_person(home: SmartHome) -> None:
    light = next(d for d in await home.list_devices(person_id="usr_1") if d.category == "dj")
    await home.send_commands(person_id="usr_1", device_id=light.id, commands=[Command("switch_led", True)])
    assert (await home.device_status(person_id="usr_2", device_id=light.id))["switch_led"] is False


@pytest.mark.parametrize(
    "command",
    [
        Command("switch_led", "yes"),
        Command("switch_led", 1),
        Command("bright_value", 5000),
        Command("self_destruct", True),
    ],
)
async def test_invalid_commands_are_refused_and_change_nothing(home: SmartHome, command: Command) -> None:
    light = next(d for d in await home.list_devices(person_id="usr_1") if d.category == "dj")
    before = await home.device_status(person_id="usr_1", device_id=light.id)
    with pytest.raises(CommandInvalid):
        await home.send_commands(person_id="usr_1", device_id=light.id, commands=[command])
    assert await home.device_status(person_id="usr_1", device_id=light.id) == before


async def test_unknown_devices_are_not_found(home: SmartHome) -> None:
    with pytest.raises(DeviceNotFound):
        await home.device_status(person_id="usr_1", device_id="nope")
    with pytest.raises(DeviceNotFound):
        await home.send_commands(person_id="usr_1", device_id="nope", commands=[Command("switch_led", True)])


async def test_curtain_percent_zero_is_open(home: SmartHome) -> None:
    curtain = next(d for d in await home.list_devices(person_id="usr_1") if d.category == "cl")
    await home.send_commands(person_id="usr_1", device_id=curtain.id, commands=[Command("control", "open")])
    assert (await home.device_status(person_id="usr_1", device_id=curtain.id))["percent_control"] == 0
