"""An utterance whose time ran out while it waited for Whisper is never transcribed: on an
overloaded instance (10 offline calls on 2 cores) transcriptions queued in threads went on
hearing utterances nobody waited for any more, each making the next one later, until no
call was answered (voice/engines/whisper.py, BENCHMARKS.md "Load with calls")."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pipecat.frames.frames import ErrorFrame, Frame, TranscriptionFrame

from voice.engines import whisper
from voice.engines.whisper import WhisperSTTService


async def test_an_utterance_that_timed_out_waiting_for_the_model_is_never_transcribed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    heard: list[int] = []
    model = threading.Lock()  # the model's one worker: what reaches it waits its turn, in a thread
    busy = threading.Event()  # the first utterance holds the model until this is set

    def transcribe(audio: bytes, *_args: object, **_kwargs: object) -> str:
        with model:
            heard.append(len(audio))
            if len(heard) == 1:
                busy.wait(10)
            return f"utterance of {len(audio)} bytes"

    monkeypatch.setattr(whisper, "transcribe_pcm16", transcribe)
    monkeypatch.setitem(whisper._models, whisper.TINY_EN.model, object())  # loaded
    monkeypatch.setattr(whisper, "_workers", 1)

    async def say(stt: WhisperSTTService, seconds: int) -> list[Frame]:
        return [frame async for frame in stt.run_stt(bytes(16_000 * 2 * seconds)) if frame is not None]

    first, second, third = WhisperSTTService(), WhisperSTTService(), WhisperSTTService()
    for stt in (first, second, third):
        stt._sample_rate = whisper.WHISPER_RATE  # as the pipeline's start sets it
    holding = asyncio.create_task(say(first, 1))
    while not heard:
        await asyncio.sleep(0.01)
    monkeypatch.setattr(whisper, "TRANSCRIBE_TIMEOUT_S", 0.2)
    timed_out = await say(second, 2)  # waits behind the first, and gives up
    assert [f for f in timed_out if isinstance(f, ErrorFrame)], timed_out
    monkeypatch.setattr(whisper, "TRANSCRIBE_TIMEOUT_S", 20.0)
    busy.set()
    assert [f.text for f in await holding if isinstance(f, TranscriptionFrame)] == ["utterance of 32000 bytes"]
    after = await say(third, 3)
    assert [f.text for f in after if isinstance(f, TranscriptionFrame)] == ["utterance of 96000 bytes"]
    assert heard == [32_000, 96_000]  # the second utterance never reached the model
