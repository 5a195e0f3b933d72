"""The server's secret keys: from settings, or made once and kept under AVAGENC_HOME.

A local install works with no secret configured, so each key it needs is generated the
first time and kept in a file only its owner can read; every later start, and every
command-line verb, reads the same file, so tokens issued before a restart stay valid.
Keys derived from the session secret are derived exactly as they always were, for the
same reason.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Callable

from pydantic import SecretStr

from agents import TokenCipher
from settings import Settings


def kept_key(settings: Settings, name: str, *, given: SecretStr | None, new: Callable[[], bytes]) -> bytes:
    """`given` when set; otherwise the key in AVAGENC_HOME/`name`, made with `new` (mode
    0600, from the moment it exists) when there is none yet."""
    if given is not None:
        return given.get_secret_value().encode()
    path = settings.avagenc_home / name
    if not path.exists():
        settings.avagenc_home.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(new())
        path.chmod(0o600)
    return path.read_bytes().strip()


def session_secret(settings: Settings) -> bytes:
    """The HMAC key for local tokens."""
    return kept_key(
        settings, "session_secret", given=settings.session_secret, new=lambda: secrets.token_hex(32).encode()
    )


def integration_key(settings: Settings) -> bytes:
    """The Fernet key sealing refresh tokens."""
    return kept_key(settings, "integration_key", given=settings.integration_token_key, new=TokenCipher.new_key)


def callback_secret(settings: Settings) -> bytes:
    """The key signing the embedded queue's delivery callbacks: from settings, or derived
    from the session secret, apart from it by its label."""
    if settings.reminders_callback_secret is not None:
        return settings.reminders_callback_secret.get_secret_value().encode()
    return hmac.new(session_secret(settings), b"reminders-callback", hashlib.sha256).hexdigest().encode()
