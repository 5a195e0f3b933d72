"""How the short Whisper window is sized, and how its repetition loop is undone.

Whisper trained on 30 s windows tends, through a 15 s one, to say the sentence again and be
cut off by the length cap. These are the pure rules around that; the recogniser itself is
heard in tests/integration/test_voice_engines.py.
"""

from __future__ import annotations

import pytest

from voice.engines.whisper import FULL_WINDOW_S, SHORT_WINDOW_MIN_S, _window_s, _without_loops, _without_repeats


@pytest.mark.parametrize(
    ("seconds", "window"),
    [
        (0.4, SHORT_WINDOW_MIN_S),
        (2.0, SHORT_WINDOW_MIN_S),
        (14.0, SHORT_WINDOW_MIN_S),
        (14.5, 16),
        (20.2, 22),
        (29.5, FULL_WINDOW_S),
    ],
)
def test_the_window_is_at_least_fifteen_seconds_with_a_second_of_room(seconds: float, window: int) -> None:
    assert _window_s(seconds) == window


@pytest.mark.parametrize(
    ("heard", "meant"),
    [
        ("Turn on the bedroom light. Turn on the bedroom light. Turn on the", "Turn on the bedroom light."),
        ("Yori is playing some jazz. Yori is playing some", "Yori is playing some jazz."),
        ("No. No. No.", "No."),
        ("What can you do? What can you do?", "What can you do?"),
        ("Turn on the living room light Turn on the living room light Turn on the", "Turn on the living room light"),
    ],
)
def test_a_sentence_repeated_whole_or_cut_short_is_kept_once(heard: str, meant: str) -> None:
    assert _without_repeats(heard) == meant


@pytest.mark.parametrize(
    "said",
    [
        "Turn on the light. Then turn off the heater.",
        "Thank you. Thanks a lot!",
        "Play jazz. Play it louder.",  # starts alike, says something else
        "I think I",
        "Bye bye.",
        "That is very very good.",
        "Turn on the, turn on the light.",
        "",
    ],
)
def test_different_sentences_are_all_kept(said: str) -> None:
    assert _without_repeats(said) == said


@pytest.mark.parametrize(
    ("heard", "meant"),
    [
        ("Ava, Zee, Zee, Zee, Zee, Zee, Zee,", "Ava, Zee"),  # the prompt's names looping
        ("no no no", "no"),
        ("no, no", "no, no"),  # twice is a person
        ("turn on the bedroom light", "turn on the bedroom light"),
        ("", ""),
    ],
)
def test_one_word_looping_is_kept_once(heard: str, meant: str) -> None:
    assert _without_loops(heard) == meant
