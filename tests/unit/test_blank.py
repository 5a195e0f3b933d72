from __future__ import annotations

import pytest

from chat.blank import is_blank


@pytest.mark.parametrize("text", ["", " ", "\n\t", "\u200b", "\ufeff", "\u200e\u200f", "\u2028", "\x00\x07", "\u00a0 "])
def test_blank(text: str) -> None:
    assert is_blank(text)


@pytest.mark.parametrize("text", ["a", " . ", "\u200bhi", "🙂", "#"])
def test_not_blank(text: str) -> None:
    assert not is_blank(text)
