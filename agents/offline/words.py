"""The offline model's vocabulary: which language a message is in and what it asks for.

Deliberately small and explicit: a rule here is a behaviour a test can name. Matching is
on whole words (or whole phrases), lower-cased, so "nyalain" and "turn on" both count.
"""

from __future__ import annotations

import re
from typing import Literal

Lang = Literal["en", "id"]
Intent = Literal["goodbye", "greeting", "capabilities", "home", "music", "workspace", "thanks", "other"]

# Common Indonesian words; a message where a third of the words are among them is Indonesian.
_INDONESIAN = frozenset(
    [
        "aku",
        "kamu",
        "tolong",
        "nyalain",
        "nyalakan",
        "matikan",
        "matiin",
        "hidupkan",
        "lampu",
        "kamar",
        "apa",
        "bisa",
        "dong",
        "ya",
        "gak",
        "nggak",
        "enggak",
        "udah",
        "sudah",
        "halo",
        "hai",
        "pagi",
        "siang",
        "sore",
        "malam",
        "terima",
        "kasih",
        "ingatkan",
        "jam",
        "ini",
        "itu",
        "yang",
        "dan",
        "di",
        "ke",
        "mau",
        "lagi",
        "putar",
        "lagu",
        "musik",
        "tutup",
        "buka",
        "gorden",
        "tirai",
        "dah",
        "udahan",
        "makasih",
        "gimana",
        "kabar",
        "aja",
        "saja",
        "tamu",
        "ruang",
        "selamat",
        "sampai",
        "jumpa",
        "cek",
        "nyala",
        "mati",
        "berapa",
    ]
)

_PHRASES: dict[Intent, tuple[str, ...]] = {
    "goodbye": (
        "bye",
        "goodbye",
        "good bye",
        "see you",
        "good night",
        "dah",
        "dadah",
        "udahan",
        "sampai jumpa",
        "selamat tinggal",
        "that's all",
        "talk later",
    ),
    "thanks": ("thanks", "thank you", "makasih", "terima kasih", "thx"),
    "capabilities": (
        "what can you do",
        "what do you do",
        "help",
        "kamu bisa apa",
        "bisa apa aja",
        "bisa apa saja",
        "bisa ngapain",
    ),
    "greeting": (
        "hi",
        "hello",
        "hey",
        "halo",
        "hai",
        "hallo",
        "pagi",
        "siang",
        "sore",
        "malam",
        "good morning",
        "good afternoon",
        "good evening",
        "apa kabar",
        "how are you",
        "selamat pagi",
        "selamat malam",
    ),
    "home": (
        "light",
        "lights",
        "lamp",
        "lampu",
        "ac",
        "aircon",
        "air con",
        "air conditioner",
        "curtain",
        "curtains",
        "gorden",
        "tirai",
        "blind",
        "blinds",
        "device",
        "devices",
        "perangkat",
        "turn on",
        "turn off",
        "switch on",
        "switch off",
        "nyalain",
        "nyalakan",
        "matikan",
        "matiin",
        "hidupkan",
    ),
    "music": (
        "music",
        "song",
        "songs",
        "play",
        "pause",
        "skip",
        "next track",
        "volume",
        "spotify",
        "playlist",
        "musik",
        "lagu",
        "putar",
        "puterin",
        "putarkan",
        "jeda",
    ),
    "workspace": (
        "email",
        "emails",
        "mail",
        "inbox",
        "calendar",
        "meeting",
        "meetings",
        "contact",
        "contacts",
        "surel",
        "kalender",
        "rapat",
        "kontak",
        "jadwal",
    ),
}


# Topics win over small talk: "hi, turn on the light" is a request, not a greeting.
_TOPICS: tuple[Intent, ...] = ("home", "music", "workspace", "capabilities")


def words_of(text: str) -> str:
    """Lower-cased words separated by single spaces, for whole-phrase matching."""
    return " " + " ".join(re.findall(r"[\w']+", text.lower())) + " "


def has_any(text: str, phrases: tuple[str, ...] | frozenset[str]) -> bool:
    padded = words_of(text)
    return any(f" {p} " in padded for p in phrases)


def detect_language(text: str) -> Lang:
    words = words_of(text).split()
    hits = sum(1 for w in words if w in _INDONESIAN)
    return "id" if hits and hits * 3 >= len(words) else "en"


def intent_of(text: str) -> Intent:
    """The first matching intent, checked from the most specific to the most general."""
    short = len(words_of(text).split()) <= 6
    for intent in _TOPICS:
        if has_any(text, _PHRASES[intent]):
            return intent
    if short and has_any(text, _PHRASES["goodbye"]):
        return "goodbye"
    if short and has_any(text, _PHRASES["thanks"]):
        return "thanks"
    if short and has_any(text, _PHRASES["greeting"]):
        return "greeting"
    return "other"
