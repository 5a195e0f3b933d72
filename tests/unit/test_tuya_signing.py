"""Tuya's request signature against the worked example in Tuya's own documentation
("Sign Requests", developer.tuya.com): the token call and a business call with the
example's client id, secret, timestamp, nonce, signed headers and access token."""

from __future__ import annotations

from agents.zee.tuya import EMPTY_SHA256, canonical_url, sign, string_to_sign

EXAMPLE = {
    "client_id": "1KAD46OrT9HafiKdsXeg",
    "secret": "4OHBOnWOqaEC1mWXOpVL3yV50s0qGSRC",
    "t": "1588925778000",
    "nonce": "5138cc3a9033d69856923fd07b491173",
    "method": "GET",
    "headers": {"area_id": "29a33e8796834b1efa6", "call_id": "8afdb70ab2ed11eb85290242ac130003"},
}


def test_the_token_call_signs_as_tuyas_example() -> None:
    signed = sign(url="/v1.0/token?grant_type=1", **EXAMPLE)  # type: ignore[arg-type]
    assert signed == "9E48A3E93B302EEECC803C7241985D0A34EB944F40FB573C7B5C2A82158AF13E"


def test_a_business_call_signs_as_tuyas_example() -> None:
    url = canonical_url("/v2.0/apps/schema/users", {"page_size": 50, "page_no": 1})
    assert url == "/v2.0/apps/schema/users?page_no=1&page_size=50", "query parameters are sorted by name"
    signed = sign(url=url, access_token="3f4eda2bdec17232f67c0b188af3eec1", **EXAMPLE)  # type: ignore[arg-type]
    assert signed == "AE4481C692AA80B25F3A7E12C3A5FD9BBF6251539DD78E565A1A72A508A88784"


def test_the_string_to_sign_has_four_lines() -> None:
    text = string_to_sign("get", "/v1.0/token?grant_type=1")
    assert text == f"GET\n{EMPTY_SHA256}\n\n/v1.0/token?grant_type=1"
    assert EMPTY_SHA256 == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
