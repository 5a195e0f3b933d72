"""`FinishedWordsStop` on its own: frames in, a turn end out, on a clock the test moves.

The waits are real asyncio sleeps of the strategy's own (0.05 s and 0.5 s here), so the
tests wait a little; the clock the strategy reads is the test's, which is what makes the
decisions (how long the person has been quiet) exact."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from pipecat.frames.frames import (
    InputAudioRawFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.utils.asyncio.task_manager import TaskManager

from tests.unit.turn_end_strategy import FINISHED_S, UNFINISHED_S
from tests.unit.turn_end_strategy import Clock as _Clock
from tests.unit.turn_end_strategy import strategy as _strategy
from voice.pipeline import TurnTiming, turn_stop
from voice.turn_end import AUDIO_STALL_S, FinishedWordsStop


def _words(text: str) -> TranscriptionFrame:
    return TranscriptionFrame(text=text, user_id="u", timestamp="", finalized=True)


async def _settle(seconds: float) -> None:
    await asyncio.sleep(seconds)


async def _audio(stop: FinishedWordsStop, seconds: float) -> None:
    """`seconds` of the person's audio reaching the turn, in 20 ms frames of 16 kHz."""
    for _ in range(round(seconds / 0.02)):
        await stop.process_frame(InputAudioRawFrame(audio=b"\x00\x00" * 320, sample_rate=16_000, num_channels=1))


async def test_finished_words_end_the_turn_after_the_short_wait() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("Turn on the bedroom light."))
    assert ended == []  # quiet for 0 s of the 0.05 s wait
    clock.now += FINISHED_S
    await _settle(FINISHED_S * 2)
    assert ended == ["Turn on the bedroom light."]
    assert stop.ends == {"finished": 1, "unfinished": 0}


async def test_a_transcript_that_comes_after_the_wait_ends_the_turn_at_once() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    clock.now += 0.2  # Whisper was slow: the short wait is long over
    await _settle(FINISHED_S * 2)
    assert ended == []  # no words yet: nothing to end
    await stop.process_frame(_words("Thank you."))
    assert ended == ["Thank you."]


async def test_trailing_words_wait_long_and_speaking_again_cancels_the_wait() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("Remind me to"))
    clock.now += FINISHED_S * 2
    await _settle(FINISHED_S * 2)
    assert ended == []  # "to" cannot end a request: the long wait runs
    await stop.process_frame(VADUserStartedSpeakingFrame())  # they go on
    clock.now += UNFINISHED_S
    await _settle(UNFINISHED_S + 0.1)
    assert ended == []  # the wait was cancelled by the speech, not run out
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("stretch in two minutes."))
    clock.now += FINISHED_S
    await _settle(FINISHED_S * 2)
    assert ended == ["Remind me to stretch in two minutes."]


async def test_trailing_words_alone_end_the_turn_after_the_long_wait() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("Turn on the"))
    clock.now += UNFINISHED_S
    await _settle(UNFINISHED_S + 0.1)
    assert ended == ["Turn on the"]  # Ava asks which one rather than waiting for ever
    assert stop.ends == {"finished": 0, "unfinished": 1}


async def test_the_next_turn_starts_from_nothing() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)
    for said in ("Hello.", "Good morning."):
        await stop.handle_user_turn_started()
        await stop.process_frame(VADUserStartedSpeakingFrame())
        await stop.process_frame(VADUserStoppedSpeakingFrame())
        await stop.process_frame(_words(said))
        clock.now += FINISHED_S
        await _settle(FINISHED_S * 2)
    assert ended == ["Hello.", "Good morning."]


class _Foresight:
    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    def heard(self, text: str) -> None:
        self.told.append(("heard", text))

    def resumed(self) -> None:
        self.told.append(("resumed", ""))


async def test_finished_words_are_foreseen_while_the_turn_waits_and_withdrawn_when_the_person_goes_on() -> None:
    clock, foresight = _Clock(), _Foresight()
    stop = FinishedWordsStop(finished_s=FINISHED_S, unfinished_s=UNFINISHED_S, clock=clock, foresight=foresight)
    await stop.setup(SimpleNamespace(task_manager=TaskManager()))  # type: ignore[arg-type]
    await stop.handle_user_turn_started()
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("turn on the"))
    assert foresight.told == [], "words that trail off are not foreseen"
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("bedroom light."))
    assert foresight.told == [("heard", "turn on the bedroom light.")]
    await stop.process_frame(VADUserStartedSpeakingFrame())  # and on they go
    assert foresight.told[-1] == ("resumed", "")
    await stop.cleanup()


async def test_a_recognisers_guess_is_foreseen_with_the_words_heard_before_it() -> None:
    clock, foresight = _Clock(), _Foresight()
    stop = FinishedWordsStop(finished_s=FINISHED_S, unfinished_s=UNFINISHED_S, clock=clock, foresight=foresight)
    await stop.setup(SimpleNamespace(task_manager=TaskManager()))  # type: ignore[arg-type]
    await stop.handle_user_turn_started()
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("turn on the"))
    await stop.process_frame(VADUserStartedSpeakingFrame())
    guesses = stop.guesses()
    guesses.heard("and")  # a guess at a breath: "turn on the and" trails off, not foreseen
    assert foresight.told == []
    guesses.heard("bedroom light.")  # Whisper's guess at the pause, before the VAD's stop
    assert foresight.told == [("heard", "turn on the bedroom light.")]
    guesses.resumed()  # and on they go
    assert foresight.told[-1] == ("resumed", "")
    await stop.cleanup()


async def test_a_server_behind_the_audio_waits_for_the_audio_before_ending_the_turn() -> None:
    # The wall's clock has run past the long wait, but only 0.1 s of the audio after the
    # stop has reached the turn (the rest queues behind Whisper on a loaded machine): the
    # person's next words may be in it, so the turn waits for the audio.
    clock = _Clock()
    stop, ended = await _strategy(clock)
    await _audio(stop, 0.2)
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await _audio(stop, 0.6)
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("Turn on the"))
    await _audio(stop, 0.1)
    clock.now += UNFINISHED_S + 0.2
    await _settle(UNFINISHED_S + 0.1)
    assert ended == []
    await _audio(stop, 0.2)  # the queued audio: the pause went on a little longer
    assert ended == []
    await stop.process_frame(VADUserStartedSpeakingFrame())  # then the person went on
    await _audio(stop, 0.6)
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("living room light."))
    clock.now += FINISHED_S
    await _audio(stop, FINISHED_S)
    await _settle(FINISHED_S * 2)
    assert ended == ["Turn on the living room light."]


async def test_audio_that_catches_up_ends_the_wait_it_held() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)
    await _audio(stop, 0.2)
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("Turn on the"))
    clock.now += UNFINISHED_S + 0.2
    await _settle(UNFINISHED_S + 0.1)
    assert ended == []  # the wall's wait ran out, but no audio since the stop reached the turn
    await _audio(stop, UNFINISHED_S)  # the whole wait's quiet arrives, late
    await _settle(FINISHED_S)
    assert ended == ["Turn on the"]


async def test_audio_that_stops_coming_holds_the_wait_only_so_long() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)
    await _audio(stop, 0.2)
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("Turn on the bedroom light."))
    clock.now += FINISHED_S
    await _settle(FINISHED_S * 2)
    assert ended == []  # the audio's clock stands still
    clock.now += AUDIO_STALL_S
    await _settle(AUDIO_STALL_S + 0.1)
    assert ended == ["Turn on the bedroom light."]


async def test_a_calls_finished_words_end_the_turn_the_moment_they_are_in_after_the_stop() -> None:
    # The product's timing waits nothing after the stop for words that sound finished: the
    # VAD hears someone go on only after 0.1 s of their voice, later than such a wait ended
    # (voice/turn_end.py). Words that trail off still get the long wait.
    stop, ended = await _strategy(_Clock(), turn_stop(TurnTiming()))
    await _audio(stop, 0.2)
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await _audio(stop, 0.6)
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await _audio(stop, 0.06)  # Whisper's guess comes in a little after the stop
    await stop.process_frame(_words("Turn on the bedroom light."))
    assert ended == ["Turn on the bedroom light."]  # no sleep: ended as the words came

    await stop.handle_user_turn_started()
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await _audio(stop, 0.6)
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(_words("Remind me to"))
    assert ended == ["Turn on the bedroom light."]
    assert stop.ends == {"finished": 1, "unfinished": 0}
    await stop.cleanup()
