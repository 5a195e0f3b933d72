"""X-Twilio-Signature as Twilio's "Webhooks security" guide computes it, held to the
guide's worked example (auth token `12345`, its URL and POST parameters) and to the
earlier edition of the same example that Twilio's own libraries test against."""

from __future__ import annotations

import pytest

from voice.phone_webhook import signature_valid, twilio_signature

URL = "https://mycompany.com/myapp.php?foo=1&bar=2"


def example(caller: str) -> list[tuple[str, str]]:
    return [
        ("CallSid", "CA1234567890ABCDE"),
        ("Caller", caller),
        ("Digits", "1234"),
        ("From", caller),
        ("To", "+18005551212"),
    ]


@pytest.mark.parametrize(
    ("caller", "signature"),
    [("+12349013030", "0/KCTR6DLpKmkAf8muzZqo1nDgQ="), ("+14158675309", "RSOYDt4T1cUTdK1PDd93/VVr8B8=")],
)
def test_twilios_documented_examples(caller: str, signature: str) -> None:
    params = example(caller)
    assert twilio_signature("12345", URL, params) == signature
    assert twilio_signature("12345", URL, list(reversed(params))) == signature  # sorted by name
    assert signature_valid("12345", URL, params, signature)


@pytest.mark.parametrize(
    "change",
    ["token", "url", "value", "extra", "signature"],
)
def test_any_change_fails(change: str) -> None:
    params = example("+12349013030")
    token, url, signature = "12345", URL, "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
    if change == "token":
        token = "12346"
    elif change == "url":
        url = URL.replace("bar=2", "bar=3")
    elif change == "value":
        params[2] = ("Digits", "9999")
    elif change == "extra":
        params.append(("Extra", ""))
    else:
        signature = signature[:-2] + "A="
    assert not signature_valid(token, url, params, signature)


@pytest.mark.parametrize("signature", [None, "", "é" * 28, "x" * 10_000, "0/KCTR6DLpKmkAf8muzZqo1nDgQ"])
def test_odd_signatures_are_false_never_an_error(signature: str | None) -> None:
    assert not signature_valid("12345", URL, example("+12349013030"), signature)
