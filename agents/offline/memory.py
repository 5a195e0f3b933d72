"""Ava's offline memory: questions about the person go through `recall`, and a fact the
person states is acknowledged, in English and Indonesian.

Only when the deployment gave Ava the `recall` tool: without it, she neither looks
anything up nor promises to remember. The answer is built from what `recall` returned,
never from the question, so she only ever says what the graph really holds.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from agents.knowledge.port import KnowledgeMessage
from agents.knowledge.rules import about_someone, person_meant, read_claims
from agents.model import FunctionCall
from agents.offline.situation import Situation, call
from agents.offline.words import Lang, has_any, intent_of, topics_of
from agents.roster import current_roster

_RECALL = "recall"
_FACTS_SPOKEN_MAX = 5
_CATEGORIES = {
    "makanan": "food",
    "minuman": "drink",
    "lagu": "song",
    "film": "film",
    "movie": "film",
    "tempat": "place",
    "warna": "colour",
    "color": "colour",
    "buku": "book",
}
_CATEGORIES_ID = {v: k for k, v in _CATEGORIES.items() if k not in ("movie", "color")}
_EAT = (
    "should i eat",
    "what to eat",
    "eat tonight",
    "for dinner",
    "for lunch",
    "makan apa",
    "enaknya makan",
    "mau makan apa",
)
_ABOUT_ME = (
    "know about me",
    "remember about me",
    "you know me",
    "tahu tentang aku",
    "tau tentang aku",
    "tahu tentang saya",
    "tau apa tentang aku",
    "tahu apa tentang aku",
    "ingat tentang aku",
    "inget tentang aku",
)
_FAVOURITE = re.compile(r"\b(?:favou?rite|favorit(?:ku|mu)?|kesukaan(?:ku)?)\b", re.IGNORECASE)
_CATEGORY_NEAR = re.compile(
    r"\b(food|drink|song|film|movie|place|colou?r|book|makanan|minuman|lagu|tempat|warna|buku)\b", re.IGNORECASE
)
# Questions about one part of the person's life, and what to look up for each.
_TOPICS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("where do i live", "where i live", "tinggal di mana", "tinggal dimana", "rumahku di mana"), "lives"),
    (("where do i work", "where i work", "kerja di mana", "kerja dimana", "kantorku di mana"), "works"),
    (("allergic", "allergies", "allergy", "alergi", "alergiku"), "allergic"),
    (
        ("birthday", "bday", "ulang tahunku", "ultahku", "ulang tahun", "ulang tahunnya", "ultah", "ultahnya"),
        "birthday",
    ),
)
# "what does my wife like?", "dia sukanya apa?": what someone likes.
_LIKES_ASKED = re.compile(
    r"\bwhat (?:does|do) (?!you\b)\w+(?: \w+)?(?:'s)? (?:like|love|enjoy|likes)\b|\bsuka(?:nya)? apa\b|\bapa (?:yang )?"
    r"(?:\w+ )?(?:suka|disukai)\b",
    re.IGNORECASE,
)
# "where does my mom work?", "where does she live?"
_WHERE_ASKED = re.compile(r"\bwhere (?:does|do|did) (?!you\b)[\w' ]{1,24}? (work|live|stay)s?\b", re.IGNORECASE)
# Someone asked about by a pronoun ("what's her birthday?", "kapan ulang tahunnya?") or as
# the person's relation ("when's my sister's birthday?", "kakakku alergi apa?").
_PRONOUN_ASKED = re.compile(r"\b(?:she|her|he|his|him|they|their|dia)\b|\b(?:tahun|ultah|alergi|suka)nya\b", re.I)
_WHOSE = re.compile(
    r"\bmy (wife|husband|partner|girlfriend|boyfriend|sister|brother|mother|mom|mum|father|dad|boss|best friend|"
    r"daughter|son|child|kid|friend|cousin)(?:'s)?\b|\b(istri|suami|pacar|adik|kakak|ibu|ayah|bos|sahabat|anak|"
    r"sepupu|teman)(?:ku|ku)\b",
    re.IGNORECASE,
)
# What may be asked about someone else; "who's my sister?" asks for the relation itself.
_ABOUT_SOMEONE = frozenset({"birthday", "allergic", "likes", "lives", "works", "favourite"})
_THREAD_LINES_READ = 12
# "what's her name again?", "siapa namanya?": the name the pronoun stands for, from the thread.
_NAME_ASKED = re.compile(
    r"\b(?:what(?:'s| is| was)|whats) (?:her|his|their) name\b|\bsiapa namanya\b|\bnamanya siapa\b", re.IGNORECASE
)
_RELATION_ASKED = re.compile(
    r"\b(?:who is|who's|whos|siapa(?: nama)?|what(?:'s| is|s) (?:the name of )?) ?(?:my )?"
    r"(wife|husband|partner|girlfriend|boyfriend|sister|brother|mother|mom|father|dad|boss|best friend|daughter|son|"
    r"child|kid|istri|suami|pacar|adik|"
    r"kakak|ibu|ayah|bos|sahabat|anak)(?:ku)?(?:'s name)?\b",
    re.IGNORECASE,
)
_RELATIONS_ID = {
    "istri": "wife",
    "suami": "husband",
    "pacar": "partner",
    "adik": "sibling",
    "kakak": "sibling",
    "ibu": "mother",
    "ayah": "father",
    "bos": "boss",
    "sahabat": "best friend",
    "anak": "child",
    "mom": "mother",
    "dad": "father",
}
_SAY_ID = {
    "lives_in": "kamu tinggal di {obj}",
    "works_at": "kamu kerja di {obj}",
    "allergic_to": "kamu alergi {obj}",
    "likes": "kamu suka {obj}",
    "dislikes": "kamu nggak suka {obj}",
    "birthday": "ulang tahunmu {obj}",
}
_QUESTION = re.compile(r"\?\s*$|^(what|whats|who|whos|where|wheres|when|which|do you|apa|siapa|kapan)\b", re.IGNORECASE)


def _pick(lang: Lang, en: str, id_: str) -> str:
    return id_ if lang == "id" else en


def _query(request: str) -> str | None:
    """What to look up for a question about the person; None when it is not one."""
    if has_any(request, _EAT) and not topics_of(request):  # "email Sari and say thanks for dinner" is mail
        return "favourite food"
    if has_any(request, _ABOUT_ME):
        return ""
    if not _QUESTION.search(request.strip()):
        return None
    if _FAVOURITE.search(request):
        category = _CATEGORY_NEAR.search(request)
        return "favourite " + (
            _CATEGORIES.get(category.group(1).lower(), category.group(1).lower()) if category else ""
        )
    if _LIKES_ASKED.search(request):
        return "likes"
    where = _WHERE_ASKED.search(request)
    if where:
        return "works" if where.group(1).lower() == "work" else "lives"
    for cues, query in _TOPICS:
        if has_any(request, cues):
            return query
    relation = _RELATION_ASKED.search(request)
    return _RELATIONS_ID.get(relation.group(1).lower(), relation.group(1).lower()) if relation else None


# The people in a person's life, said in Indonesian ("nama anakmu Nay").
_RELATION_SAY_ID = {
    "child": "anak", "daughter": "anak perempuan", "son": "anak laki-laki", "wife": "istri", "husband": "suami",
    "partner": "pacar", "girlfriend": "pacar", "boyfriend": "pacar", "mother": "ibu", "father": "ayah",
    "sister": "saudara perempuan", "brother": "saudara laki-laki", "younger sibling": "adik", "older sibling": "kakak",
    "boss": "bos", "best friend": "sahabat", "friend": "teman", "cousin": "sepupu", "colleague": "rekan kerja",
}  # fmt: skip
# Someone else's fact ("Nay is allergic to peanuts"), said in Indonesian.
_THEIR_SAY_ID = {
    "allergic_to": ("is allergic to", "alergi"),
    "likes": ("likes", "suka"),
    "lives_in": ("lives in", "tinggal di"),
    "works_at": ("works at", "kerja di"),
}


def _indonesian(fact: dict[str, Any], name: str) -> str | None:
    """The fact in Indonesian, second person, for the relations Ava knows how to say."""
    text, obj, relation = str(fact["text"]), str(fact["object"]), str(fact["relation"])
    kin = re.match(rf"^(.+) is {re.escape(name)}'s (.+)$", text) if name else None
    if kin and kin.group(2) in _RELATION_SAY_ID:
        return f"nama {_RELATION_SAY_ID[kin.group(2)]}mu {kin.group(1)}"
    theirs = re.match(r"^(.+)'s birthday is (.+)$", text)
    if relation == "birthday" and theirs and theirs.group(1) != name:
        return f"ulang tahun {theirs.group(1)} {theirs.group(2)}"
    liked = re.match(r"^(.+)'s favourite (.+?) is (.+)$", text)
    if relation == "favourite" and liked and liked.group(1) != name:
        return f"{_CATEGORIES_ID.get(liked.group(2), liked.group(2))} favorit {liked.group(1)} itu {liked.group(3)}"
    if not text.startswith(name) or not name:
        said = _THEIR_SAY_ID.get(relation)
        if said and f" {said[0]} " in text:
            return text.replace(f" {said[0]} ", f" {said[1]} ", 1)
        return None
    if relation == "favourite":
        category = re.search(r"favourite (.+) is ", text)
        label = _CATEGORIES_ID.get(category.group(1), category.group(1)) if category else ""
        return f"{label} favoritmu {obj}".strip()
    template = _SAY_ID.get(relation)
    return template.format(obj=obj) if template else None


def _say(fact: dict[str, Any], name: str, lang: Lang) -> str:
    said = _indonesian(fact, name) if lang == "id" else None
    return said or _second_person(str(fact["text"]), name)


def _second_person(text: str, name: str) -> str:
    """'Budi's favourite food is soto' -> 'your favourite food is soto', for Ava to say."""
    if name and text.startswith(f"{name}'s "):
        return "your " + text[len(name) + 3 :]
    if name and text.startswith(f"{name} is "):
        return "you are " + text[len(name) + 4 :]
    if name and text.startswith(f"{name} "):
        verb, _, rest = text[len(name) + 1 :].partition(" ")
        return f"you {verb[:-1] if verb.endswith('s') else verb} {rest}".strip()
    return text.replace(f"{name}'s ", "your ") if name else text


def _answer(s: Situation, result: dict[str, Any]) -> str:
    lang = s.lang
    facts: list[dict[str, Any]] = list(result.get("facts", []))
    name = str(result.get("person", ""))
    query = _query(s.request) or ""
    if "error" in result or not facts:
        return _pick(
            lang,
            "I don't know that about you yet. Tell me and I'll remember.",
            "Aku belum tahu soal itu. Cerita ke aku ya, nanti aku ingat.",
        )
    if query.startswith("favourite"):
        category = query.partition(" ")[2] or ""
        # The person's own favourite: "Maya's favourite food is sushi" answers nothing about them.
        mine = [f for f in facts if not name or str(f["text"]).startswith(f"{name}'s ")]
        chosen = [f for f in mine if f.get("relation") == "favourite" and f" {category} " in f" {f['text']} "]
        if chosen:
            obj = chosen[0]["object"]
            if has_any(s.request, _EAT):
                return _pick(lang, f"How about {obj}? It's your favourite.", f"Gimana kalau {obj}? Itu favoritmu.")
            label = _CATEGORIES_ID.get(category, category)
            return _pick(lang, f"Your favourite {category} is {obj}.", f"{label.capitalize()} favoritmu {obj}.")
        if category:
            label = _CATEGORIES_ID.get(category, category)
            return _pick(
                lang,
                f"I don't know your favourite {category} yet. Tell me and I'll remember.",
                f"Aku belum tahu {label} favoritmu. Cerita ke aku ya, nanti aku ingat.",
            )
    said = "; ".join(_say(f, name, lang) for f in facts[:_FACTS_SPOKEN_MAX])
    if query:  # a question about one thing: just the answer
        return said[0].upper() + said[1:] + "."
    return _pick(lang, f"Here's what I know: {said}.", f"Yang aku tahu: {said}.")


def _recent(s: Situation) -> list[KnowledgeMessage]:
    """The person's latest lines as messages, the newest with the id "latest"."""
    lines = [line for line in s.lines if line.by_human][-_THREAD_LINES_READ:]
    now = datetime.now(UTC)
    return [
        KnowledgeMessage(
            id="latest" if i == len(lines) - 1 else f"line{i}", seq=i, author="human", text=line.text, created_at=now
        )
        for i, line in enumerate(lines)
    ]


def _states_a_fact(s: Situation) -> bool:
    """Does the latest message say something the graph will learn, read with the lines
    before it (so "his birthday is 3 June" after "my brother is Dimas" counts)?"""
    return any(c.message_id == "latest" for c in read_claims(person_name="", messages=_recent(s)))


def _whom(s: Situation, query: str | None) -> tuple[str | None, str | None]:
    """Who a question about someone else means: a name the pronoun stands for, from the
    thread, or the relation named ("my sister's"); (None, None) for the person themself."""
    if query is None or query.split(" ")[0] not in _ABOUT_SOMEONE:
        return None, None
    whose = _WHOSE.search(s.request)
    if whose:
        said = (whose.group(1) or whose.group(2)).lower()
        return None, _RELATIONS_ID.get(said, said)
    if _PRONOUN_ASKED.search(s.request):
        return person_meant(clause=s.request, messages=_recent(s)[:-1]), None
    return None, None


def _about_someone(s: Situation, facts: list[dict[str, Any]], name: str | None, relation: str | None) -> str | None:
    """The answer about someone else, from facts naming them; None when the facts do not."""
    if relation is not None and name is None:
        kin = (re.match(rf"^(.+?) is .+'s (?:\w+ )?{re.escape(relation)}$", str(f["text"])) for f in facts)
        name = next((m.group(1) for m in kin if m), None)
    if name is None:
        return None
    theirs = [f for f in facts if str(f["text"]).startswith(name) and not re.search(r" is .+'s ", str(f["text"]))]
    if not theirs:
        return _pick(s.lang, f"I don't know that about {name} yet.", f"Aku belum tahu soal itu tentang {name}.")
    said = "; ".join(_say(f, "", s.lang) for f in theirs[:_FACTS_SPOKEN_MAX])
    return said[0].upper() + said[1:] + "."


def memory_turn(s: Situation, tool_names: frozenset[str]) -> tuple[str, list[FunctionCall]] | None:
    """Ava's move when the latest message is about what she knows of the person; else None."""
    if _RECALL not in tool_names or not s.lead or s.trigger != "human":
        return None
    query = _query(s.request)
    # A question about the person wins over a topic word in it ("what's my favourite song?");
    # anything else about the home, music or work is the specialists'.
    if any(name != _RECALL for name, _ in s.results) or (
        query is None and intent_of(s.request) in current_roster().by_name
    ):
        return None
    if not s.results and _NAME_ASKED.search(s.request):
        named = person_meant(clause=s.request, messages=_recent(s)[:-1])
        if named is not None:
            whose = next((w for w in ("Her", "His") if re.search(rf"\b{w}\b", s.request, re.I)), "Their")
            return _voiced(s, _pick(s.lang, f"{whose} name is {named}.", f"Namanya {named}.")), []
    result = s.last_result(_RECALL)
    name, relation = _whom(s, query)
    if result is not None:
        facts = list(result.get("facts", [])) if "error" not in result else []
        theirs = _about_someone(s, facts, name, relation) if (name or relation) else None
        return _voiced(s, theirs or _answer(s, result)), []
    if query is not None:
        # About someone else: their name (or relation) with what is asked ("Sari birthday").
        return "", [call(_RECALL, {"query": " ".join(w for w in (name or relation, query) if w)})]
    if intent_of(s.request) == "other" and _states_a_fact(s):
        return _voiced(s, _pick(s.lang, "Got it, I'll remember that.", "Oke, aku ingat ya.")), []
    if intent_of(s.request) == "other" and about_someone(s.request):
        # "his birthday is 1 June" with nobody the "his" can be: asked, never guessed.
        return _voiced(
            s,
            _pick(s.lang, "Who do you mean? Tell me their name and I'll remember it.",
                  "Maksudnya siapa? Sebutin namanya ya, nanti aku ingat."),
        ), []  # fmt: skip
    return None


def _voiced(s: Situation, text: str) -> str:
    return f"{text} #affectionate#" if s.voice else text
