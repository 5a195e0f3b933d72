"""Where the neural voice splits a sentence so its first words come sooner.

Only the first clause is spoken apart, only when enough follows it, and only at a clause
mark between words (never inside "3:30" or "1,000"); the clause ends on a comma's pause and
the sentence keeps its emotion's pause at the end.
"""

from __future__ import annotations

import pytest

from voice.engines.hibari import CLAUSE_PAUSE_MS, clauses
from voice.prosody import SpokenSegment


def test_the_first_clause_is_spoken_apart_with_a_commas_pause() -> None:
    sentence = SpokenSegment(text="Done, the bedroom light is on.", rate=1.2, pitch=1.1, gain=0.8, pause_ms=300)
    head, rest = clauses(sentence)
    assert head == SpokenSegment("Done,", 1.2, 1.1, 0.8, CLAUSE_PAUSE_MS)
    assert rest == SpokenSegment("the bedroom light is on.", 1.2, 1.1, 0.8, 300)


@pytest.mark.parametrize(
    "text",
    [
        "Okay, done.",  # too little follows
        "The meeting starts at 3:30 in the small room.",  # a time, not a clause
        "That costs 1,000 rupiah for the whole month.",  # a number
        "Turn on the bedroom light please.",  # no clause at all
        "",
    ],
)
def test_a_sentence_without_a_worthwhile_clause_stays_whole(text: str) -> None:
    sentence = SpokenSegment(text=text)
    assert clauses(sentence) == [sentence]


def test_only_the_first_clause_is_split_off() -> None:
    head, rest = clauses(SpokenSegment(text="Sure: first the lights, then the curtain, then music."))
    assert head.text == "Sure:" and rest.text == "first the lights, then the curtain, then music."
