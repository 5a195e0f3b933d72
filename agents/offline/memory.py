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
from agents.knowledge.rules import read_claims
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
    (("birthday", "ulang tahunku", "ultahku"), "birthday"),
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
        chosen = [f for f in facts if f.get("relation") == "favourite" and f" {category} " in f" {f['text']} "]
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


def _states_a_fact(s: Situation) -> bool:
    message = KnowledgeMessage(id="latest", seq=0, author="human", text=s.request, created_at=datetime.now(UTC))
    return bool(read_claims(person_name="", messages=[message]))


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
    result = s.last_result(_RECALL)
    if result is not None:
        return _voiced(s, _answer(s, result)), []
    if query is not None:
        return "", [call(_RECALL, {"query": query})]
    if intent_of(s.request) == "other" and _states_a_fact(s):
        return _voiced(s, _pick(s.lang, "Got it, I'll remember that.", "Oke, aku ingat ya.")), []
    return None


def _voiced(s: Situation, text: str) -> str:
    return f"{text} #affectionate#" if s.voice else text
