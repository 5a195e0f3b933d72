"""The `PhoneVerifier` that sends a code as a text message through Twilio's Messages API
(docs/http.md#phones), used where TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and
TWILIO_FROM_NUMBER are set.

One request per code: `POST {base}/2010-04-01/Accounts/{AccountSid}/Messages.json`,
form-encoded `To`, `From` and `Body`, HTTP basic auth with the account SID and auth token;
Twilio answers 201 with the message resource. Anything else is a failed delivery, raised
as `PhoneDeliveryFailed` with no vendor text (the person is told to try again). The base
URL can be pointed at a stand-in (the contract suite serves one).
"""

from __future__ import annotations

import logging

import httpx

from chat.errors import PhoneDeliveryFailed

log = logging.getLogger(__name__)

TWILIO_API = "https://api.twilio.com"
MESSAGE = "Your Avagenc code is {code}. It expires in 10 minutes."


class TwilioSms:
    def __init__(
        self,
        *,
        account_sid: str,
        auth_token: str,
        from_number: str,
        base_url: str = TWILIO_API,
        timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._account_sid = account_sid
        self._from = from_number
        self._client = httpx.AsyncClient(
            base_url=base_url, auth=(account_sid, auth_token), timeout=timeout_s, transport=transport
        )

    async def send_code(self, number: str, code: str) -> None:
        try:
            response = await self._client.post(
                f"/2010-04-01/Accounts/{self._account_sid}/Messages.json",
                data={"To": number, "From": self._from, "Body": MESSAGE.format(code=code)},
            )
        except httpx.HTTPError as exc:
            log.warning("text message not sent: %s", type(exc).__name__)
            raise PhoneDeliveryFailed("The code could not be sent; try again in a moment.") from exc
        if response.status_code != 201:
            log.warning("text message refused by Twilio: %d", response.status_code)
            raise PhoneDeliveryFailed("The code could not be sent; try again in a moment.")

    async def close(self) -> None:
        await self._client.aclose()
