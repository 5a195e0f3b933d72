"""The prosody table and the SSML each sentence is spoken with (docs/agents.md#emotion-tags)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents import EMOTIONS
from voice.prosody import (
    EMOTION_TEXT_TYPE_PREFIX,
    NEUTRAL,
    PROSODY,
    VOLUME_GAIN,
    SpokenSegment,
    emotion_of,
    emotion_to_ssml,
    read_segment,
    segment_ssml,
    strip_stray_tags,
    text_type_for,
)


def _prosody_attributes(ssml: str) -> dict[str, str]:
    root = ET.fromstring(ssml)
    assert root.tag == "speak"
    prosody = root.find("prosody")
    assert prosody is not None
    return dict(prosody.attrib)


def test_every_emotion_has_exactly_one_row() -> None:
    assert set(PROSODY) == set(EMOTIONS)
    assert len(EMOTIONS) == 20


def test_distinct_emotions_sound_distinct() -> None:
    rows = [PROSODY[e] for e in EMOTIONS]
    assert len(set(rows)) == len(rows)


def test_the_extremes_point_the_right_way() -> None:
    def percent(value: str) -> int:
        return int(value.rstrip("%"))

    furious, devastated = PROSODY["furious"], PROSODY["devastated"]
    assert percent(furious.rate) > 100 > percent(devastated.rate)
    assert percent(furious.pitch) > 0 > percent(devastated.pitch)
    assert (furious.volume, devastated.volume) == ("x-loud", "x-soft")
    assert furious.pause_ms < NEUTRAL.pause_ms < devastated.pause_ms  # anger barely pauses; grief trails off


@pytest.mark.parametrize("emotion", [*EMOTIONS, None])
def test_each_segment_is_well_formed_ssml_with_its_prosody_and_a_pause(emotion: str | None) -> None:
    ssml = segment_ssml("Phew, that worked!", emotion)
    root = ET.fromstring(ssml)
    assert [child.tag for child in root] == ["prosody", "break"]
    assert root[0].text == "Phew, that worked!"
    row = PROSODY[emotion] if emotion else NEUTRAL
    assert ssml.endswith(f'<break time="{row.pause_ms}ms"/></speak>')
    assert _prosody_attributes(ssml) == {"rate": row.rate, "pitch": row.pitch, "volume": row.volume}


def test_markup_in_the_text_is_escaped_not_obeyed() -> None:
    ssml = segment_ssml('Tom & Jerry <break time="9s"/> said "5 > 3"', "smug")
    root = ET.fromstring(ssml)
    assert root[0].text == 'Tom & Jerry <break time="9s"/> said "5 > 3"'
    assert "&amp;" in ssml and "&lt;break" in ssml and "&gt;" in ssml
    assert len(root.findall(".//break")) == 1


def test_tags_are_never_spoken() -> None:
    ssml = segment_ssml("Done #relieved# and # smug # then #oops", "relieved")
    assert "#" not in ssml
    assert ET.fromstring(ssml)[0].text == "Done and then oops"


@given(st.text(), st.sampled_from([*EMOTIONS, None, "unknown"]))
def test_any_text_makes_parseable_ssml_without_hashes(text: str, emotion: str | None) -> None:
    ssml = segment_ssml(text, emotion)
    assert "#" not in ssml
    ET.fromstring(ssml)


def test_text_types_carry_the_emotion_there_and_back() -> None:
    assert text_type_for("relieved") == f"{EMOTION_TEXT_TYPE_PREFIX}relieved" == "emotion:relieved"
    assert text_type_for(None) == "sentence"
    for emotion in EMOTIONS:
        assert emotion_of(text_type_for(emotion)) == emotion
    assert emotion_of("sentence") is None
    assert emotion_of("emotion:hungry") is None
    assert emotion_of("emotion:") is None


async def test_the_transform_reads_the_emotion_from_the_text_type() -> None:
    assert await emotion_to_ssml("Oh no.", "emotion:devastated") == segment_ssml("Oh no.", "devastated")
    assert _prosody_attributes(await emotion_to_ssml("Hi.", "emotion:furious"))["volume"] == "x-loud"


@pytest.mark.parametrize("text_type", ["sentence", "word", "emotion:hungry", "emotion:", "relieved", ""])
async def test_the_transform_falls_back_to_neutral(text_type: str) -> None:
    attributes = _prosody_attributes(await emotion_to_ssml("Hi.", text_type))
    assert attributes == {"rate": NEUTRAL.rate, "pitch": NEUTRAL.pitch, "volume": NEUTRAL.volume}


async def test_the_last_transform_removes_any_tag_left() -> None:
    assert "#" not in await strip_stray_tags("a #smug# b # c #end#", "sentence")
    assert (await strip_stray_tags("a #smug# b", "x")).split() == ["a", "b"]
    ssml = segment_ssml("fine", "shy")
    assert await strip_stray_tags(ssml, "emotion:shy") == ssml


@pytest.mark.parametrize("emotion", [*EMOTIONS, None])
def test_an_engine_without_ssml_reads_back_the_numbers(emotion: str | None) -> None:
    row = PROSODY[emotion] if emotion else NEUTRAL
    segment = read_segment(segment_ssml("Tom & Jerry said 5 > 3.", emotion))
    assert segment.text == "Tom & Jerry said 5 > 3."
    assert segment.rate == pytest.approx(int(row.rate.rstrip("%")) / 100)
    assert segment.pitch == pytest.approx(1 + int(row.pitch.rstrip("%")) / 100)
    assert segment.gain == VOLUME_GAIN[row.volume]
    assert segment.pause_ms == row.pause_ms


@pytest.mark.parametrize(
    "text",
    [
        "plain words #smug#",
        "<speak><prosody rate='9000%' pitch='-500%'>wild</prosody><break time='99s'/></speak>",
        "<speak>unclosed",
        '<!DOCTYPE speak [<!ENTITY a "aaaa">]><speak>&a;</speak>',
    ],
)
def test_reading_back_is_bounded_and_never_fails(text: str) -> None:
    segment = read_segment(text)
    assert isinstance(segment, SpokenSegment)
    assert "#" not in segment.text and "<" not in segment.text
    assert 0.5 <= segment.rate <= 2.0 and 0.5 <= segment.pitch <= 2.0
    assert 0 <= segment.pause_ms <= 2_000
