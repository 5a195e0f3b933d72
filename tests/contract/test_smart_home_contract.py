"""The `SmartHome` port's contract, run against each implementation: the sandbox, and the
Tuya adapter talking to an in-process fake of the Tuya OpenAPI that checks every
request's signature."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from agents import Command, SandboxHome, SmartHome
from agents.integrations.hints import RateLimited, VendorUnavailable
from agents.zee.home import CommandInvalid, DeviceNotFound
from agents.zee.tuya import TuyaHome
from tests.fakes.linked import client_for
from tests.fakes.vendors import FakeTuya
from tests.specs.tuya import TUYA

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


async def test_an_empty_command_list_is_refused(home: SmartHome) -> None:
    light = next(d for d in await home.list_devices(person_id="usr_1") if d.category == "dj")
    with pytest.raises(CommandInvalid):
        await home.send_commands(person_id="usr_1", device_id=light.id, commands=[])


async def test_every_tuya_call_is_one_the_reference_allows() -> None:
    fake = FakeTuya()
    async with client_for(fake) as http:
        home = tuya_home(fake, http)
        light = next(d for d in await home.list_devices(person_id="usr_1") if d.category == "dj")
        await home.send_commands(person_id="usr_1", device_id=light.id, commands=[Command("bright_value", 700)])
        await home.device_status(person_id="usr_1", device_id=light.id)
        fake.expire_tokens()  # 1010: renewed by the refresh token
        await home.list_devices(person_id="usr_1")
    assert fake.violations == [] and fake.bad_signatures == 0
    assert fake.checker.called == {e.name for e in TUYA.endpoints}


async def test_tuya_refuses_an_empty_command_list_as_param_is_empty() -> None:
    """What Tuya answers when the list is empty (1100), read as bad input, not a rate limit."""
    fake = FakeTuya()
    async with client_for(fake) as http:
        home = tuya_home(fake, http)
        light = next(d for d in await home.list_devices(person_id="usr_1") if d.category == "dj")
        with pytest.raises(CommandInvalid, match="param is empty"):
            await home._call("POST", f"/v1.0/devices/{light.id}/commands", body={"commands": []})
    assert fake.violations == [f"Tuya POST /v1.0/devices/{light.id}/commands: body.commands: fewer than 1 items"], (
        "the checker sees the empty list the adapter itself never sends"
    )


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        (1100, CommandInvalid),
        (1101, CommandInvalid),
        (1102, CommandInvalid),
        (1103, CommandInvalid),
        (1109, CommandInvalid),
        (2008, CommandInvalid),
        (2009, CommandInvalid),
        (1106, DeviceNotFound),
        (1110, RateLimited),
        (1199, RateLimited),
        (500, VendorUnavailable),
        (1004, VendorUnavailable),
        (1013, VendorUnavailable),
        (1111, VendorUnavailable),
    ],
)
async def test_each_documented_tuya_code_becomes_its_hint(code: int, hint: type[Exception]) -> None:
    fake = FakeTuya()
    async with client_for(fake) as http:
        home = tuya_home(fake, http)
        fake.failing = code
        with pytest.raises(hint):
            await home.list_devices(person_id="usr_1")
    assert fake.violations == []


@pytest.mark.parametrize("code", [1010, 1011, 1012])
async def test_a_refused_token_is_renewed_once_then_given_up(code: int) -> None:
    fake = FakeTuya()
    async with client_for(fake) as http:
        home = tuya_home(fake, http)
        await home.list_devices(person_id="usr_1")
        granted = len(fake.tokens)
        fake.failing = code
        with pytest.raises(VendorUnavailable):
            await home.list_devices(person_id="usr_1")
        assert len(fake.tokens) == granted + 1, "one renewal, one retry, no loop"
    assert fake.violations == []
