"""The `SmartHome` port's contract, run against each implementation: the sandbox, and the
Tuya adapter talking to an in-process fake of the Tuya OpenAPI that checks every
request's signature."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from agents import Command, SandboxHome, SmartHome
from agents.zee.home import CommandInvalid, DeviceNotFound
from agents.zee.tuya import TuyaHome
from tests.fakes.linked import client_for
from tests.fakes.vendors import FakeTuya

TUYA_URL = "https://openapi.tuyaus.com"


def tuya_home(fake: FakeTuya, http: object) -> TuyaHome:
    uids = {"usr_1": "uid1", "usr_2": "uid2"}
    for uid in uids.values():
        fake.user(uid)

    async def uid_of(person_id: str) -> str | None:
        return uids.get(person_id)

    assert hasattr(http, "request")
    return TuyaHome(
        http=http,  # type: ignore[arg-type]
        base_url=TUYA_URL,
        client_id=FakeTuya.CLIENT_ID,
        secret=FakeTuya.SECRET,
        uid_of=uid_of,
    )


@pytest.fixture(params=["sandbox", "tuya"])
async def home(request: pytest.FixtureRequest, pool: asyncpg.Pool) -> AsyncIterator[SmartHome]:
    if request.param == "sandbox":
        yield SandboxHome(pool)
        return
    fake = FakeTuya()
    async with client_for(fake) as http:
        yield tuya_home(fake, http)
        assert fake.bad_signatures == 0
        assert fake.violations == []  # every call and answer as Tuya's reference has it


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
    other = next(d for d in await home.list_devices(person_id="usr_2") if d.category == "dj")
    await home.send_commands(person_id="usr_1", device_id=light.id, commands=[Command("switch_led", True)])
    assert (await home.device_status(person_id="usr_2", device_id=other.id))["switch_led"] is False


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


async def test_tuya_reaches_only_the_persons_own_devices_and_renews_its_token() -> None:
    from agents.integrations.hints import NotLinked

    fake = FakeTuya()
    async with client_for(fake) as http:
        home = tuya_home(fake, http)
        mine = (await home.list_devices(person_id="usr_1"))[0]
        with pytest.raises(DeviceNotFound):
            await home.send_commands(person_id="usr_2", device_id=mine.id, commands=[Command("switch_led", True)])
        strip = next(d for d in await home.list_devices(person_id="usr_1") if d.category == "kg")
        assert strip.channel_names == {"switch_1": "Fan", "switch_2": "Monitor"}
        fake.expire_tokens()  # Tuya says 1010: the adapter renews and retries once
        await home.send_commands(person_id="usr_1", device_id=mine.id, commands=[Command("switch_led", True)])
        assert (await home.device_status(person_id="usr_1", device_id=mine.id))["switch_led"] is True
        with pytest.raises(NotLinked):
            await home.list_devices(person_id="usr_3")
    assert fake.bad_signatures == 0
