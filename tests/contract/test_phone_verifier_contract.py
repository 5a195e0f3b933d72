"""One contract for every `PhoneVerifier` (docs/http.md#phones): `LoggedPhoneCodes`, the
offline twin that writes the code to the server's log, and `TwilioSms`, which texts it
through Twilio's Messages API (here the stateful `FakeTwilioMessages`, reached over a real
uvicorn on 127.0.0.1). A code sent to a number arrives at that number and no other, each
code on its own; a provider that refuses or is away is `PhoneDeliveryFailed`, never its
own text."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Callable

import pytest

from chat import LoggedPhoneCodes, PhoneDeliveryFailed, PhoneVerifier, TwilioSms
from tests.fakes.servers import free_port, serve_in_process
from tests.fakes.twilio import FakeTwilioMessages

SID = "AC00000000000000000000000000000009"
TOKEN = "twilio-auth-token-" + "9" * 14
FROM = "+15005550006"

Inbox = Callable[[str], list[str]]  # number -> the codes that reached it, oldest first


def codes_in(texts: list[str]) -> list[str]:
    return [m.group(0) for text in texts for m in [re.search(r"\b[0-9]{6}\b", text)] if m]


@contextlib.asynccontextmanager
async def logged(caplog: pytest.LogCaptureFixture) -> AsyncIterator[tuple[PhoneVerifier, Inbox]]:
    caplog.set_level(logging.INFO, logger="chat.phones.codes")

    def inbox(number: str) -> list[str]:
        lines = [r.getMessage() for r in caplog.records if r.name == "chat.phones.codes"]
        return codes_in([line for line in lines if f" {number}:" in line])

    yield LoggedPhoneCodes(), inbox


@contextlib.asynccontextmanager
async def twilio_sms(_: pytest.LogCaptureFixture) -> AsyncIterator[tuple[PhoneVerifier, Inbox]]:
    fake = FakeTwilioMessages(SID, TOKEN)
    async with serve_in_process(fake) as url:  # type: ignore[arg-type]  # any ASGI app
        sms = TwilioSms(account_sid=SID, auth_token=TOKEN, from_number=FROM, base_url=url)
        try:
            yield sms, lambda number: codes_in(fake.inbox.get(number, []))
        finally:
            await sms.close()


@pytest.fixture(params=[logged, twilio_sms], ids=["LoggedPhoneCodes", "TwilioSms"])
async def verifier(
    request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> AsyncIterator[tuple[PhoneVerifier, Inbox]]:
    async with request.param(caplog) as made:
        yield made


async def test_a_code_reaches_its_number_and_no_other(verifier: tuple[PhoneVerifier, Inbox]) -> None:
    sender, inbox = verifier
    await sender.send_code("+6281234567890", "123456")
    await sender.send_code("+6281234567890", "654321")
    await sender.send_code("+14155550100", "777777")
    assert inbox("+6281234567890") == ["123456", "654321"]
    assert inbox("+14155550100") == ["777777"]
    assert inbox("+6289999999999") == []


async def test_twilio_refusing_or_away_is_a_delivery_failure_without_its_text() -> None:
    fake = FakeTwilioMessages(SID, TOKEN)
    async with serve_in_process(fake) as url:  # type: ignore[arg-type]
        wrong_auth = TwilioSms(account_sid=SID, auth_token="not-the-token", from_number=FROM, base_url=url)
        refused = TwilioSms(account_sid=SID, auth_token=TOKEN, from_number=FROM, base_url=url)
        for sms, number in ((wrong_auth, "+6281234567890"), (refused, "not-a-number")):
            with pytest.raises(PhoneDeliveryFailed) as failed:
                await sms.send_code(number, "123456")
            assert "Twilio" not in str(failed.value) and "21211" not in str(failed.value)
            await sms.close()
    assert fake.inbox == {}
    away = TwilioSms(account_sid=SID, auth_token=TOKEN, from_number=FROM, base_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(PhoneDeliveryFailed):
        await away.send_code("+6281234567890", "123456")
    await away.close()
