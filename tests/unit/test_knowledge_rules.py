"""The rule extractor: each statement it knows, in English and Indonesian, and what it
must never read as a statement (questions, pronouns, small talk)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.knowledge import ENTITY_TYPES, SELF, Claim, KnowledgeMessage, Mention, read_claims
from agents.knowledge.local import tsquery
from agents.knowledge.rules import only_mentioned

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def claims(*texts: str, author: str = "human", known: tuple[Claim, ...] = ()) -> list[Claim]:
    messages = [KnowledgeMessage(f"m{i}", i, author, text, NOW) for i, text in enumerate(texts, start=1)]
    return read_claims(person_name="Budi", messages=messages, known=known)


def summary(found: list[Claim]) -> list[tuple[str, str, str, str | None]]:
    return [(c.relation, c.object.name, c.object.type, c.slot) for c in found]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my favourite food is rendang", ("favourite", "rendang", "food", "favourite:food")),
        ("Rendang is my favorite food!", ("favourite", "Rendang", "food", "favourite:food")),
        ("makanan favoritku adalah rendang", ("favourite", "rendang", "food", "favourite:food")),
        ("my favourite is nasi goreng", ("favourite", "nasi goreng", "food", "favourite:food")),
        ("my favourite band is Dewa 19", ("favourite", "Dewa 19", "thing", "favourite:band")),
        ("I really love sushi", ("likes", "sushi", "food", "taste:sushi")),
        ("I don't like durian", ("dislikes", "durian", "food", "taste:durian")),
        ("aku suka banget bakso", ("likes", "bakso", "food", "taste:bakso")),
        ("aku nggak suka durian", ("dislikes", "durian", "food", "taste:durian")),
        ("I live in Bandung now", ("lives_in", "Bandung", "place", "lives_in")),
        ("aku tinggal di Jakarta Selatan", ("lives_in", "Jakarta Selatan", "place", "lives_in")),
        ("I work at Gojek", ("works_at", "Gojek", "organisation", "works_at")),
        ("aku kerja di Tokopedia", ("works_at", "Tokopedia", "organisation", "works_at")),
        ("I'm allergic to peanuts", ("allergic_to", "peanuts", "food", None)),
        ("aku alergi udang", ("allergic_to", "udang", "food", None)),
        ("my birthday is on 12 March", ("birthday", "12 March", "event", "birthday")),
        ("ulang tahunku tanggal 5 Mei", ("birthday", "5 Mei", "event", "birthday")),
        ("My wife is Sari", ("wife", "Sari", "person", "relation:wife")),
        ("istriku namanya Sari", ("wife", "Sari", "person", "relation:wife")),
        ("my sister Rina is visiting", ("sister", "Rina", "person", None)),
    ],
)
def test_statements(text: str, expected: tuple[str, str, str, str | None]) -> None:
    assert summary(claims(text)) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "what's my favourite food?",
        "makanan favoritku apa?",
        "do I like durian?",
        "I like it",
        "I love you",
        "hi",
        "turn on the bedroom light",
        "my wife is tired",
        "my favourite is the blue one",
        "I work at home today",
        "aku kerja di rumah",
        "I hate when that happens",
        "I like to cook",
    ],
)
def test_not_statements(text: str) -> None:
    assert claims(text) == []


def test_lists_name_several_things() -> None:
    assert [(c.relation, c.object.name) for c in claims("I'm allergic to peanuts, shrimp and eggs")] == [
        ("allergic_to", "peanuts"),
        ("allergic_to", "shrimp"),
        ("allergic_to", "eggs"),
    ]
    assert [(c.relation, c.object.name) for c in claims("aku suka rendang dan soto tapi nggak suka durian")] == [
        ("likes", "rendang"),
        ("likes", "soto"),
    ]


def test_other_peoples_birthdays_belong_to_them() -> None:
    for text, date in (("Sari's birthday is on 5 May", "5 May"), ("ulang tahun Sari tanggal 5 Mei", "5 Mei")):
        (claim,) = claims(text)
        assert (claim.subject.name, claim.subject.is_self, claim.relation, claim.object.name) == (
            "Sari",
            False,
            "birthday",
            date,
        )
        assert claim.text == f"Sari's birthday is {date}"


def test_a_switch_to_a_food_replaces_the_food_favourite() -> None:
    found = claims("my favourite food is rendang. My favourite song is Yellow. I've switched to soto")
    assert [c.slot for c in found] == ["favourite:food", "favourite:song", "favourite:food"]


def test_only_the_persons_own_words_count() -> None:
    assert claims("my favourite food is rendang", author="ava") == []


def test_switching_replaces_the_favourite_in_the_same_slot() -> None:
    found = claims("my favourite food is rendang", "I've switched to soto, actually")
    assert summary(found) == [
        ("favourite", "rendang", "food", "favourite:food"),
        ("favourite", "soto", "food", "favourite:food"),
    ]
    assert found[1].text == "Budi's favourite food is soto"
    indonesian = claims("aku udah ganti ke soto", known=(found[0],))
    assert summary(indonesian) == [("favourite", "soto", "food", "favourite:food")]


def test_search_words_drop_question_words_and_fold_indonesian_suffixes() -> None:
    assert tsquery("what's my favourite food?") == "favourite:* | food:*"
    assert tsquery("makanan favoritku apa?") == "food:* | favourite:*"
    assert tsquery("what do you know about me?") == ""
    assert tsquery("what should I eat tonight") == "eat:*"


_PHRASES = st.sampled_from(
    [
        "my favourite food is",
        "I'm allergic to",
        "I really like",
        "aku nggak suka",
        "my wife is",
        "I live in",
        "aku kerja di",
        "ulang tahunku tanggal",
        "I've switched to",
        "what's",
        "?",
        ",",
        " and ",
        ".",
    ]
)
_NOISE = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@given(st.lists(st.one_of(_PHRASES, _NOISE), max_size=12).map(" ".join))
@settings(max_examples=300, deadline=None)
def test_any_text_gives_bounded_claims_or_none(text: str) -> None:
    for claim in claims(text):
        assert 1 <= len(claim.object.name) <= 80 and len(claim.object.name.split()) <= 5
        assert claim.object.type in ENTITY_TYPES
        assert claim.text and claim.relation
        assert claim.subject.is_self or claim.subject.name


@given(st.sampled_from(["my favourite food is rendang", "I live in Bandung", "aku alergi udang"]), _NOISE)
@settings(max_examples=100, deadline=None)
def test_a_statement_asked_as_a_question_teaches_nothing(statement: str, noise: str) -> None:
    assert (
        claims(f"{statement} {noise}?".replace(".", " ").replace("!", " ").replace(";", " ").replace("\n", " ")) == []
    )


@pytest.mark.parametrize(
    ("text", "who", "relation", "thing"),
    [
        ("my daughter's name is Nay and she's allergic to peanuts", "Nay", "allergic_to", "peanuts"),
        ("anakku namanya Nay, dia alergi kacang", "Nay", "allergic_to", "kacang"),
        ("my boss is Pak Hendra, he lives in Bogor", "Pak Hendra", "lives_in", "Bogor"),
        ("my wife Sari, she works at Gojek", "Sari", "works_at", "Gojek"),
    ],
)
def test_a_pronoun_after_a_named_person_is_that_person(text: str, who: str, relation: str, thing: str) -> None:
    found = [c for c in claims(text) if c.relation == relation]
    assert [(c.subject.name, c.subject.is_self, c.object.name) for c in found] == [(who, False, thing)]


def test_a_pronoun_with_nobody_named_teaches_nothing() -> None:
    assert claims("she's allergic to peanuts") == []


@pytest.mark.parametrize(
    ("texts", "who", "relation", "thing"),
    [
        (("my sister Sari, her birthday is 12 May",), "Sari", "birthday", "12 May"),
        (("kakakku namanya Rina, ulang tahunnya 3 Juni",), "Rina", "birthday", "3 Juni"),
        (("my brother is Dimas", "his birthday is 3 June"), "Dimas", "birthday", "3 June"),
        (("my wife is Maya", "she loves orchids"), "Maya", "likes", "orchids"),
        (("pacarku namanya Dina", "dia suka banget bunga matahari"), "Dina", "likes", "bunga matahari"),
        (("my wife is Maya, her favourite food is sushi",), "Maya", "favourite", "sushi"),
        (("istriku namanya Maya, makanan favoritnya sushi",), "Maya", "favourite", "sushi"),
    ],
)
def test_her_his_and_nya_reach_back_to_the_person_named(
    texts: tuple[str, ...], who: str, relation: str, thing: str
) -> None:
    found = [c for c in claims(*texts) if c.relation == relation]
    assert [(c.subject.name, c.subject.is_self, c.object.name) for c in found] == [(who, False, thing)]


def test_a_pronoun_reaches_a_person_the_graph_already_knows() -> None:
    known = (Claim("m0", SELF, "brother", Mention("Dimas", "person"), "Dimas is Budi's brother"),)
    found = claims("his birthday is 3 June", known=known)
    assert [(c.subject.name, c.relation, c.object.name, c.slot) for c in found] == [
        ("Dimas", "birthday", "3 June", "birthday")
    ]


def test_her_is_never_the_brother_nor_his_the_sister() -> None:
    assert claims("my brother is Dimas", "her birthday is 12 May") == claims("my brother is Dimas")
    assert claims("my sister is Sari", "his birthday is 1 June") == claims("my sister is Sari")
    # with both named, each pronoun finds the one it can be
    found = claims("my sister is Sari", "my brother is Dimas", "her birthday is 12 May")
    assert [(c.subject.name, c.object.name) for c in found if c.relation == "birthday"] == [("Sari", "12 May")]


def _facts_of_others(found: list[Claim]) -> list[tuple[str, str, str]]:
    return [(c.subject.name, c.relation, c.object.name) for c in found if not c.subject.is_self]


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (("I had lunch with Sari, her birthday is 12 May",), [("Sari", "birthday", "12 May")]),
        (("I had lunch with Sari", "she's allergic to shrimp"), [("Sari", "allergic_to", "shrimp")]),
        (("tadi aku makan siang sama Sari, ulang tahunnya 12 Mei",), [("Sari", "birthday", "12 Mei")]),
        (("ketemu Budi tadi", "dia suka kopi"), [("Budi", "likes", "kopi")]),
        (("Rina said her favourite food is sate",), [("Rina", "favourite", "sate")]),
        # the last one mentioned, after someone named as a relation earlier
        (("my sister is Sari", "I met Maya today, her birthday is 1 June"), [("Maya", "birthday", "1 June")]),
    ],
)
def test_a_pronoun_reaches_someone_only_mentioned(texts: tuple[str, ...], expected: list[tuple[str, str, str]]) -> None:
    assert _facts_of_others(claims(*texts)) == expected


def test_a_mention_keeps_the_gender_rules_and_is_never_a_place() -> None:
    # Dimas is the brother: "her" after a mention of him is not him (nor anyone else here)
    assert _facts_of_others(claims("my brother is Dimas", "I saw Dimas yesterday, her birthday is 3 June")) == []
    # ...but the sister named before is who "her" can be
    found = claims("my sister is Sari", "my brother is Dimas", "I called Dimas, her birthday is 3 June")
    assert _facts_of_others(found) == [("Sari", "birthday", "3 June")]
    # a place, a weekday or an agent after "with"/"at" is not a person
    assert _facts_of_others(claims("I had lunch at Senayan, her birthday is 1 June")) == []
    assert _facts_of_others(claims("I met with Zee on Monday, her birthday is 1 June")) == []


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("I met Maya at the office today", "Maya"),
        ("tadi ketemu Budi di kantor", "Budi"),
        ("bumped into Rina at the mall", "Rina"),
        ("call Budi", None),  # a request, not a day told
        ("I want to book a table with Sari", None),
        ("did I meet Sari?", None),
        ("I had lunch at Senayan", None),
    ],
)
def test_a_day_told_is_not_a_request(text: str, who: str | None) -> None:
    assert only_mentioned(text) == who
