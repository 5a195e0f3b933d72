"""The end of the person's turn follows their words: a request that sounds finished ends
after a short wait, one that trails off ("turn on the ...") is given time to go on.

A real Silero VAD, a real Whisper and the call's own turn-stop strategy (`turn_stop`) in
Pipecat's user aggregator, fed espeak-ng speech at a microphone's pace; only the
transport is missing. The door-level version is in tests/e2e/test_speaker.py.
"""

from __future__ import annotations

import pytest
from pipecat.frames.frames import Frame, InputAudioRawFrame, LLMContextFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.tests.utils import SleepFrame, run_test
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from tests.fakes.speech import silence, speech_pcm16
from voice.agent import last_user_text
from voice.engines.whisper import WhisperSTTService, preload_whisper
from voice.pipeline import TurnTiming, call_vad, turn_stop
from voice.turn_end import FinishedWordsStop, sounds_finished

RATE = 16_000
STEP = int(RATE * 0.02) * 2


async def _turns(pcm: bytes, timing: TurnTiming) -> tuple[FinishedWordsStop, list[str]]:
    preload_whisper()
    stt = WhisperSTTService()
    stop = turn_stop(timing)
    user_turns = LLMContextAggregatorPair(
        LLMContext(),
        user_params=LLMUserAggregatorParams(
            vad_analyzer=call_vad(timing, stt), user_turn_strategies=UserTurnStrategies(stop=[stop])
        ),
    )
    frames: list[Frame] = []
    for i in range(0, len(pcm), STEP):
        frames += [InputAudioRawFrame(pcm[i : i + STEP], RATE, 1), SleepFrame(sleep=0.02)]
    down, _ = await run_test(
        Pipeline([stt, user_turns.user()]),
        frames_to_send=[*frames, SleepFrame(sleep=3.0)],
        pipeline_params=PipelineParams(audio_in_sample_rate=RATE),
    )
    return stop, [last_user_text(f) for f in down if isinstance(f, LLMContextFrame)]


async def _searching_for_a_word() -> bytes:
    """'remind me to', 0.55 s of quiet while the person looks for the words (espeak-ng ends
    its speech with 0.3 s of its own), 'stretch in two minutes'."""
    head = await speech_pcm16("remind me to")
    return silence(0.5) + head + silence(0.25) + await speech_pcm16("stretch in two minutes") + silence(1.0)


async def test_a_person_searching_for_a_word_is_waited_for_and_the_turn_has_every_word() -> None:
    stop, turns = await _turns(await _searching_for_a_word(), TurnTiming())

    assert len(turns) == 1, turns
    heard = turns[0].lower()
    assert "remind me to" in heard and "minutes" in heard, heard
    assert stop.ends == {"finished": 1, "unfinished": 0}  # "... minutes" ended it, not "to"


async def test_one_fixed_short_wait_cuts_the_same_person_off_at_the_article() -> None:
    # One fixed wait after the VAD's stop, whatever was said: too short for someone still searching for a word.
    fixed = TurnTiming(speech_timeout_s=0.3, finished_timeout_s=0.3)
    _, turns = await _turns(await _searching_for_a_word(), fixed)

    assert len(turns) == 2, turns  # "remind me to" went to Ava alone


async def test_a_finished_request_ends_on_the_short_wait() -> None:
    stop, turns = await _turns(
        silence(0.5) + await speech_pcm16("turn off the living room light") + silence(1.5), TurnTiming()
    )

    assert len(turns) == 1 and "living room" in turns[0].lower(), turns
    assert stop.ends == {"finished": 1, "unfinished": 0}


@pytest.mark.parametrize(
    ("text", "language", "finished"),
    [
        ("Turn on the bedroom light.", "en", True),
        ("Turn on the living room light", "en", True),  # Whisper often leaves the full stop off
        ("What can you do?", "en", True),
        ("Thanks a lot.", "en", True),
        ("Okay, goodbye.", "en", True),
        ("turn on the", "en", False),
        ("Remind me to", "en", False),
        ("Play some jazz and", "en", False),
        ("I want to...", "en", False),
        ("So, um", "en", False),
        ("Okay,", "en", False),
        ("Set it to 22.", "en", True),
        ("Tolong matikan semua lampu.", "id", True),
        ("Nyalakan lampu di", "id", False),
        ("Ingatkan aku untuk", "id", False),
        ("", "en", False),
    ],
)
def test_which_words_sound_finished(text: str, language: str, finished: bool) -> None:
    assert sounds_finished(text, language) is finished
