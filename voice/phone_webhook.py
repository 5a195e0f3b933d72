"""The phone webhook: `POST /v1/voice/phone/incoming`, where Twilio asks what to do with
a call to our number (docs/sockets.md#phone-calls).

The request is Twilio's only if its `X-Twilio-Signature` is right: base64 of HMAC-SHA1,
keyed by the account's auth token, over the URL Twilio requested followed by every POST
parameter's name and value, sorted by name (Twilio's "Webhooks security" guide; its worked
example is a test vector in tests/unit/test_twilio_signature.py). Anything else is 403
and touches nothing.

A signed request names the caller (`From`). A number some person verified is that
person: the answer is TwiML `<Connect><Stream>` to the phone door with a short-lived,
single-use call token as a `<Parameter>`, good at the phone door only. Any other caller
hears a short spoken refusal and the call ends; no thread is touched. Twilio's signature
carries no nonce, so each CallSid is answered once: a replayed request is 409.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape, quoteattr

from fastapi import APIRouter, Request
from fastapi.responses import Response

from voice.errors import PhoneWebhookDisabled, SignatureInvalid, WebhookReplayed
from web import problem_responses

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "x-twilio-signature"
TWIML = "application/xml"
REFUSAL = "Sorry, this number is not linked to an Avagenc account. Goodbye."
FORM = "application/x-www-form-urlencoded"
# A base64 HMAC-SHA1 is 28 characters; anything much longer is not a signature.
_SIGNATURE_CHARS_MAX = 100
# The fields of Twilio's voice request this webhook reads or that every call carries (as the
# OpenAPI document shows them; Twilio sends more, all signed, all read as strings).
_TWILIO_FORM = {
    "type": "object",
    "properties": {name: {"type": "string"} for name in ("AccountSid", "CallSid", "From", "To", "CallStatus")},
    "required": ["CallSid", "From"],
}


def twilio_signature(auth_token: str, url: str, params: Sequence[tuple[str, str]]) -> str:
    """What Twilio puts in X-Twilio-Signature for a POST of `params` to `url`."""
    signed = url + "".join(name + value for name, value in sorted(params))
    mac = hmac.new(auth_token.encode(), signed.encode("utf-8", "surrogatepass"), hashlib.sha1).digest()
    return base64.b64encode(mac).decode()


def signature_valid(auth_token: str, url: str, params: Sequence[tuple[str, str]], signature: str | None) -> bool:
    if not signature or len(signature) > _SIGNATURE_CHARS_MAX or not signature.isascii():
        return False
    return hmac.compare_digest(twilio_signature(auth_token, url, params).encode(), signature.encode())


@dataclass(frozen=True, slots=True)
class PhoneWebhook:
    """What the webhook needs, from the composition root."""

    auth_token: str | None
    # The caller's verified number → their person id (None: nobody's).
    person_for: Callable[[str], Awaitable[str | None]]
    # A single-use call token for that person, good at the phone door only.
    call_token: Callable[[str], Awaitable[str]]
    # Whether a CallSid is seen for the first time (a replayed request is refused).
    first_call: Callable[[str], Awaitable[bool]]
    # The server's public address (PUBLIC_BASE_URL): what Twilio signed, and where the
    # stream connects. Unset: the request's own URL.
    public_base_url: str | None = None


def _signed_url(request: Request, public_base_url: str | None) -> str:
    if not public_base_url:
        return str(request.url)
    query = request.url.query
    return public_base_url.rstrip("/") + request.url.path + (f"?{query}" if query else "")


def _stream_url(request: Request, public_base_url: str | None) -> str:
    base = public_base_url.rstrip("/") if public_base_url else str(request.base_url).rstrip("/")
    if base.startswith("https://"):
        base = "wss://" + base.removeprefix("https://")
    elif base.startswith("http://"):
        base = "ws://" + base.removeprefix("http://")
    return base + "/v1/voice/phone"


def connect_twiml(stream_url: str, call_token: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f"<Response><Connect><Stream url={quoteattr(stream_url)}>"
        f'<Parameter name="call_token" value={quoteattr(call_token)}/>'
        "</Stream></Connect></Response>"
    )


def refusal_twiml() -> str:
    return f'<?xml version="1.0" encoding="UTF-8"?><Response><Say>{escape(REFUSAL)}</Say><Hangup/></Response>'


def add_incoming_route(router: APIRouter, webhook: PhoneWebhook | None) -> None:
    """Mount `POST /phone/incoming` on the voice router (answering 404 while `webhook` is None)."""

    @router.post(
        "/phone/incoming",
        tags=["voice"],
        response_class=Response,
        responses={200: {"content": {TWIML: {}}}, **problem_responses(403, 404, 409, 413)},
        openapi_extra={"requestBody": {"required": True, "content": {FORM: {"schema": _TWILIO_FORM}}}},
    )
    async def incoming(request: Request) -> Response:
        """Twilio's voice webhook (form-encoded, signed): TwiML connecting a verified caller
        to the phone door, or a spoken refusal."""
        if webhook is None or not webhook.auth_token:
            raise PhoneWebhookDisabled("Set TWILIO_AUTH_TOKEN to take calls.")
        body = (await request.body()).decode("utf-8", "surrogateescape")
        params = parse_qsl(body, keep_blank_values=True)
        url = _signed_url(request, webhook.public_base_url)
        if not signature_valid(webhook.auth_token, url, params, request.headers.get(SIGNATURE_HEADER)):
            log.warning("phone webhook refused: bad signature")
            raise SignatureInvalid("The request does not carry Twilio's signature for this URL and body.")
        fields = dict(params)
        if not await webhook.first_call(fields.get("CallSid", "")):
            log.warning("phone webhook refused: a call already answered, or no CallSid")
            raise WebhookReplayed("This call was already answered; a request is answered once.")
        person_id = await webhook.person_for(fields.get("From", ""))
        if person_id is None:
            log.info("phone call from an unknown number refused")
            return Response(refusal_twiml(), media_type=TWIML)
        token = await webhook.call_token(person_id)
        return Response(connect_twiml(_stream_url(request, webhook.public_base_url), token), media_type=TWIML)
