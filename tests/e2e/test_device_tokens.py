"""A paired speaker's token is remembered by the process that verified it, and a
revocation is still immediate (chat.device_tokens, docs/http.md#devices): refused at once
after a revoke on this instance, as soon as the notification reaches another instance
sharing the database, and never served from memory while a notification could be missed
(the listening connection lost, or listening again after a loss)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import httpx
import pytest

from app.server import running
from chat import Devices, KnownDeviceTokens, Unauthorized
from database.listener import APPLICATION_NAME
from settings import Settings
from tests.conftest import App
from tests.e2e.test_devices import paired_speaker, ws_url
from tests.e2e.test_sessions import speaker_answer

_TERMINATE_SQL = """
SELECT count(*) FROM (
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = $1
) AS t
"""


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"voice_preload": False})


async def until(condition: Callable[[], bool], *, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.005)


def known_of(devices: Devices | None) -> tuple[Devices, KnownDeviceTokens]:
    assert devices is not None and devices.known is not None
    return devices, devices.known


async def test_a_token_is_remembered_and_a_revoke_here_refuses_it_at_once(app: App) -> None:
    devices, known = known_of(app.services.devices)
    await until(known.trusting)
    person = await app.sign_in("Budi")
    token, device = await paired_speaker(app, person)
    async with contextlib.AsyncExitStack() as stack:
        base = await ws_url(app, stack)
        ready, _ = await speaker_answer(f"{base}/v1/voice/speaker", {"Authorization": f"Bearer {token}"})
        assert ready["type"] == "ready"
        assert len(known) == 1, "the speaker door's verification is remembered"
        assert (await devices.caller(token)).device_id == device["id"]
        assert (await app.client.delete(f"/v1/devices/{device['id']}", headers=person)).status_code == 204
        # Forgotten before the revoke answered: no notification needed on this instance.
        assert len(known) == 0
        with pytest.raises(Unauthorized):
            await devices.caller(token)
        await asyncio.sleep(0.5)  # the first call lets go of its slot
        refused, code = await speaker_answer(f"{base}/v1/voice/speaker", {"Authorization": f"Bearer {token}"})
        assert (refused["code"], code) == ("unauthorized", 4401)


async def test_a_revoke_on_another_instance_is_refused_here_once_notified(app: App, settings: Settings) -> None:
    devices, known = known_of(app.services.devices)
    await until(known.trusting)
    person = await app.sign_in("Budi")
    token, device = await paired_speaker(app, person)
    kept_token, kept = await paired_speaker(app, person, "Hall speaker")
    await devices.caller(token)
    await devices.caller(kept_token)
    assert len(known) == 2
    async with running(settings) as (_, second_app):
        second = httpx.AsyncClient(transport=httpx.ASGITransport(app=second_app), base_url="http://test")
        async with second:
            assert (await second.delete(f"/v1/devices/{device['id']}", headers=person)).status_code == 204
        # The notification reaches this instance within moments (5 s allows for a loaded
        # machine), and forgets only that device.
        await until(lambda: len(known) == 1, timeout_s=5.0)
    with pytest.raises(Unauthorized):
        await devices.caller(token)
    assert (await devices.caller(kept_token)).device_id == kept["id"]


async def test_nothing_is_served_from_memory_while_a_revocation_could_go_unheard(app: App) -> None:
    """The listening connection is cut and a revocation made elsewhere while it is down
    (its notification goes unheard): the token is refused while this instance is not
    listening, and still after it listens again, which forgot every remembered token."""
    devices, known = known_of(app.services.devices)
    await until(known.trusting)
    person = await app.sign_in("Budi")
    token, device = await paired_speaker(app, person)
    kept_token, _ = await paired_speaker(app, person, "Hall speaker")
    await devices.caller(token)
    await devices.caller(kept_token)
    assert len(known) == 2
    pool = app.services.pool
    elsewhere = Devices(pool, pairing_ttl_s=600, devices_per_person_max=10)  # another instance's, no memory
    person_id = (await app.client.get("/v1/me", headers=person)).json()["id"]

    assert await pool.fetchval(_TERMINATE_SQL, APPLICATION_NAME) == 1
    await until(lambda: not known.trusting())
    await elsewhere.revoke(person_id, device["id"])  # its notification: nobody here listens
    with pytest.raises(Unauthorized):
        await devices.caller(token)
    # A token used while not listening is looked up, and not remembered.
    await devices.caller(kept_token)
    assert len(known) == 2, "nothing was forgotten or filled while not listening"

    await until(known.trusting)  # listening again: everything remembered was forgotten
    assert len(known) == 0
    with pytest.raises(Unauthorized):
        await devices.caller(token)
    await devices.caller(kept_token)
    assert len(known) == 1
