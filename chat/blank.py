"""What counts as blank (SPEC §3): a reply of only whitespace, control characters or
Unicode format characters (zero-width spaces, BOM, direction marks) is no reply."""

from __future__ import annotations

import unicodedata


def is_blank(text: str) -> bool:
    return all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp") for ch in text)
