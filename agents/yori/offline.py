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
from agents.offline.words import DEVICE_WORDS, Lang, has_any, is_question, join, words_of

# Words that put a clause in music; with a device word, "play" is not about music.
MUSIC_WORDS = (
    "music", "song", "songs", "play", "pause", "skip", "next track", "next song", "volume", "spotify", "playlist",
    "playing", "jazz", "musik", "lagu", "lagunya", "putar", "puterin", "putarkan", "setel", "jeda",
    "louder", "quieter", "softer", "volumenya", "suaranya", "gedein", "kecilin", "kecilkan", "keraskan", "kerasin",
    "playlists", "playlistku", "playlistnya", "daftar putar", "speaker", "speakers", "speakernya", "musiknya",
    "musikku", "laguku", "mute", "unmute", "too loud", "kekencengan", "kekerasan", "this song", "lagu ini",
    "who sings", "penyanyinya", "too quiet", "kekecilan",
)  # fmt: skip


def claims(clause: str) -> bool:
    return has_any(clause, MUSIC_WORDS) and not has_any(clause, DEVICE_WORDS)


Want = Literal[
    "play", "resume", "pause", "next", "previous", "volume", "louder", "now_playing", "playlist", "devices", "move",
    "unmute",
]  # fmt: skip

_NOW_PLAYING = ("what's playing", "what is playing", "now playing", "what song", "which song", "lagu apa", "lagu apaan",
                "who sings", "who's singing", "who is singing", "who's this", "who is this", "song called",
                "what's this song", "what is this song", "name of this song", "this song called", "siapa yang nyanyi",
                "siapa penyanyinya", "penyanyinya siapa", "judul lagunya", "judulnya apa", "lagu apa ini",
                "whats playing", "whats this song", "what song is this", "what's this", "whats this",
                "what is this")  # fmt: skip
_PAUSE = ("pause", "stop the music", "stop music", "stop", "jeda", "jedain", "hentikan", "berhenti", "stop lagunya",
          "turn it off", "turn off the music", "turn the music off", "switch it off", "matiin musiknya",
          "matiin lagunya", "udahan musiknya", "enough music")  # fmt: skip
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
    # said about the song rather than to the player: "I don't like this song", "ganti lagu lain"
    "don't like this song",
    "dont like this song",
    "don't like this one",
    "dont like this one",
    "hate this song",
    "something else",
    "another song",
    "a different song",
    "lagu lain",
    "ganti lagunya",
    "nggak suka lagu ini",
    "gak suka lagu ini",
    "ga suka lagu ini",
)
_PREVIOUS = ("previous", "go back", "last song", "sebelumnya", "lagu sebelumnya")
_RESUME = ("resume", "continue", "unpause", "lanjutkan", "lanjutin", "terusin")
_PLAY = re.compile(
    r"\b(?:play|put on|putar|putarkan|puterin|setel|setelin|mainkan|dengerin|"
    r"(?:wanna|want to|like to|let's|lets|let me|can i|could i|mau)\s+(?:hear|listen to|dengerin))\b(.*)",
    re.IGNORECASE,
)
_VOLUME = re.compile(r"\b(?:volume|volumenya|vol)\b\D{0,12}?(-?\d{1,4})\s*%?", re.IGNORECASE)
# A volume change by how much ("a bit louder", "turn it down a lot", "kecilin dikit").
_UP = ("louder", "up", "turn it up", "raise", "increase", "gedein", "gedeín", "besarin", "besarkan", "keraskan",
       "kerasin", "naikin", "naikkan", "kencengin", "can't hear", "cant hear", "cannot hear", "can not hear",
       "barely hear", "nggak kedengeran", "gak kedengeran", "ga kedengeran", "kurang kenceng", "kurang keras",
       "too quiet", "too soft", "terlalu pelan", "kekecilan", "kepelanan")  # fmt: skip
_DOWN = ("quieter", "softer", "down", "lower", "decrease", "reduce", "kecilin", "kecilkan", "pelanin", "pelankan",
         "turunin", "turunkan", "too loud", "kekencengan", "kekerasan", "terlalu keras", "terlalu kenceng")  # fmt: skip
# "I can't hear the music" is the music's volume; "I can't hear you" is not.
_LOUDNESS = ("volume", "volumenya", "vol", "louder", "quieter", "softer", "suaranya", "music", "musik", "it", "lagunya",
             "musiknya", "song", "lagu")  # fmt: skip
_BY = re.compile(r"\bby\s+(\d{1,3})\b|\b(\d{1,3})\s*(?:%|persen|percent)?\s*(?:more|less|lagi)\b", re.IGNORECASE)
# What "put some music on" plays when nothing was playing before: a genre, searched as any other.
_ANYTHING = "pop"
_PUT_ON = re.compile(r"\bput ((?:\w+ ){0,3}?\w+) (?:back )?on\b", re.IGNORECASE)
_MUTE = ("mute", "mute it", "mute the music", "senyapin", "bisuin")
_UNMUTE = ("unmute", "unmute it", "sound back on", "turn the sound back on", "nyalain suaranya lagi", "bunyiin lagi")
# What "unmute" brings a silent device back to when the service did not keep the volume from
# before the mute (the sandbox keeps it as the device's "muted_from"; Spotify does not).
_UNMUTED_PERCENT = 50
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
    "something sesuatu yori to for while i'm im music vibes vibe kind of sort tunes yg dong deh nih play pls plz "
    "it again that ok okay lagi"
)
_FILLER = frozenset(_FILLER_WORDS.split())


def _pick(lang: Lang, en: str, id_: str) -> str:
    return id_ if lang == "id" else en


def _step(request: str) -> int | None:
    """A change of volume asked for, in points (+ louder, - quieter), or None."""
    up, down = has_any(request, _UP), has_any(request, _DOWN)
    alone = ("louder", "quieter", "softer", "gedein", "kecilin", "kecilkan", "kerasin", "keraskan", "pelanin",
             "too loud", "kekencengan", "kekerasan", "terlalu keras", "terlalu kenceng", "too quiet", "too soft",
             "terlalu pelan", "kekecilan", "kepelanan")  # fmt: skip
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


# Playlists, the person's playback devices, and moving what plays from one to another.
_PLAYLIST = ("playlist", "playlists", "playlistku", "playlistnya", "playlist2", "daftar putar", "mixtape")
_PLAY_VERB = ("play", "putar", "putarkan", "puterin", "puter", "setel", "setelin", "mainkan", "start", "shuffle",
              "put on", "dengerin", "listen to")  # fmt: skip
# Words around a playlist's name that are not its name ("play the playlist called Chill").
_NOT_NAME_WORDS = (
    "playlist playlists playlistku playlistnya daftar putar called named namanya bernama judulnya yang on put can "
    "could would you u your pls please tolong dong ya ku gue gw saya start shuffle puter putar putarkan puterin "
    "setel setelin mainkan dengerin listen hear just again lagi the of with"
)
_NOT_NAME = _FILLER | frozenset(_NOT_NAME_WORDS.split())
_TRACKS_OF = ("what's on", "what is on", "what's in", "what is in", "songs", "tracks", "isi", "isinya", "lagu apa",
              "lagu2", "lagunya apa", "apa aja lagunya", "lagu-lagu", "show me", "liat", "lihat")  # fmt: skip
_MOVE = ("move", "switch", "transfer", "send", "put", "back to", "continue on", "pindah", "pindahin", "balikin",
         "kembalikan", "taruh", "pindahkan", "alihkan", "alihin", "lanjutin di", "lanjutkan di", "puterin di",
         "putar di", "setel di")  # fmt: skip
_DEVICE_ASK = ("devices", "device", "speakers", "perangkat", "where can i play", "what can i play on",
               "bisa muter di mana", "bisa diputar di mana", "muter di mana aja", "speaker apa", "speakers do i have",
               "play music on", "speaker")  # fmt: skip
# How people name a playback device, and the words of its name they mean.
_DEVICE_ALIASES = {
    "hp": "phone", "handphone": "phone", "hape": "phone", "ponsel": "phone", "phone": "phone", "telepon": "phone",
    "speaker": "speaker", "speakers": "speaker", "speakernya": "speaker", "spiker": "speaker",
    "ruang tamu": "living room", "living room": "living room", "lounge": "living room",
}  # fmt: skip


def _device_words(request: str) -> set[str]:
    """The words of a device's name the request points at ("speaker ruang tamu": speaker, living room)."""
    padded = words_of(request)
    return {name for alias, name in _DEVICE_ALIASES.items() if f" {alias} " in padded}


def _want(request: str) -> tuple[Want, Any] | None:
    # "put some music on", "put the jazz back on": the same as "put on ..."
    request = _PUT_ON.sub(r"put on \1", request)
    if has_any(request, _PLAYLIST):
        return "playlist", None
    named = _device_words(request)
    if named and (has_any(request, _MOVE) or has_any(request, _PLAY_VERB)) and not is_question(request):
        return "move", named
    asking = ("list", "show", "daftar", "which", "what", "apa aja", "apa saja", "mana aja", "mana saja")
    if has_any(request, _DEVICE_ASK) and (is_question(request) or has_any(request, asking)):
        return "devices", None
    if has_any(request, _UNMUTE):
        return "unmute", None
    if has_any(request, _MUTE):
        return "volume", 0
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


# Words that are about the music only once it is being talked about ("what's this?" after
# "play some jazz"): Yori answers them as a follow-up, never claims them from nothing.
_VAGUE = ("what's this", "whats this", "what is this", "who's this", "who is this", "something else")


def wants_music(request: str) -> bool:
    """Is this one of Yori's requests ("next", "volume 30", "what's playing?")?"""
    if has_any(request, _VAGUE) and not has_any(request, MUSIC_WORDS):
        return False
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


def _play(
    s: Situation, lang: Lang, query: str, *, missing: str = "", names: str = ""
) -> tuple[str, list[FunctionCall]]:
    """Search, then play the first track found. `missing`: the playlist name asked for that
    the person does not have, said before what plays instead (`names`: the ones they have)."""
    name, last = s.results[-1] if s.results else ("", {})
    found = s.last_result("search_tracks")
    if found is None:
        return "", [call("search_tracks", {"query": query, "limit": 5})]
    tracks = found.get("tracks", [])
    if not tracks and missing:
        return _pick(
            lang,
            f"You have no playlist called “{missing}”. Which one: {names}?".replace(" and ", " or "),
            f"Kamu nggak punya playlist “{missing}”. Yang mana: {names}?".replace(" dan ", " atau "),
        ), []
    if not tracks:
        return _pick(lang, f"I couldn't find anything for “{query}”.", f"Aku nggak nemu lagu buat “{query}”."), []
    first = tracks[0]
    if name == "play" and "error" not in last:
        instead = _pick(
            lang,
            f"You have no playlist called “{missing}”, so here's something that fits. ",
            f"Kamu nggak punya playlist “{missing}”, jadi aku puterin yang cocok. ",
        )
        return (instead if missing else "") + _pick(
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
    if kind == "resume" and s.last_result("search_tracks") is not None:
        return _play(s, lang, _ANYTHING)  # nothing was loaded to resume: something is played
    if "error" in last:
        if kind == "resume" and name == "play" and "Nothing is loaded" in str(last["error"]):
            return _play(s, lang, _ANYTHING)
        if name == "play" and "active" in str(last["error"]) and s.last_result("my_devices") is None:
            return "", [call("my_devices", {})]
        return _failed(lang, str(last["error"]))
    if kind == "play" and has_any(s.previous_request, _PLAYLIST):
        # Right after the playlists were talked about, "play Focus" may name one of them.
        return _playlist(s, lang, otherwise=str(value))
    if kind == "play":
        return _play(s, lang, str(value))
    if kind == "playlist":
        return _playlist(s, lang)
    if kind == "devices":
        return _devices(s, lang)
    if kind == "move":
        return _move(s, lang, set(value))
    if kind == "louder":
        return _louder(s, lang, int(value))
    if kind == "unmute":
        return _unmute(s, lang)
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


def _playing_device(
    s: Situation, lang: Lang
) -> tuple[dict[str, Any], dict[str, Any], tuple[str, list[FunctionCall]] | None]:
    """The device now playing, for a volume change: or, first, the step that finds it out
    (ask what is playing) or the answer that nothing is."""
    state = s.last_result("now_playing")
    if state is None:
        return {}, {}, ("", [call("now_playing", {})])
    device = state.get("device") or {}
    if not device:
        nothing = _pick(lang, "Nothing is playing on any device right now.", "Lagi nggak ada perangkat yang muter.")
        return state, {}, (nothing, [])
    return state, device, None


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
    _state, device, step_first = _playing_device(s, lang)
    if step_first is not None:
        return step_first
    percent = max(0, min(100, int(device.get("volume") or 0) + step))
    return "", [call("set_volume", {"percent": percent})]


def _unmute(s: Situation, lang: Lang) -> tuple[str, list[FunctionCall]]:
    """Sound back on: a silent device goes back to its volume before the mute (else a middle one)."""
    done = s.last_result("set_volume")
    if done is not None:
        percent = int(done.get("percent", 0))
        return _pick(
            lang,
            f"The sound is back on: volume is at {percent}%{_where(lang, done)}.",
            f"Suaranya udah nyala lagi, volume sekarang {percent}%{_where(lang, done)}.",
        ), []
    state, device, step_first = _playing_device(s, lang)
    if step_first is not None:
        return step_first
    volume = int(device.get("volume") or 0)
    if volume > 0:
        return _pick(
            lang,
            f"It isn't muted: volume is at {volume}%{_where(lang, state)}.",
            f"Suaranya nggak di-mute kok, volume sekarang {volume}%{_where(lang, state)}.",
        ), []
    before = device.get("muted_from")
    percent = before if isinstance(before, int) and 0 < before <= 100 else _UNMUTED_PERCENT
    return "", [call("set_volume", {"percent": percent})]


def _named_playlist(request: str, playlists: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The playlist the request names ("my focus playlist", "playlist Road Trip"), if any."""
    said = set(words_of(request).split())
    fits = [p for p in playlists if set(words_of(str(p["name"])).split()) <= said]
    return max(fits, key=lambda p: len(str(p["name"])), default=None)


def _said_name(request: str) -> str:
    """The words a request names a playlist by, as said ("gym" of "play my gym playlist"), or ''."""
    words = re.findall(r"[\w'&-]+", request)
    return " ".join(w for w in words if w.lower() not in _NOT_NAME and w.lower() not in ("my", "me", "aku"))


def _partly_named(said: str, playlists: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one playlist whose name holds every word said ("my jazz playlist": Jazz Evenings)."""
    wanted = set(words_of(said).split())
    fits = [p for p in playlists if wanted <= set(words_of(str(p["name"])).split())]
    return fits[0] if len(fits) == 1 else None


def _titles(lang: Lang, names: list[str]) -> list[str]:
    # In Indonesian a name is quoted: it is data, not words of the sentence.
    return [f"“{n}”" for n in names] if lang == "id" else names


def _playlist(s: Situation, lang: Lang, otherwise: str | None = None) -> tuple[str, list[FunctionCall]]:
    """Play a playlist, list what is on one, or list them all: the playlists are read first.
    `otherwise`: what to search for and play when no playlist is named after all."""
    listing = s.last_result("my_playlists")
    if listing is None:
        return "", [call("my_playlists", {})]
    playlists: list[dict[str, Any]] = listing.get("playlists", [])
    where = _where(lang, listing)
    chosen = _named_playlist(s.request, playlists)
    if chosen is None and otherwise is not None:
        return _play(s, lang, otherwise)
    names = join(lang, _titles(lang, [str(p["name"]) for p in playlists]))
    wants_play = has_any(s.request, _PLAY_VERB) and not has_any(s.request, _TRACKS_OF)
    said = _said_name(s.request)
    if chosen is None and said:
        chosen = _partly_named(said, playlists)
    if chosen is None and said and wants_play:
        # No playlist by that name ("play my gym playlist"): said so, and music that fits the
        # name is played instead (a mood or an activity, else the words themselves).
        return _play(s, lang, _mood(said.lower()), missing=said, names=names)
    if chosen is None:
        if not playlists:
            return _pick(lang, f"You have no playlists yet{where}.", f"Kamu belum punya playlist{where}."), []
        if wants_play:
            return _pick(lang, f"Which playlist: {names}?", f"Playlist yang mana: {names}?").replace(
                " and ", " or "
            ).replace(" dan ", " atau "), []
        count = len(playlists)
        return _pick(
            lang,
            f"You have {count} playlist{'s' if count != 1 else ''}{where}: {names}.",
            f"Kamu punya {count} playlist{where}: {names}.",
        ), []
    title = _titles(lang, [str(chosen["name"])])[0]
    if wants_play:
        done, name = s.last_result("play"), s.results[-1][0]
        if done is not None and "error" not in done:
            return _pick(
                lang, f"Now playing your {title} playlist{_where(lang, done)}.",
                f"Sekarang muter playlist {title}{_where(lang, done)}.",
            ), []  # fmt: skip
        if name == "my_devices":
            devices = s.results[-1][1].get("devices", [])
            if not devices:
                return _pick(lang, "Open Spotify on a device first.", "Buka Spotify dulu ya."), []
            return "", [call("play", {"context_uri": chosen["uri"], "device_id": devices[0]["id"]})]
        return "", [call("play", {"context_uri": chosen["uri"]})]
    found = s.last_result("playlist_tracks")
    if found is None:
        return "", [call("playlist_tracks", {"playlist_id": chosen["id"]})]
    # Titles quoted in both languages: a list of names is data ("Senja di Jakarta" is no Indonesian in English).
    tracks = [f"“{t['name']}”" for t in found.get("tracks", [])][:_LISTED_MAX]
    if not tracks:
        return _pick(lang, f"{title} is empty.", f"Playlist {title} masih kosong."), []
    return _pick(
        lang, f"On {title}: {join(lang, tracks)}.", f"Isi playlist {title}: {join(lang, tracks)}."
    ), []  # fmt: skip


_LISTED_MAX = 10


def _device_said(lang: Lang, device: dict[str, Any]) -> str:
    name = str(device["name"])
    return f"the {name.lower()}" if lang == "en" else f"“{name}”"


def _devices(s: Situation, lang: Lang) -> tuple[str, list[FunctionCall]]:
    """Where the person can play: each device, which one is active and at what volume."""
    listing = s.last_result("my_devices")
    if listing is None:
        return "", [call("my_devices", {})]
    devices: list[dict[str, Any]] = listing.get("devices", [])
    if not devices:
        return _pick(
            lang, "No device is open right now: open Spotify on one first.", "Belum ada perangkat yang kebuka."
        ), []
    said = []
    for d in devices:
        state = (
            _pick(lang, f" (playing here, volume {d.get('volume')}%)", f" (aktif, volume {d.get('volume')}%)")
            if d.get("is_active")
            else ""
        )
        said.append(_device_said(lang, d) + state)
    sandbox = listing.get("account") == "sandbox"
    return _pick(
        lang,
        ("On your sandbox player you" if sandbox else "You") + f" can play on {join(lang, said)}.",
        f"Kamu bisa muter di {join(lang, said)}" + (", di pemutar sandbox-mu." if sandbox else "."),
    ), []


def _move(s: Situation, lang: Lang, named: set[str]) -> tuple[str, list[FunctionCall]]:
    """Move what plays to the device the person named: read the devices, then transfer."""
    listing = s.last_result("my_devices")
    if listing is None:
        return "", [call("my_devices", {})]
    devices: list[dict[str, Any]] = listing.get("devices", [])
    padded = {d["id"]: words_of(str(d["name"])) for d in devices}
    fits = [d for d in devices if all(f" {w} " in padded[d["id"]] for w in named)]
    if len(fits) != 1:
        options = join(lang, [_device_said(lang, d) for d in fits or devices])
        options = options.replace(" and ", " or ").replace(" dan ", " atau ")
        return _pick(lang, f"Which device: {options}?", f"Perangkat yang mana: {options}?"), []
    target = fits[0]
    done = s.last_result("transfer_playback")
    if done is None:
        return "", [call("transfer_playback", {"device_id": target["id"], "play": True})]
    return _pick(
        lang,
        f"Moved the music to {_device_said(lang, target)}{_where(lang, done)}.",
        f"Udah aku pindahin musiknya ke {_device_said(lang, target)}{_where(lang, done)}.",
    ), []
