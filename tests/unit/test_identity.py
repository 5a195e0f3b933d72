from __future__ import annotations

import pytest

from chat import LocalTokens
from chat.errors import Unauthorized

SECRET = b"s" * 32


async def test_a_token_names_its_person() -> None:
    tokens = LocalTokens(SECRET, ttl_s=60)
    assert await tokens.verify(tokens.issue("usr_1")) == "usr_1"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
        lambda t: t.replace("usr_1", "usr_2"),
        lambda t: "v9" + t[2:],
        lambda t: t + ".x",
        lambda t: "",
    ],
)
async def test_tampered_tokens_are_refused(mutate: object) -> None:
    tokens = LocalTokens(SECRET, ttl_s=60)
    with pytest.raises(Unauthorized):
        await tokens.verify(mutate(tokens.issue("usr_1")))  # type: ignore[operator]


async def test_another_servers_secret_does_not_verify() -> None:
    mine, theirs = LocalTokens(SECRET, ttl_s=60), LocalTokens(b"t" * 32, ttl_s=60)
    with pytest.raises(Unauthorized):
        await mine.verify(theirs.issue("usr_1"))


async def test_expired_tokens_are_refused() -> None:
    tokens = LocalTokens(SECRET, ttl_s=60)
    with pytest.raises(Unauthorized, match="expired"):
        await tokens.verify(tokens.issue("usr_1", now=1000))
