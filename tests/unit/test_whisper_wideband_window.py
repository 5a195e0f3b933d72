"""Full-band English is heard through a 10 s window, a phone line and Indonesian through 15 s
(voice/engines/whisper.py; BENCHMARKS.md, "Toward 300 ms offline"), and the setting that
moves the first refuses windows Whisper was never measured on."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from settings import Settings
from voice.engines import whisper
from voice.engines.offline import offline_engines
from voice.engines.whisper import SHORT_WINDOW_MIN_S, Recogniser, WhisperSTTService


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The (model, window minimum) of every short decode, the model never run."""
    heard: list[tuple[str, int]] = []

    def decode_short(
        samples: np.ndarray, recogniser: Recogniser, min_window_s: int = SHORT_WINDOW_MIN_S, prompt_text: str = ""
    ) -> tuple[str, float]:
        heard.append((recogniser.model, min_window_s))
        return "turn on the bedroom light", -0.1

    monkeypatch.setattr(whisper, "decode_short", decode_short)
    for name in ("tiny.en", "base"):
        monkeypatch.setitem(whisper._models, name, object())  # loaded
    return heard


async def _hear(stt: WhisperSTTService) -> None:
    stt._sample_rate = whisper.WHISPER_RATE  # as the pipeline's start sets it
    _ = [frame async for frame in stt.run_stt(bytes(2 * 16_000 * 2))]


async def test_a_full_band_english_call_is_heard_through_ten_seconds(windows: list[tuple[str, int]]) -> None:
    engines, _ = offline_engines(tts="espeak", transforms=[])
    stt = engines.stt()
    assert isinstance(stt, WhisperSTTService)
    await _hear(stt)
    assert windows == [("tiny.en", 10)]


async def test_the_setting_gives_the_window(windows: list[tuple[str, int]]) -> None:
    engines, _ = offline_engines(tts="espeak", transforms=[], window_min_s=15)
    stt = engines.stt()
    assert isinstance(stt, WhisperSTTService)
    await _hear(stt)
    assert windows == [("tiny.en", 15)]


async def test_a_phone_line_keeps_fifteen_seconds(windows: list[tuple[str, int]]) -> None:
    engines, _ = offline_engines(tts="espeak", transforms=[])
    stt = engines.stt()
    assert isinstance(stt, WhisperSTTService)
    stt.hear_narrowband()
    await _hear(stt)
    assert windows == [("tiny.en", 15)]


async def test_indonesian_keeps_fifteen_seconds(
    windows: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(whisper, "preload_whisper", lambda *_: None)  # the base model is never joined here
    engines, _ = offline_engines(tts="espeak", transforms=[])
    stt = engines.stt_by_language["id"]()
    assert isinstance(stt, WhisperSTTService)
    await _hear(stt)
    assert windows == [("base", 15)]


def test_the_setting_refuses_a_window_whisper_repeats_itself_in() -> None:
    assert Settings(_env_file=None).voice_whisper_window_min_s == 10  # type: ignore[call-arg]
    for wrong in (9, 31):
        with pytest.raises(ValidationError, match="voice_whisper_window_min_s"):
            Settings(_env_file=None, voice_whisper_window_min_s=wrong)  # type: ignore[call-arg]
