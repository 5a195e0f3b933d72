"""Ava's offline behaviour: hand on with a bare tag, stay silent after a specialist in
text, relay in one tagged sentence on a call, small talk, goodbye with #end#."""

from __future__ import annotations

from agents.model import FunctionCall
from agents.offline.answers import asked_by, owner_of
from agents.offline.situation import Situation, call
from agents.offline.words import Lang, intent_of

_HANDOFF = {"home": "zee", "music": "yori", "workspace": "rafal"}
_SPECIALISTS = frozenset(_HANDOFF.values())


def _pick(lang: Lang, en: str, id_: str) -> str:
    return id_ if lang == "id" else en


def _relay(lang: Lang, reply: str) -> str:
    """One spoken sentence carrying a specialist's result, with an emotion tag."""
    if not reply.strip():
        return _pick(lang, "It's taken care of. #relieved#", "Udah beres ya. #relieved#")
    first = reply.strip().split("\n")[0]
    failed = any(w in first.lower() for w in ("couldn't", "can't", "cannot", "gagal", "nggak bisa", "gak bisa"))
    return f"{first} {'#guilty#' if failed else '#relieved#'}"


def ava_turn(s: Situation) -> tuple[str, list[FunctionCall]]:
    lang = s.lang
    handed = [r for name, r in s.results if name in _SPECIALISTS]
    if handed:
        # The person saw the specialist's reply in text; on a call only Ava is heard.
        return (_relay(lang, str(handed[-1].get("response", ""))) if s.voice else ""), []
    if (asker := asked_by(s)) is not None:  # "yes" to Rafal's "shall I send it?" goes back to Rafal
        return "", [call(asker, {"tag": f"@{asker}"})]
    intent = intent_of(s.request)
    if intent == "other" and (owner := owner_of(s.request)) is not None:
        return "", [call(owner, {"tag": f"@{owner}"})]
    if intent in _HANDOFF:
        name = _HANDOFF[intent]
        return "", [call(name, {"tag": f"@{name}"})]
    text = _small_talk(lang, intent, len(s.lines) <= 1)
    if s.voice:
        if intent == "goodbye":
            return text + " #affectionate# #end#", []
        return text + (" #affectionate#" if intent in ("greeting", "thanks") else " #neutral#"), []
    return text, []


def _small_talk(lang: Lang, intent: str, first_time: bool) -> str:
    if intent == "greeting":
        if first_time:
            return _pick(
                lang,
                "Hi! I'm Ava. Zee runs your home, Yori your music and Rafal your email and calendar, "
                "and I keep us all together. What's up?",
                "Hai! Aku Ava. Zee ngurus rumahmu, Yori musikmu, Rafal email dan kalendermu, "
                "aku yang ngumpulin kita semua. Ada apa?",
            )
        return _pick(lang, "Hey! What can I do for you?", "Hai! Ada yang bisa aku bantu?")
    if intent == "goodbye":
        return _pick(lang, "Bye for now, talk soon!", "Dadah, sampai nanti ya!")
    if intent == "thanks":
        return _pick(lang, "Anytime!", "Sama-sama!")
    if intent == "capabilities":
        return _pick(
            lang,
            "I lead the group: Zee switches your lights, AC and curtains, Yori plays your music, "
            "Rafal reads your email and calendar, and I can remind you of things later.",
            "Aku yang mimpin grup ini: Zee nyalain lampu, AC dan gorden, Yori muterin musik, "
            "Rafal baca email dan kalendermu, dan aku bisa ngingetin kamu nanti.",
        )
    return _pick(
        lang,
        "I can't do that offline, sorry. I can pass home requests to Zee, or just chat.",
        "Maaf, yang itu belum bisa aku lakukan offline. Aku bisa nerusin urusan rumah ke Zee, atau ngobrol aja.",
    )
