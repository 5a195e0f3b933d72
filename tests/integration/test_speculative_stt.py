"""Speculative transcription: Whisper starts when the person falls quiet, and what it began
is thrown away when they go on talking; a guess whose words sound finished is told to the
call's foresight the moment it is in (Ava's first model call begins on it), and withdrawn
when the person goes on.

A real Silero VAD (the pipeline's `PauseAwareVAD`) decides pauses from real espeak-ng
speech; a real Whisper transcribes; the user aggregator ends the turn as in a call. Only
the transport is missing: the audio frames are sent straight into the STT.
"""

from __future__ import annotations

from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.frames.frames import Frame, InputAudioRawFrame, LLMContextFrame, TranscriptionFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.tests.utils import SleepFrame, run_test
from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from tests.fakes.speech import silence, speech_pcm16
from voice.agent import last_user_text
from voice.engines.whisper import WhisperSTTService, preload_whisper
from voice.pipeline import PauseAwareVAD

RATE = 16_000
STEP = int(RATE * 0.02) * 2  # 20 ms frames, as a microphone sends them
VAD_STOP_S = 0.5  # long enough that a breath between two phrases is a pause, not a stop


def _frames(pcm: bytes) -> list[Frame]:
    """20 ms audio frames at the pace of a microphone (the VAD's news must reach the STT
    while the audio still flows, as in a call)."""
    frames: list[Frame] = []
    for i in range(0, len(pcm), STEP):
        frames += [InputAudioRawFrame(pcm[i : i + STEP], RATE, 1), SleepFrame(sleep=0.02)]
    return frames


class _Foresight:
    """What the call's foresight was told, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    def heard(self, text: str) -> None:
        self.told.append(("heard", text))

    def resumed(self) -> None:
        self.told.append(("resumed", ""))


async def _hear(pcm: bytes, foresight: _Foresight | None = None) -> tuple[WhisperSTTService, list[str]]:
    """Run the audio through STT + VAD + turn end; the STT and the text of each turn."""
    preload_whisper()
    stt = WhisperSTTService()
    if foresight is not None:
        stt.set_foresight(foresight)
    user_turns = LLMContextAggregatorPair(
        LLMContext(),
        user_params=LLMUserAggregatorParams(
            vad_analyzer=PauseAwareVAD(listener=stt, params=VADParams(stop_secs=VAD_STOP_S)),
            user_turn_strategies=UserTurnStrategies(stop=[SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=0.3)]),
        ),
    )
    down, _ = await run_test(
        Pipeline([stt, user_turns.user()]),
        frames_to_send=[*_frames(pcm), SleepFrame(sleep=4.0)],
        pipeline_params=PipelineParams(audio_in_sample_rate=RATE),
    )
    assert not [f for f in down if isinstance(f, TranscriptionFrame)], "the aggregator takes every transcript"
    return stt, [last_user_text(f) for f in down if isinstance(f, LLMContextFrame)]


async def test_a_pause_then_more_words_discards_the_speculation_and_the_turn_has_everything() -> None:
    first = await speech_pcm16("turn on the bedroom light")  # ends in ~0.3 s of its own silence
    second = await speech_pcm16("and play some jazz")
    foresight = _Foresight()
    stt, turns = await _hear(silence(0.5) + first + second + silence(1.5), foresight)

    assert stt.speculations["discarded"] >= 1, stt.speculations  # begun at the breath, then dropped
    assert stt.speculations["used"] <= 1
    assert len(turns) == 1, turns
    heard = turns[0].lower()
    assert "bedroom" in heard and "jazz" in heard, heard  # the whole utterance, not its first half
    # A guess told at the breath was withdrawn when the person went on (none left standing).
    heard_at = [i for i, (what, _) in enumerate(foresight.told) if what == "heard"]
    assert all(("resumed", "") in foresight.told[i:] for i in heard_at[:-1]), foresight.told


async def test_an_utterance_that_ends_uses_the_speculative_transcript() -> None:
    foresight = _Foresight()
    stt, turns = await _hear(silence(0.5) + await speech_pcm16("turn on the bedroom light") + silence(1.5), foresight)

    assert stt.speculations == {"started": 1, "used": 1, "discarded": 0}
    assert len(turns) == 1 and "bedroom" in turns[0].lower()
    # The guess was told before the turn ended, in the words the turn then ended on.
    assert foresight.told == [("heard", turns[0])], foresight.told
