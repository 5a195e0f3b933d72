"""What a person says while the speech model is still loading is heard once it has loaded,
not dropped: the first call after a cold start, on a loaded machine, used to hear nothing
when the model took longer to load than Whisper's time for one utterance
(voice/engines/whisper.py, docs/scaling.md#cold-start)."""

from __future__ import annotations

import asyncio

import pytest
from pipecat.frames.frames import ErrorFrame, Frame, TranscriptionFrame

from voice.engines import whisper
from voice.engines.whisper import WhisperSTTService

SAID = "turn on the bedroom light"


def _transcribe(*_args: object, **_kwargs: object) -> str:
    """Whisper's part, without its cost: it takes the model (waiting while it loads)."""
    whisper.whisper_model()
    return SAID


async def test_an_utterance_said_while_the_model_loads_is_heard_once_it_has_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stt = WhisperSTTService()
    stt._sample_rate = whisper.WHISPER_RATE  # as the pipeline's start sets it
    monkeypatch.delitem(whisper._models, stt.recogniser.model, raising=False)  # not loaded yet
    monkeypatch.setattr(whisper, "transcribe_pcm16", _transcribe)
    # An utterance gets far less time than the model takes to load here.
    monkeypatch.setattr(whisper, "TRANSCRIBE_TIMEOUT_S", 0.05)
    whisper._model_lock.acquire()  # the model is loading (preload_whisper holds this lock)
    try:
        frames: list[Frame] = []

        async def hear() -> None:
            frames.extend([frame async for frame in stt.run_stt(bytes(16_000 * 2)) if frame is not None])

        heard = asyncio.create_task(hear())
        await asyncio.sleep(0.5)  # ten times the utterance's time: it would have been dropped by now
        assert not heard.done(), frames
        monkeypatch.setattr(whisper, "TRANSCRIBE_TIMEOUT_S", 20.0)  # the utterance's own time, from now
        monkeypatch.setitem(whisper._models, stt.recogniser.model, object())  # the model has loaded
    finally:
        whisper._model_lock.release()
    await asyncio.wait_for(heard, 30)
    assert not [f for f in frames if isinstance(f, ErrorFrame)], frames
    assert [f.text for f in frames if isinstance(f, TranscriptionFrame)] == [SAID]
