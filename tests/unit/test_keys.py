"""Secret keys are made once, readable by their owner only, and read back the same on every
start; keys derived from the session secret are derived as they always were, so tokens and
signatures issued before a restart (or an upgrade) stay valid."""

from __future__ import annotations

import hashlib
import hmac
import stat
from pathlib import Path

from pydantic import SecretStr

from agents import TokenCipher
from app.keys import callback_secret, integration_key, session_secret
from settings import Settings


def settings_in(home: Path, **values: SecretStr) -> Settings:
    return Settings(_env_file=None, avagenc_home=home, **values)  # type: ignore[call-arg, arg-type]


def test_a_key_is_made_once_with_mode_0600_and_read_back_the_same(tmp_path: Path) -> None:
    settings = settings_in(tmp_path / "home")
    first = session_secret(settings)
    assert len(first) == 64 and int(first, 16) >= 0  # 32 random bytes, in hex
    assert session_secret(settings) == first
    path = tmp_path / "home" / "session_secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = integration_key(settings)
    assert integration_key(settings) == key
    TokenCipher(key)  # a usable Fernet key
    assert stat.S_IMODE((tmp_path / "home" / "integration_key").stat().st_mode) == 0o600


def test_a_key_written_before_is_read_as_it_was(tmp_path: Path) -> None:
    tmp_path.joinpath("session_secret").write_text("ab" * 32 + "\n")
    assert session_secret(settings_in(tmp_path)) == ("ab" * 32).encode()


def test_a_configured_key_wins_and_nothing_is_written(tmp_path: Path) -> None:
    settings = settings_in(tmp_path, session_secret=SecretStr("configured-" + "x" * 30))
    assert session_secret(settings) == ("configured-" + "x" * 30).encode()
    assert not (tmp_path / "session_secret").exists()


def test_the_callback_secret_is_derived_from_the_session_secret_unless_configured(tmp_path: Path) -> None:
    settings = settings_in(tmp_path, session_secret=SecretStr("s" * 40))
    expected = hmac.new(b"s" * 40, b"reminders-callback", hashlib.sha256).hexdigest().encode()
    assert callback_secret(settings) == expected
    given = settings_in(tmp_path, session_secret=SecretStr("s" * 40), reminders_callback_secret=SecretStr("c" * 40))
    assert callback_secret(given) == b"c" * 40
