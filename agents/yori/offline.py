"""Yori's offline behaviour: play (a search, then play its first track), pause, resume,
next, previous, volume and "what's playing", in English and Indonesian.

Every action goes through Yori's tools, in the order the real model is told to use them
(search before play, never a guessed uri; on "no active device", list the devices and
play on one). A tool error becomes one plain sentence. Returns None for anything else,
so the general specialist rules answer it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from agents.model import FunctionCall
from agents.offline.situation import Situation, call
from agents.offline.words import DEVICE_WORDS, Lang, has_any, words_of

# Words that put a clause in music; with a device word, "play" is not about music.
MUSIC_WORDS = (
    "music", "song", "songs", "play", "pause", "skip", "next track", "next song", "volume", "spotify", "playlist",
    "playing", "jazz", "musik", "lagu", "lagunya", "putar", "puterin", "putarkan", "setel", "jeda",
    "louder", "quieter", "softer", "volumenya", "suaranya", "gedein", "kecilin", "kecilkan", "keraskan", "kerasin",
)  # fmt: skip


def claims(clause: str) -> bool:
    return has_any(clause, MUSIC_WORDS) and not has_any(clause, DEVICE_WORDS)


Want = Literal["play", "resume", "pause", "next", "previous", "volume", "louder", "now_playing"]

_NOW_PLAYING = ("what's playing", "what is playing", "now playing", "what song", "which song", "lagu apa", "lagu apaan")
_PAUSE = ("pause", "stop the music", "stop music", "stop", "jeda", "jedain", "hentikan", "berhenti", "stop lagunya")
_NEXT = (
    "next",
    "skip",
    "next song",
    "next track",
    "selanjutnya",
    "berikutnya",
    "lagu berikutnya",
    "ganti lagu",
    "skip lagu",
)
_PREVIOUS = ("previous", "go back", "last song", "sebelumnya", "lagu sebelumnya")
_RESUME = ("resume", "continue", "unpause", "lanjutkan", "lanjutin", "terusin")
_PLAY = re.compile(r"\b(?:play|putar|putarkan|puterin|setel|setelin|mainkan)\b(.*)", re.IGNORECASE)
_VOLUME = re.compile(r"\b(?:volume|volumenya|vol)\b\D{0,12}?(-?\d{1,4})\s*%?", re.IGNORECASE)
# A volume change by how much ("a bit louder", "turn it down a lot", "kecilin dikit").
_UP = ("louder", "up", "turn it up", "raise", "increase", "gedein", "gedeín", "besarin", "besarkan", "keraskan",
       "kerasin", "naikin", "naikkan", "kencengin")  # fmt: skip
_DOWN = ("quieter", "softer", "down", "lower", "decrease", "reduce", "kecilin", "kecilkan", "pelanin", "pelankan",
         "turunin", "turunkan")  # fmt: skip
_LOUDNESS = ("volume", "volumenya", "vol", "louder", "quieter", "softer", "suaranya", "music", "musik", "it", "lagunya")
_BY = re.compile(r"\bby\s+(\d{1,3})\b|\b(\d{1,3})\s*(?:%|persen|percent)?\s*(?:more|less|lagi)\b", re.IGNORECASE)
_A_LOT = ("a lot", "much", "way", "banyak", "banget")
# A mood or an activity, played as the genre that suits it.
_MOODS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("relaxing", "relax", "chill", "chilled", "calm", "calming", "mellow", "santai", "tenang", "rileks", "adem",
      "study", "studying", "focus", "belajar", "fokus", "kerja", "work", "working", "hujan", "rainy"), "lofi"),
    (("sleep", "sleepy", "tidur", "piano", "peaceful", "classic", "klasik"), "classical"),
    (("party", "upbeat", "energetic", "workout", "gym", "running", "olahraga", "semangat", "pesta", "nyetir",
      "driving", "road trip", "loud"), "rock"),
    (("happy", "cheerful", "ceria", "senang", "seneng", "morning", "pagi"), "pop"),
    (("romantic", "romantis", "dinner", "makan malam", "evening", "sore"), "jazz"),
    (("indonesian", "indo", "lokal", "galau", "sad", "sedih"), "indonesian pop"),
)  # fmt: skip
# Words around what to play that are not what to play.
_FILLER_WORDS = (
    "some a an the me my music musik song songs lagu lagu2 track tracks please dong ya yang untuk buat aku saya "
    "something sesuatu yori to for while i'm im music vibes vibe kind of sort tunes yg dong deh nih play pls plz"
)
_FILLER = frozenset(_FILLER_WORDS.split())


def _pick(lang: Lang, en: str, id_: str) -> str:
    return id_ if lang == "id" else en


def _step(request: str) -> int | None:
    """A change of volume asked for, in points (+ louder, - quieter), or None."""
    up, down = has_any(request, _UP), has_any(request, _DOWN)
    alone = ("louder", "quieter", "softer", "gedein", "kecilin", "kecilkan", "kerasin", "keraskan", "pelanin")
    if up == down or not (has_any(request, _LOUDNESS) or has_any(request, alone)):
        return None
    by = _BY.search(request)
    amount = int(by.group(1) or by.group(2)) if by else (25 if has_any(request, _A_LOT) else 10)
    return amount if up else -amount


def _mood(query: str) -> str:
    """What to search for: the genre a mood or an activity asks for, else the words as said."""
    padded = f" {query} "
    for words, genre in _MOODS:
        if any(f" {w} " in padded for w in words):
            return genre
    return query


def _want(request: str) -> tuple[Want, Any] | None:
    volume = _VOLUME.search(request)
    if volume:
        return "volume", int(volume.group(1))
    step = _step(request)
    if step is not None:
        return "louder", step
    if has_any(request, _NOW_PLAYING):
        return "now_playing", None
    if has_any(request, _PAUSE):
        return "pause", None
    if has_any(request, _NEXT):
        return "next", None
    if has_any(request, _PREVIOUS):
        return "previous", None
    if has_any(request, _RESUME):
        return "resume", None
    match = _PLAY.search(request)
    if match:
        query = " ".join(w for w in words_of(match.group(1)).split() if w not in _FILLER)
        return ("play", _mood(query)) if query else ("resume", None)
    return None


def wants_music(request: str) -> bool:
    """Is this one of Yori's requests ("next", "volume 30", "what's playing?")?"""
    return _want(request) is not None


def _where(lang: Lang, result: dict[str, Any] | None) -> str:
    """Says whether this was the sandbox player, so the person always knows (no brackets:
    on a call Ava may relay this sentence, and speech cannot say them)."""
    if result is None or result.get("account") != "sandbox":
        return ""
    return _pick(lang, " on your sandbox player", " di pemutar sandbox-mu")


def _track_words(track: dict[str, Any], lang: Lang = "en") -> str:
    # In Indonesian the title is quoted: it is a name, not words of the sentence.
    if lang == "id":
        return f"“{track['name']}” dari {', '.join(track['artists'])}"
    return f"{track['name']} by {', '.join(track['artists'])}"


def _failed(lang: Lang, error: str) -> tuple[str, list[FunctionCall]]:
    # The tool's hint, as one sentence; "do not retry" is advice for the model, not the person.
    reason = error.split("; do not retry")[0].rstrip(".")
    reason = reason[:1].lower() + reason[1:]
    return _pick(lang, f"I couldn't do that: {reason}.", f"Maaf, gagal: {reason}."), []


def _play(s: Situation, lang: Lang, query: str) -> tuple[str, list[FunctionCall]]:
    name, last = s.results[-1] if s.results else ("", {})
    found = s.last_result("search_tracks")
    if found is None:
        return "", [call("search_tracks", {"query": query, "limit": 5})]
    tracks = found.get("tracks", [])
    if not tracks:
        return _pick(lang, f"I couldn't find anything for “{query}”.", f"Aku nggak nemu lagu buat “{query}”."), []
    first = tracks[0]
    if name == "play" and "error" not in last:
        return _pick(
            lang, f"Now playing {_track_words(first)}", f"Sekarang muter {_track_words(first, lang)}"
        ) + _where(lang, last) + ".", []
    if name == "my_devices":
        devices = last.get("devices", [])
        if not devices:
            return _pick(
                lang, "Open Spotify on a device first, then ask me again.", "Buka Spotify dulu ya, terus minta lagi."
            ), []
        return "", [call("play", {"uri": first["uri"], "device_id": devices[0]["id"]})]
    return "", [call("play", {"uri": first["uri"]})]


def music_turn(s: Situation) -> tuple[str, list[FunctionCall]] | None:
    want = _want(s.request)
    if want is None:
        return None
    lang = s.lang
    kind, value = want
    name, last = s.results[-1] if s.results else ("", {})
    if "error" in last:
        if name == "play" and "active" in str(last["error"]) and s.last_result("my_devices") is None:
            return "", [call("my_devices", {})]
        return _failed(lang, str(last["error"]))
    if kind == "play":
        return _play(s, lang, str(value))
    if kind == "louder":
        return _louder(s, lang, int(value))
    if not s.results:
        first = {
            "volume": call("set_volume", {"percent": value}),
            "now_playing": call("now_playing", {}),
            "pause": call("pause", {}),
            "next": call("skip_next", {}),
            "previous": call("skip_previous", {}),
            "resume": call("play", {}),
        }[kind]
        return "", [first]
    if kind in ("next", "previous", "resume") and name != "now_playing":
        return "", [call("now_playing", {})]
    return _report(lang, kind, value, last), []


def _report(lang: Lang, kind: Want, value: Any, last: dict[str, Any]) -> str:
    where = _where(lang, last)
    if kind == "volume":
        return _pick(lang, f"Volume is at {value}%{where}.", f"Volume udah {value}%{where}.")
    if kind == "pause":
        return _pick(lang, f"Paused{where}.", f"Udah aku jeda{where}.")
    track = last.get("track")
    if not track:
        return _pick(lang, f"Nothing is playing right now{where}.", f"Lagi nggak ada yang diputar{where}.")
    words = _track_words(track, lang)
    if kind == "now_playing" and not last.get("playing"):
        return _pick(lang, f"{words} is paused{where}.", f"{words} lagi dijeda{where}.")
    lead = {"next": ("Skipped. Now playing", "Udah aku skip. Sekarang"), "previous": ("Back to", "Balik ke")}
    en, id_ = lead.get(kind, ("Playing", "Lagi muter"))
    return _pick(lang, f"{en} {words}{where}.", f"{id_} {words}{where}.")


def _louder(s: Situation, lang: Lang, step: int) -> tuple[str, list[FunctionCall]]:
    """Louder or quieter: read the active device's volume, then set it that much further."""
    done = s.last_result("set_volume")
    if done is not None:
        percent = int(done.get("percent", 0))
        where = _where(lang, done)
        word = _pick(lang, "up" if step > 0 else "down", "aku gedein" if step > 0 else "aku kecilin")
        return _pick(
            lang,
            f"Turned it {word}: volume is at {percent}%{where}.",
            f"Udah {word}, volume sekarang {percent}%{where}.",
        ), []
    state = s.last_result("now_playing")
    if state is None:
        return "", [call("now_playing", {})]
    device = state.get("device") or {}
    if not device:
        return _pick(lang, "Nothing is playing on any device right now.", "Lagi nggak ada perangkat yang muter."), []
    percent = max(0, min(100, int(device.get("volume") or 0) + step))
    return "", [call("set_volume", {"percent": percent})]
