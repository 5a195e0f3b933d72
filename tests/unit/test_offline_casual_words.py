"""How the offline specialists read requests said the way people talk (docs/eval.md#tried-as-a-new-user):
what each phrasing means, and the ordinary sentences that must not be read as requests."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import pytest

from agents.offline.dayparts import day_part, part_span
from agents.offline.words import intent_of
from agents.rafal.offline import _heard_from, _told, wants_workspace
from agents.yori.offline import _said_name, _want, wants_music
from agents.zee.asks import asks_of, felt, spelled


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("i cant hear the music", ("louder", 10)),
        ("thats way too loud", ("louder", -25)),
        ("musiknya kekencengan", ("louder", -10)),
        ("the music is too quiet", ("louder", 10)),
        ("mute it", ("volume", 0)),
        ("unmute", ("unmute", None)),
        ("ugh i don't like this song", ("next", None)),
        ("who sings this?", ("now_playing", None)),
        ("put on some jazz", ("play", "jazz")),
        ("i wanna hear some jazz", ("play", "jazz")),
        ("ok play it again", ("resume", None)),
    ],
)
def test_what_a_music_request_means(text: str, want: tuple[str, object]) -> None:
    assert _want(text) == want


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("play my gym playlist", "gym"),
        ("put on my workout playlist", "workout"),
        ("play the playlist called Chill", "Chill"),
        ("puterin playlist gym aku dong", "gym"),
        ("can you play my road trip playlist please", "road trip"),
    ],
)
def test_the_name_a_playlist_is_asked_by(text: str, name: str) -> None:
    assert _said_name(text) == name


@pytest.mark.parametrize("text", ["what is this?", "sorry i can't hear you", "did you hear that", "do something else"])
def test_vague_words_are_not_claimed_as_music(text: str) -> None:
    assert not wants_music(text)


@pytest.mark.parametrize(
    ("text", "kinds", "what"),
    [
        ("it's dark in here", ("dj",), "power"),
        ("ugh it's so hot in here", ("kt",), "cooler"),
        ("gerah banget", ("kt",), "cooler"),
        ("brr it's freezing in here", ("kt",), "power"),
        ("the bedroom is way too bright", ("dj",), "brightness"),
    ],
)
def test_a_room_described_means_the_device_that_changes_it(text: str, kinds: tuple[str, ...], what: str) -> None:
    (ask,) = asks_of(text, "")
    assert ask.implied and ask.kinds == kinds and [a.what for a in ask.actions][-1] == what


def test_a_device_named_wins_over_how_the_room_feels() -> None:
    (ask,) = asks_of("nyalain ac dong, panas bgt", "")
    assert not ask.implied and [a.what for a in ask.actions] == ["power"]
    assert felt("is it hot in the bedroom?") is None  # a question only reads


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("tell Budi I'm running late", ("Budi", "I'm running late")),
        ("let Sari know I'll be there at 7", ("Sari", "I'll be there at 7")),
        ("kabarin Budi kalau aku telat", ("Budi", "aku telat")),
    ],
)
def test_a_message_for_someone(text: str, told: tuple[str, str]) -> None:
    assert _told(text) == told


@pytest.mark.parametrize("text", ["tell me a joke", "let me know when you're ready", "tell Zee to turn it off"])
def test_not_a_message_for_anyone(text: str) -> None:
    assert _told(text) is None


@pytest.mark.parametrize(
    ("text", "who"),
    [("did Sari write back?", "Sari"), ("has budi replied yet?", "budi"), ("got anything from budi?", "budi"),
     ("Sari udah bales belum?", "Sari")],
)  # fmt: skip
def test_mail_from_someone_without_the_word_email(text: str, who: str) -> None:
    assert _heard_from(text) == who and wants_workspace(text)


@pytest.mark.parametrize(
    "text", ["what's on my plate today", "am i free on wednesday afternoon?", "besok aku ada acara apa aja"]
)
def test_a_day_asked_about_without_the_word_calendar(text: str) -> None:
    assert wants_workspace(text)


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("turn off the bedroom lihgt", "turn off the bedroom light"),
        ("bedrom ligths on", "bedroom lights on"),
        ("matiin lmapu kamar", "matiin lampu kamar"),
        ("close the curtian", "close the curtain"),
        ("turn off the right one", "turn off the right one"),  # a different letter is no slip
        ("night light", "night light"),
        # spelled as it sounds, and short words of four letters where one word fits
        ("turn off the lite", "turn off the light"),
        ("lmap off", "lamp off"),
        ("lokc the dooor", "lock the door"),
        ("buka tiari", "buka tirai"),
        # the first letter, only when nothing keeping it fits: swapped, or the key beside it
        ("turn on the ilght", "turn on the light"),
        ("kight on pls", "light on pls"),
        ("nyalain kampu dapur", "nyalain lampu dapur"),
    ],
)
def test_slips_of_device_and_room_words_are_read_back(typed: str, read: str) -> None:
    assert spelled(typed) == read


def test_of_at_the_end_is_off() -> None:
    (ask,) = asks_of("ligths of pls", "")
    assert ask.kinds == ("dj",) and [(a.what, a.value) for a in ask.actions] == [("power", False)]


@pytest.mark.parametrize(
    "text",
    [
        "book me a flight to Bali",
        "a slight delay",
        "what a plight",
        "order a pint",  # a slip of "pintu", but a word
        "pick a font",  # of "front"
        "that's odor",  # "door" with the first two swapped
        "mau lamar kerja",  # "kamar" with the key beside k
        "masa lampau",  # "lampu" with a letter more
        "right night might sight",  # another first letter, not a key beside "l"
        "the dor",  # three letters: too short
    ],
)
def test_other_words_are_not_slips_of_device_words(text: str) -> None:
    assert spelled(text) == text


@pytest.mark.parametrize(
    ("text", "hours"),
    [
        ("what do I have tomorrow morning?", (5, 12)),
        ("am I free on Wednesday afternoon?", (12, 17)),
        ("besok sore aku ada acara?", (15, 18)),
        ("anything on tonight?", (17, 24)),
        ("nanti malam ada jadwal apa?", (17, 24)),
        ("besok pagi aku sibuk gak?", (5, 12)),
        # a meal or a greeting holds a part of the day but does not ask about one
        ("ada makan malam besok?", None),
        ("good morning, what do I have today?", None),
        ("what do I have tomorrow?", None),
    ],
)
def test_a_part_of_the_day_is_its_hours(text: str, hours: tuple[int, int] | None) -> None:
    part = day_part(text)
    assert (None if part is None else (part.start, part.end)) == hours


def test_a_part_of_the_day_spans_those_hours_in_the_persons_zone() -> None:
    zone = ZoneInfo("Asia/Jakarta")
    part = day_part("tomorrow evening")
    assert part is not None
    start, end = part_span(date(2026, 12, 1), part, zone)
    assert (start.isoformat(), end.isoformat()) == ("2026-12-01T17:00:00+07:00", "2026-12-02T00:00:00+07:00")


@pytest.mark.parametrize(
    "text", ["Thank a lot.", "appreciate it", "much appreciated!", "thank you very much", "ok thanks ava"]
)
def test_thanks_as_people_say_it_and_as_a_phone_line_hears_it(text: str) -> None:
    assert intent_of(text) == "thanks"


@pytest.mark.parametrize(
    "text", ["thank Sari for the flowers by email", "I'd appreciate it if you turned on the light"]
)
def test_a_request_that_says_thank_is_still_a_request(text: str) -> None:
    assert intent_of(text) != "thanks"
