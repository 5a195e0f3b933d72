"""Generated bad (and good) input from the OpenAPI document: schemathesis makes requests
for every operation, in positive and negative modes, against a real uvicorn serving the
whole product, authenticated. None may answer 5xx, and every answer must be one the
document lists, with the media type and schema it lists. Fixed seed (derandomized), no
example database, so a run is the same every time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable
from pydantic import SecretStr
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from settings import Settings
from tests.conftest import App
from tests.fakes.servers import serve_in_process

ADMIN_KEY = "admin-" + "k" * 32
EXAMPLES_PER_MODE = 70
# The pairing, device and phone routes: small bodies of a few strings, so fewer examples
# cover them (the suite's time is shared); holding a device token, fewer still.
EXAMPLES_NEW = 20
EXAMPLES_AS_A_DEVICE = 8
REQUESTS_MIN = 1_000
# The live event stream never ends on its own, so it is not for a request/response fuzzer
# (tests/e2e/test_events.py covers its bad input).
SKIPPED = {("GET", "/v1/events")}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"admin_api_key": SecretStr(ADMIN_KEY), "twilio_auth_token": SecretStr("twilio-" + "t" * 32)}
    )


# The routes identity and devices added, fuzzed a second time holding a paired speaker's
# device token instead of a person's (docs/http.md#devices).
NEW_ROUTES = ("/v1/devices", "/v1/phones", "/v1/voice/phone/incoming")
# With the identity routes (sign-in, sign-out, tickets, the person): a device token is
# refused by each of them, never a 5xx.
AS_A_DEVICE = (*NEW_ROUTES, "/v1/auth", "/v1/tickets", "/v1/me")


def fuzz(
    schema: Any,
    base_url: str,
    headers: dict[str, str],
    sign_out: dict[str, str],
    *,
    only: tuple[str, ...] = (),
    examples: int = EXAMPLES_PER_MODE,
) -> dict[str, int]:
    """Every operation (or those under `only`), both modes; the number of requests made per
    operation. Signing out uses a session of its own (`sign_out`), so the other operations
    keep theirs."""
    made: dict[str, int] = {}
    session = requests.Session()
    for result in schema.get_all_operations():
        operation = result.ok()
        if (operation.method.upper(), operation.path) in SKIPPED:
            continue
        if only and not operation.path.startswith(only):
            continue
        auth = {"Authorization": f"Bearer {ADMIN_KEY}"} if operation.path.startswith("/v1/admin") else headers
        if operation.path == "/v1/auth/sign-out":
            auth = sign_out
        label = f"{operation.method.upper()} {operation.path}"
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)
            count = min(examples, EXAMPLES_NEW) if operation.path.startswith(NEW_ROUTES) else examples
            run_operation(strategy, base_url, session, auth, made, label, examples=count)
    return made


def run_operation(
    strategy: Any,
    base_url: str,
    session: requests.Session,
    auth: dict[str, str],
    made: dict[str, int],
    label: str,
    *,
    examples: int,
) -> None:
    @hypothesis_settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def check(case: Any) -> None:
        response = case.call(base_url=base_url, session=session, headers=auth, timeout=30)
        made[label] = made.get(label, 0) + 1
        case.validate_response(response, checks=CHECKS)

    run: Callable[[], None] = check
    try:
        run()
    except Unsatisfiable:
        # Nothing of this operation can be made invalid (no parameters, no body).
        assert made.get(label), f"{label}: no request could be generated"


@pytest.mark.timeout(300)  # about 1,900 requests through the whole product, on two shared cores
async def test_generated_requests_never_answer_5xx_nor_anything_the_document_does_not_list(app: App) -> None:
    headers = await app.sign_in()
    headers.pop("time-zone")  # generated where the document lists it
    sign_out = await app.sign_in()
    sign_out.pop("time-zone")
    schema = schemathesis.openapi.from_dict(app.app.openapi())
    device = await paired_device(app, headers)
    async with serve_in_process(app.app) as url:
        made = await asyncio.to_thread(fuzz, schema, url, headers, sign_out)
        as_device = await asyncio.to_thread(
            fuzz, schema, url, device, device, only=AS_A_DEVICE, examples=EXAMPLES_AS_A_DEVICE
        )
    print(f"schemathesis: {sum(made.values())} requests: {made}")
    print(f"schemathesis as a device: {sum(as_device.values())} requests: {as_device}")
    assert sum(made.values()) >= REQUESTS_MIN, made
    added = {
        "POST /v1/devices/pairing",
        "POST /v1/devices/pairing/poll",
        "POST /v1/devices/pair",
        "GET /v1/devices",
        "DELETE /v1/devices/{device_id}",
        "POST /v1/phones",
        "POST /v1/phones/{phone_id}/verify",
        "GET /v1/phones",
        "DELETE /v1/phones/{phone_id}",
        "POST /v1/voice/phone/incoming",
    }
    assert added <= set(made) and added <= set(as_device), (set(made), set(as_device))
    identity = {"POST /v1/auth/sign-out", "POST /v1/tickets", "GET /v1/me"}
    assert identity <= set(as_device), set(as_device)
    assert {"POST /v1/messages", "GET /v1/wallet/usage", "POST /v1/admin/topups"} <= set(made)
    assert {"POST /v1/tickets", "POST /v1/auth/sign-out", "POST /v1/auth/local"} <= set(made)


async def paired_device(app: App, person: dict[str, str]) -> dict[str, str]:
    """A speaker paired to the person: the header its device token goes in."""
    pairing = (await app.client.post("/v1/devices/pairing")).json()
    assert (await app.client.post("/v1/devices/pair", json={"code": pairing["code"]}, headers=person)).is_success
    polled = (await app.client.post("/v1/devices/pairing/poll", json={"poll_secret": pairing["poll_secret"]})).json()
    return {"Authorization": f"Bearer {polled['device_token']}"}
