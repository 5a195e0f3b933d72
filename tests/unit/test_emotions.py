"""Parsing Ava's spoken replies: tags colour the sentence before them, #end# ends the
call, and no '#' survives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agents import EMOTIONS, Segment, parse_spoken


def test_a_tag_colours_the_sentence_before_it() -> None:
    reply = parse_spoken("Phew, that worked! #relieved# I told you so. #smug#")
    assert reply.segments == (Segment("Phew, that worked!", "relieved"), Segment("I told you so.", "smug"))
    assert reply.text == "Phew, that worked! I told you so."
    assert reply.emotions == ("relieved", "smug")
    assert not reply.end_call


def test_only_the_last_sentence_before_a_tag_takes_it() -> None:
    reply = parse_spoken("Okay. The light is on now #relieved#")
    assert reply.segments == (Segment("Okay.", None), Segment("The light is on now", "relieved"))


def test_end_marks_the_goodbye_and_is_never_spoken() -> None:
    reply = parse_spoken("Okay, get some rest. I'm here whenever you need me #affectionate# #end#")
    assert reply.end_call
    assert reply.text == "Okay, get some rest. I'm here whenever you need me"
    assert reply.segments[-1].emotion == "affectionate"


def test_unknown_tags_are_dropped_silently() -> None:
    reply = parse_spoken("Yay #happy# really #ECSTATIC# and #1 fan")
    assert reply.segments == (Segment("Yay", None), Segment("really", "ecstatic"), Segment("and 1 fan", None))


def test_forbidden_characters_are_removed() -> None:
    reply = parse_spoken("Here (quietly) [now] \\ *bold* #neutral#")
    assert reply.text == "Here quietly now bold"


def test_a_reply_of_only_tags_is_empty() -> None:
    reply = parse_spoken("#relieved# #end#")
    assert reply.segments == () and reply.end_call and reply.text == ""


@given(st.text(max_size=300))
def test_no_hash_ever_survives(text: str) -> None:
    reply = parse_spoken(text)
    assert "#" not in reply.text
    assert all(s.emotion in (*EMOTIONS, None) for s in reply.segments)
    assert all(s.text and s.text == s.text.strip() for s in reply.segments)


@given(
    st.lists(st.tuples(st.text(alphabet="abc xyz.!?,", min_size=1, max_size=30), st.sampled_from(EMOTIONS)), max_size=5)
)
def test_every_known_tag_after_words_is_kept(parts: list[tuple[str, str]]) -> None:
    text = " ".join(f"{words} #{emotion}#" for words, emotion in parts)
    coloured = [s.emotion for s in parse_spoken(text).segments if s.emotion]
    assert coloured == [emotion for words, emotion in parts if words.strip()]
