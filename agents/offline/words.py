"""The offline model's vocabulary: which language a message is in and what it asks for.

Deliberately small and explicit: a rule here is a behaviour a test can name. Matching is
on whole words (or whole phrases), lower-cased, so "nyalain" and "turn on" both count.
A message can ask several things ("turn off the lights and play some jazz"): `clauses`
splits it and `topics_of` gives the domains in the order they were asked.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from agents.offline.skillset import claiming_order

Lang = Literal["en", "id"]
# A general intent, or the handle of the specialist whose domain the message is about.
Intent = str
# A domain is named by the specialist who looks after it ("zee": the smart home).
Topic = str

# Common Indonesian words; a message where a third of the words are among them is Indonesian.
_INDONESIAN = frozenset(
    [
        "aku",
        "tadi",
        "ngobrol",
        "sama",
        "kunci",
        "pintu",
        "kemarin",
        "ketemu",
        "ketemuan",
        "kamu",
        "gue",
        "gw",
        "lo",
        "lu",
        "tolong",
        "nyalain",
        "nyalakan",
        "matikan",
        "matiin",
        "hidupkan",
        "hidupin",
        "lampu",
        "kamar",
        "apa",
        "bisa",
        "dong",
        "ya",
        "yah",
        "gak",
        "ga",
        "nggak",
        "enggak",
        "ngga",
        "udah",
        "sudah",
        "belum",
        "halo",
        "hai",
        "pagi",
        "siang",
        "sore",
        "malam",
        "terima",
        "kasih",
        "ingatkan",
        "ingetin",
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
        "puterin",
        "lagu",
        "musik",
        "tutup",
        "tutupin",
        "buka",
        "bukain",
        "gorden",
        "tirai",
        "dah",
        "dadah",
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
        "dapur",
        "juga",
        "dong",
        "deh",
        "sih",
        "kok",
        "nih",
        "tuh",
        "redupin",
        "redupkan",
        "terangin",
        "terangkan",
        "setengah",
        "dingin",
        "dinginin",
        "hangat",
        "hangatin",
        "kipas",
        "kencang",
        "pelan",
        "sedang",
        "derajat",
        "suhu",
        "mode",
        "kering",
        "otomatis",
        "semua",
        "lampunya",
        "acnya",
        "gordennya",
        "apakah",
        "sekarang",
        "lagunya",
        "surel",
        "kalender",
        "rapat",
        "kontak",
        "jadwal",
        "pesan",
        "nya",
        "bantu",
        "siapa",
        "dulu",
        "tidur",
        "ruangan",
        "kecerahan",
        "bacain",
        "bacakan",
        "terakhir",
        "terbaru",
        "balas",
        "balesin",
        "kecilin",
        "gedein",
        "dikit",
        "nomor",
        "hp",
        "santai",
        "depan",
        "baca",
        "dari",
        "kirim",
        "kirimin",
        "bilang",
        "hari",
        "besok",
        "jadwalku",
        "kalenderku",
        "kontakku",
        "simpan",
        "tambah",
        "tambahin",
        "tambahkan",
        "masukin",
        "catat",
        "jadwalkan",
        "lihat",
        "nomer",
        "balesin",
        "bareng",
        "ganti",
        "ada",
        "baru",
        "iya",
        "boleh",
        "jangan",
        "batal",
        "batalin",
        "usah",
        "jadi",
        "hapus",
        "pengingat",
        "telepon",
        "buat",
        "setel",
        "setelin",
        "liat",
        "daftar",
        "isi",
        "isinya",
        "punya",
        "pindah",
        "pindahin",
        "alihin",
        "balikin",
        "aktif",
        "gas",
        "gaskeun",
        "sip",
        "yoi",
        "lanjut",
        "lanjutin",
        "makanan",
        "minuman",
        "nama",
        "namanya",
        "alergi",
        "ulang",
        "tahun",
        "tanggal",
        "kapan",
        "tinggal",
        "kerja",
        "dia",
        "suka",
        "banget",
        "bgt",
        "kita",
        "kami",
        "mereka",
        "gitu",
        "kayak",
        "kalo",
        "kalau",
        "telat",
        "nanti",
        "mana",
        "kenapa",
        "emang",
    ]
)

_PHRASES: dict[str, tuple[str, ...]] = {
    "goodbye": (
        "bye",
        "goodbye",
        "good bye",
        "see you",
        "good night",
        "dah",
        "dadah",
        "daah",
        "udahan",
        "sampai jumpa",
        "selamat tinggal",
        "that's all",
        "talk later",
        "selamat tidur",
    ),
    "thanks": (
        "thanks",
        "thank you",
        "makasih",
        "terima kasih",
        "thx",
        "nuhun",
        "thank u",
        "ty",
        "tysm",
        "thanks a lot",
        "thanks so much",
        "cheers",
        "makasi",
        "makasii",
        "tq",
        "trims",
        "thankyou",
        "tengkyu",
        # As a recogniser hears them: a phone line turned "thanks a lot" into "thank a lot".
        "thank",
        "appreciate it",
        "much appreciated",
    ),
    "capabilities": (
        "what can you do",
        "what do you do",
        "what can the team do",
        "who can do what",
        "help",
        "kamu bisa apa",
        "bisa apa aja",
        "bisa apa saja",
        "bisa ngapain",
        "kalian bisa apa",
        "what can you help with",
        "what else can you do",
        "what are you able to do",
        "what can u do",
        "apa yang bisa kamu lakukan",
        "apa yang bisa kamu lakuin",
        "apa aja yang bisa kamu lakuin",
        "apa yang kamu bisa",
        "bisa bantu apa",
        "bisa bantu apa aja",
        "kamu bisa ngapain aja",
        "lo bisa apa",
        "lu bisa apa",
    ),
    "who": (
        "who are you",
        "who r u",
        "kamu siapa",
        "siapa kamu",
        "kamu itu siapa",
        "who's here",
        "who is here",
        "siapa aja",
        "siapa saja",
    ),
    "how_are_you": ("how are you", "how's it going", "how are things", "apa kabar", "gimana kabarmu", "kabarnya"),
    "time": ("what time is it", "what's the time", "jam berapa", "what day is it", "hari apa", "tanggal berapa"),
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
        "selamat pagi",
        "selamat siang",
        "selamat sore",
        "selamat malam",
    ),
}

# Words that name a device: with one of them, "play" cannot be about music.
DEVICE_WORDS = (
    "light",
    "lights",
    "lamp",
    "lampu",
    "lampunya",
    "ac",
    "acnya",
    "aircon",
    "curtain",
    "curtains",
    "gorden",
    "gordennya",
    "tirai",
    "tv",
    "fan",
    "kipas",
)

# A follow-up that only makes sense with the previous request ("make it warmer").
FOLLOW_UP = (
    "too",
    "also",
    "as well",
    "it",
    "juga",
    "itu",
    "warmer",
    "cooler",
    "colder",
    "brighter",
    "dimmer",
    "hangatin",
    "dinginin",
    "terangin",
    "lebih",
    "more",
    "less",
    "the other one",
    "yang satunya",
    # what was just discussed: "read me the latest one", "reply to her", "louder"
    "one",
    "latest",
    "her",
    "him",
    "them",
    "louder",
    "quieter",
    "terakhir",
    "terbaru",
    "dia",
    "yang itu",
)

# Where one request ends and the next begins inside a message.
_CLAUSE_BREAK = re.compile(r"\s*(?:[,;.!?]+\s+|\s(?:and then|and|then|dan|terus|lalu|trus|abis itu|sama)\s)\s*", re.I)


# Why cached: one turn asks some 150 phrase lists about the same few clauses (every
# specialist's claim, every intent), and splitting the text again for each was the offline
# model's largest cost under load (BENCHMARKS.md, issue 24's load section). Bounded: the
# texts of the turns in flight and their clauses.
_WORDS_CACHED_MAX = 512


@functools.lru_cache(maxsize=_WORDS_CACHED_MAX)
def words_of(text: str) -> str:
    """Lower-cased words separated by single spaces, for whole-phrase matching."""
    return " " + " ".join(re.findall(r"[\w'°%]+", text.lower().replace("\u2019", "'"))) + " "


@functools.lru_cache(maxsize=_WORDS_CACHED_MAX)
def _padded(phrases: tuple[str, ...] | frozenset[str]) -> tuple[str, ...]:
    # The phrase lists are module constants: each is padded once, not on every question.
    return tuple(f" {p} " for p in phrases)


def has_any(text: str, phrases: tuple[str, ...] | frozenset[str]) -> bool:
    padded = words_of(text)
    return any(p in padded for p in _padded(phrases))


def _marked(word: str) -> bool:
    """An Indonesian suffix, but not English "-ain" ("curtain", "again")."""
    # "-ku", "-mu": my and your ("playlistku", "anakku", "favoritmu"), rare at an English word's end.
    return len(word) > 5 and word.endswith(("in", "kan", "nya", "ku", "mu")) and not word.endswith("ain")


def detect_language(text: str) -> Lang:
    words = [w for w in words_of(re.sub(r"@\w+", " ", text)).split() if not w.isdigit()]
    # Casual Jakarta verbs and possessives carry their own mark: nyalain, pesanin, matikan, lampunya.
    hits = sum(1 for w in words if w in _INDONESIAN or _marked(w))
    return "id" if hits and hits * 3 >= len(words) else "en"


def clauses(text: str) -> list[str]:
    """The parts of a message, split where one request ends and another begins."""
    return [c for c in _CLAUSE_BREAK.split(re.sub(r"@\w+", " ", text)) if c.strip()]


def topic_of(text: str) -> Topic | None:
    """The specialist whose domain one clause is about: the first, in the order their
    packages ask to be tried (agents/offline/skillset.py), whose words claim it."""
    for name, skills in claiming_order():
        if skills.claims(text):
            return name
    return None


def topics_of(text: str) -> list[Topic]:
    """Every domain a message asks about, in the order asked, each once."""
    found: list[Topic] = []
    for clause in clauses(text):
        topic = topic_of(clause)
        if topic is not None and topic not in found:
            found.append(topic)
    return found


def is_follow_up(text: str) -> bool:
    return has_any(text, FOLLOW_UP) or len(words_of(text).split()) <= 4


def intent_of(text: str) -> Intent:
    """The first matching intent, checked from the most specific to the most general."""
    short = len(words_of(text).split()) <= 6
    topics = topics_of(text)
    if topics:
        return topics[0]
    for intent in ("capabilities", "who", "time", "how_are_you"):
        if has_any(text, _PHRASES[intent]):
            return intent
    for intent in ("goodbye", "thanks", "greeting"):
        if short and has_any(text, _PHRASES[intent]):
            return intent
    return "other"


# How a question starts, and how a polite request does ("can you turn on ...?" asks for an action).
_QUESTION_START = (
    "is", "are", "was", "were", "what", "what's", "which", "how", "how's", "does", "do", "did", "apakah", "apa",
    "berapa", "gimana", "bagaimana", "status", "cek", "check",
)  # fmt: skip
_REQUEST_START = ("can", "could", "would", "will", "please", "tolong", "bisa", "coba", "pls", "mohon")


def is_question(text: str) -> bool:
    words = words_of(text).split()
    if not words or words[0] in _REQUEST_START:
        return False
    if text.strip().endswith("?"):
        return words[0] not in ("turn", "switch", "nyalain", "matiin", "open", "close", "buka", "tutup", "set")
    return words[0] in _QUESTION_START or has_any(text, ("status", "belum", "nggak sih"))


def in_language(lang: Lang, en: str, id_: str) -> str:
    return id_ if lang == "id" else en


def join(lang: Lang, items: list[str]) -> str:
    """ "a, b and c" in the person's language (never an English "and" in Indonesian)."""
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + (" dan " if lang == "id" else " and ") + items[-1]
