"""What counts as blank (docs/data.md#blank-text): a reply of only whitespace, control characters or
Unicode format characters (zero-width spaces, BOM, direction marks) is no reply. And
what no thread can keep at all (NUL, lone surrogates): refused at the edge, never saved."""

from __future__ import annotations

import unicodedata


def is_blank(text: str) -> bool:
    return all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp") for ch in text)


def is_unkeepable(text: str) -> bool:
    """Text no thread can store or send back as UTF-8: a NUL (PostgreSQL text refuses
    it) or a lone surrogate (half of a UTF-16 pair, which JSON's `\\ud800` can carry)."""
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
