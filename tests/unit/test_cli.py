"""The command line's own behaviour that needs no database: which log lines reach the
terminal, and what `wallet verify` says about a state folder that holds no database."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import cli


@pytest.fixture
def fresh_logging() -> Iterator[None]:
    """The root logger's handlers and level as they were, after the test."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    levels = {name: logging.getLogger(name).level for name in ("httpx", "httpcore")}
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.usefixtures("fresh_logging")
def test_the_chat_shows_no_library_info_lines() -> None:
    cli._configure_logging("chat")
    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)
    assert not logging.getLogger("avagenc").isEnabledFor(logging.INFO)
    assert logging.getLogger("avagenc").isEnabledFor(logging.WARNING)


@pytest.mark.usefixtures("fresh_logging")
def test_the_server_narrates_its_own_lines_but_not_httpx() -> None:
    cli._configure_logging("serve")
    assert logging.getLogger("avagenc").isEnabledFor(logging.INFO)
    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)


def test_wallet_verify_on_a_folder_without_a_database_says_so_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "nothing-here"
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("AVAGENC_HOME", str(state))
    with pytest.raises(SystemExit) as exited:
        cli.main(["wallet", "verify"])
    assert exited.value.code == 2
    assert "avagenc migrate" in capsys.readouterr().err
    assert not state.exists()


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"VOICE_SPEECH_TIMEOUT_S": "soon"}, "setting VOICE_SPEECH_TIMEOUT_S: Input should be a valid number"),
        ({"PORT": "-1"}, "setting PORT:"),
        ({"LOG_FORMAT": "xml"}, "setting LOG_FORMAT: Input should be 'plain' or 'json'"),
        ({"METRICS_TOKEN": "short"}, "setting METRICS_TOKEN: Value should have at least 16 items"),
        ({"TRACES_OTLP_ENDPOINT": "collector:4318"}, "setting TRACES_OTLP_ENDPOINT: String should match pattern"),
        (
            {"VOICE_FINISHED_TIMEOUT_S": "2", "VOICE_SPEECH_TIMEOUT_S": "1"},
            "setting VOICE_FINISHED_TIMEOUT_S must not exceed VOICE_SPEECH_TIMEOUT_S",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_it_and_exit_2(
    env: dict[str, str],
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AVAGENC_HOME", str(tmp_path / "state"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        cli.main(["wallet", "verify"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err
    assert not (tmp_path / "state").exists()  # nothing was started or created
