"""Our reading of Tuya's cloud OpenAPI reference, for the calls `TuyaHome` makes: restated
in our own words and shapes, not copied. Tuya publishes no machine-readable document, so
the endpoints and the error codes are kept here as tables with the pages they come from.

Sources, read on 2026-12-02:
- https://developer.tuya.com/en/docs/cloud/6c1636a9bd?id=Ka7kjumkoa53v (get a token, and
  refresh one), https://developer.tuya.com/en/docs/iot/api-request?id=Ka4a8uuo1j4t4 (the
  signed headers every request carries),
  https://developer.tuya.com/en/docs/cloud/device-management?id=K9g6rfntdz78a (a user's
  devices, a device's status, multi-gang names) and
  https://developer.tuya.com/en/docs/cloud/device-control?id=K95zu0vj2ah2n (send commands).
- https://developer.tuya.com/en/docs/iot/error-code?id=K989ruxx88swc ("Global Error
  Codes", last updated 2024-07-22): every answer is HTTP 200 with `success`, and a failure
  carries `code` and `msg`. The system codes below are as that page lists them; 1199
  ("requests too frequent") and the device codes 2008/2009 were not on the versions of the
  page we could read and are kept as reported by the people running the project.
"""

from __future__ import annotations

from tests.specs.checker import Choice, Endpoint, Fields, Many, OneOf, Param, Shape, Spec

HOST = "openapi.tuyaus.com"  # the fakes answer the western-America data centre's host

# code -> Tuya's message, for the codes `TuyaHome` reads.
ERROR_CODES: dict[int, str] = {
    500: "system error, please contact the admin",
    1004: "sign invalid",
    1010: "token is expired",
    1011: "token invalid",
    1012: "token status is invalid",
    1013: "request time is invalid",
    1100: "param is empty",
    1101: "params range invalid",
    1102: "param is null",
    1103: "commands issue error",
    1106: "permission deny",
    1109: "param is illegal, please check it",
    1110: "concurrent request over limit",
    1111: "system is busy, please try again later",
    1199: "requests too frequent",
    2008: "command or value not support",
    2009: "not support this device",
}

_SIGNED = frozenset({"client_id", "sign", "t", "nonce", "sign_method"})
_WITH_TOKEN = _SIGNED | {"access_token"}
_STATUS = Fields({"code": str, "value": object}, frozenset({"code"}))


def _envelope(result: Shape) -> Fields:
    return Fields({"success": Choice.of(True), "result": result, "t": int, "tid": str}, frozenset({"success", "t"}))


_FAILURE = Fields(
    {"success": Choice.of(False), "code": Choice(frozenset(ERROR_CODES)), "msg": str, "t": int, "tid": str},
    frozenset({"success", "code", "msg", "t"}),
)
_TOKEN = Fields(
    {"access_token": str, "expire_time": int, "refresh_token": str, "uid": str},
    frozenset({"access_token", "expire_time", "refresh_token"}),
)
DEVICE = Fields(
    {
        "id": str,
        "name": str,
        "category": str,
        "online": bool,
        "status": Many(_STATUS),
        "uid": str,
        "product_id": str,
        "product_name": str,
        "icon": str,
        "time_zone": str,
    },
    frozenset({"id", "name", "category", "online", "status"}),
)
_NAME = Fields({"identifier": str, "name": str}, frozenset({"identifier", "name"}))
_COMMAND = Fields({"code": str, "value": object}, frozenset({"code", "value"}))


def _answers(result: Shape) -> dict[int, Shape | None]:
    return {200: OneOf((_envelope(result), _FAILURE))}


TUYA = Spec(
    vendor="Tuya",
    sources=(
        "https://developer.tuya.com/en/docs/cloud/6c1636a9bd?id=Ka7kjumkoa53v",
        "https://developer.tuya.com/en/docs/iot/api-request?id=Ka4a8uuo1j4t4",
        "https://developer.tuya.com/en/docs/cloud/device-management?id=K9g6rfntdz78a",
        "https://developer.tuya.com/en/docs/cloud/device-control?id=K95zu0vj2ah2n",
        "https://developer.tuya.com/en/docs/iot/error-code?id=K989ruxx88swc",
    ),
    read_on="2026-12-02",
    endpoints=(
        Endpoint(
            "get-token",
            "GET",
            HOST,
            "/v1.0/token",
            query={"grant_type": Param(str, choices=frozenset({"1"}), required=True)},  # 1: simple mode
            headers=_SIGNED,
            answers=_answers(_TOKEN),
        ),
        Endpoint(
            "refresh-token", "GET", HOST, "/v1.0/token/{refresh_token}", headers=_SIGNED, answers=_answers(_TOKEN)
        ),
        Endpoint(
            "get-user-devices",
            "GET",
            HOST,
            "/v1.0/users/{uid}/devices",
            headers=_WITH_TOKEN,
            answers=_answers(Many(DEVICE)),
        ),
        Endpoint(
            "get-device-status",
            "GET",
            HOST,
            "/v1.0/devices/{device_id}/status",
            headers=_WITH_TOKEN,
            answers=_answers(Many(_STATUS)),
        ),
        Endpoint(
            "get-multiple-names",
            "GET",
            HOST,
            "/v1.0/devices/{device_id}/multiple-names",
            headers=_WITH_TOKEN,
            answers=_answers(Many(_NAME)),
        ),
        Endpoint(
            "send-commands",
            "POST",
            HOST,
            "/v1.0/devices/{device_id}/commands",
            headers=_WITH_TOKEN,
            # The list may not be empty: Tuya answers 1100, "param is empty".
            body=Fields({"commands": Many(_COMMAND, items_min=1)}, frozenset({"commands"})),
            answers=_answers(bool),
        ),
    ),
    error_statuses=frozenset(),  # Tuya answers HTTP 200 and says what failed in the body
    error_body=None,
)
