"""Reading a smart-home request the way Zee should: clause by clause, which devices (kind,
room, or something this home may not have), whether it is a question, and what to change.

Deliberately explicit, English and Indonesian (casual Jakarta register too): each phrase
list is a behaviour a scenario can name. A follow-up ("and the living room too", "make it
warmer") borrows what it leaves out from the previous request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from agents.offline.words import clauses, has_any, is_question, topic_of, words_of

_KINDS: dict[str, tuple[str, ...]] = {
    "dj": ("light", "lights", "lamp", "lamps", "lampu", "lampunya", "bulb"),
    "kt": ("ac", "acnya", "aircon", "air con", "air conditioner", "air conditioning"),
    "cl": ("curtain", "curtains", "gorden", "gordennya", "tirai", "blind", "blinds"),
    "ms": ("door", "front door", "lock", "door lock", "pintu", "pintunya", "pintu depan", "kunci pintu"),
}
KIND_ID = {"dj": "lampu", "kt": "AC", "cl": "gorden", "ms": "kunci pintu"}
# Things people ask for that this home may not have: asked about, never guessed at.
_OTHER_THINGS = {
    "TV": ("tv", "television", "televisi"),
    "fan": ("fan", "ceiling fan"),
    "heater": ("heater", "pemanas"),
    "garage door": ("garage door", "garasi"),
    "gate": ("gate", "gerbang", "pagar"),
    "kettle": ("kettle", "coffee machine", "rice cooker"),
}
# Longest phrases first, so "kamar mandi" is a bathroom and not the bedroom.
_ROOMS: dict[str, tuple[str, ...]] = {
    "bathroom": ("bathroom", "kamar mandi", "toilet"),
    "kids room": ("kids room", "kamar anak"),
    "dining room": ("dining room", "ruang makan"),
    "living room": ("living room", "lounge", "ruang tamu", "ruang keluarga", "ruang tengah", "living"),
    "bedroom": ("bedroom", "kamar tidur", "kamar"),
    "kitchen": ("kitchen", "dapur"),
    "office": ("office", "study", "ruang kerja"),
    "garage": ("garage", "garasi"),
    "garden": ("garden", "taman", "teras", "terrace"),
}
ROOM_ID = {
    "bathroom": "kamar mandi",
    "kids room": "kamar anak",
    "dining room": "ruang makan",
    "living room": "ruang tamu",
    "bedroom": "kamar",
    "kitchen": "dapur",
    "office": "ruang kerja",
    "garage": "garasi",
    "garden": "taman",
}
_PLURAL = ("lights", "lamps", "curtains", "blinds", "all", "both", "semua", "semuanya", "everything", "every")
_EVERYTHING = ("everything", "all devices", "semuanya", "semua perangkat", "all of them")
_TEMPERATURE = ("temperature", "temp", "suhu", "degrees", "derajat", "berapa derajat", "set to", "disetel")
# "turn of", "switch of": the commonest typo of "off"; "kill the lights" as people say it.
_OFF = ("turn off", "switch off", "off", "matikan", "matiin", "padamkan", "padamin", "mati", "shut off", "turn of",
        "switch of", "kill", "matiin aja")  # fmt: skip
# "lights of pls": "of" where only "off" can stand, at the end of the request.
_OF_AT_END = re.compile(r"\bof\b(?=(?:\s+(?:pls|please|plz|now|thanks|thx|dong|ya))*[\s.!]*$)")
_ON = ("turn on", "switch on", "on", "nyalain", "nyalakan", "hidupkan", "hidupin", "nyala", "idupin")
_OPEN = ("open", "buka", "bukain", "bukakan")
_CLOSE = ("close", "shut", "tutup", "tutupin", "tutupkan", "lower", "draw")
_STOP = ("stop", "berhenti", "stop gordennya", "setop")
_HALF = ("halfway", "half", "half way", "setengah", "separuh")


@dataclass(frozen=True, slots=True)
class Action:
    what: str  # power, curtain, brightness, brighter, colour, warmer, cooler, temp, mode, fan
    value: Any


@dataclass(frozen=True, slots=True)
class Ask:
    """One clause of a home request: which devices, and what to do (nothing: a read)."""

    kinds: tuple[str, ...] = ()
    rooms: tuple[str, ...] = ()
    others: tuple[str, ...] = ()
    plural: bool = False
    question: bool = False
    actions: tuple[Action, ...] = field(default=())
    everything: bool = False
    asked_temperature: bool = False
    # Read from how the room feels ("it's dark in here"), not from a device named.
    implied: bool = False

    @property
    def shown(self) -> frozenset[str]:
        """What the reply should mention beyond on/off: the settings asked about."""
        asked = frozenset({"temp"}) if self.asked_temperature else frozenset()
        return asked | frozenset(a.what for a in self.actions)


def rooms_in(text: str) -> tuple[tuple[str, ...], str]:
    """Rooms named in the text, and the text without them (so "kamar" is not found twice)."""
    padded = words_of(text)
    found: list[str] = []
    for room, phrases in _ROOMS.items():
        for phrase in phrases:
            if f" {phrase} " in padded:
                found.append(room)
                padded = padded.replace(f" {phrase} ", " ")
                break
    return tuple(found), padded


def _percent(text: str) -> int | None:
    match = re.search(r"(\d{1,3})\s*(?:%|percent|persen)", text.lower())
    return min(100, int(match.group(1))) if match else None


def _actions(text: str) -> tuple[Action, ...]:
    """What the clause asks to change; the order does not matter, each kind of change once."""
    low, pct = text.lower(), _percent(text)
    found: list[Action] = []
    degrees = re.search(r"(\d{2})\s*(?:°\s*c?|degrees?|derajat|celsius|c\b)", low) or re.search(
        r"\b(?:to|ke|jadi|at)\s+(\d{2})\b(?!\s*%)", low
    )
    if degrees:
        found.append(Action("temp", int(degrees.group(1))))
    mode = _mode(text)
    if mode:
        found.append(Action("mode", mode))
    speed = _fan_speed(text)
    if speed:
        found.append(Action("fan", speed))
    lock = _lock(text)
    if lock is not None:
        found.append(Action("lock", lock))
        return tuple(found)
    found += _curtain(text, pct) + _brightness(text, pct, found)
    colour = _colour(text, pct)
    if colour is not None:
        found.append(colour)
    elif not mode and has_any(
        text, ("warmer", "hangatin", "lebih hangat", "naikin suhu", "naikkan suhu", "raise the temperature")
    ):
        found.append(Action("warmer", 1))
    elif not mode and has_any(
        text, ("cooler", "colder", "dinginin", "lebih dingin", "turunin suhu", "turunkan suhu", "lower the temperature")
    ):
        found.append(Action("cooler", 1))
    if has_any(text, _OFF) or _OF_AT_END.search(low):
        found.append(Action("power", False))
    elif has_any(text, _ON):
        found.append(Action("power", True))
    return tuple(found)


_UNLOCK = ("unlock", "buka kunci", "bukain kunci", "buka kuncinya", "bukain kuncinya", "open the door",
           "open the front door", "bukain pintu", "buka pintu", "bukain pintunya", "buka pintunya")  # fmt: skip
_LOCK = ("lock", "kunci", "kunciin", "kuncikan", "kunci pintunya", "kunciin pintunya", "kunci pintu")


def _lock(text: str) -> bool | None:
    """Locking (True) or unlocking (False) a door, or None when the clause says neither."""
    if has_any(text, _UNLOCK):
        return False
    if has_any(text, _LOCK):
        return True
    return None


def _curtain(text: str, pct: int | None) -> list[Action]:
    if has_any(text, _STOP):
        return [Action("stop", "stop")]
    if has_any(text, _HALF):
        return [Action("curtain", 50)]
    if has_any(text, _OPEN):
        return [Action("curtain", 100 - pct if pct is not None else 0)]
    if has_any(text, _CLOSE):
        return [Action("curtain", pct if pct is not None else 100)]
    return []


def _brightness(text: str, pct: int | None, found: list[Action]) -> list[Action]:
    if has_any(text, ("full brightness", "paling terang", "terang banget", "max brightness")):
        return [Action("brightness", 1000)]
    if pct is not None and has_any(text, ("brightness", "bright", "kecerahan", "dim", "redupin", "redupkan", "terang")):
        return [Action("brightness", max(10, pct * 10))]
    if has_any(text, ("dim", "redupin", "redupkan", "redup", "dim down")):
        # "dim it a bit": a step down from where it is, not the dim setting
        if has_any(text, ("a bit", "a little", "slightly", "a touch", "dikit", "sedikit", "dikit aja")):
            return [Action("brighter", -300)]
        return [Action("brightness", 300)]
    if has_any(text, ("brighter", "terangin", "lebih terang", "terangkan")):
        return [Action("brighter", 200)]
    if has_any(text, ("dimmer", "lebih redup")):
        return [Action("brighter", -200)]
    if pct is not None and not any(a.what == "curtain" for a in found + _curtain(text, pct)) and not _colour(text, pct):
        return [Action("percent", pct)]  # "set the bedroom light to 40%": a light's brightness
    return []


def _mode(text: str) -> str | None:
    if not has_any(text, ("mode", "modenya")):
        return "dry" if has_any(text, ("dehumidify", "dehumidifier")) else None
    for value, words in (
        ("cold", ("cool", "cold", "cooling", "dingin")),
        ("wind", ("fan", "wind", "kipas", "angin")),
        ("dry", ("dry", "kering")),
        ("auto", ("auto", "automatic", "otomatis")),
    ):
        if has_any(text, words):
            return value
    return None


def _fan_speed(text: str) -> str | None:
    if not has_any(text, ("fan speed", "fan", "kipas", "kipasnya", "kecepatan kipas", "speed")) or has_any(
        text, ("mode", "modenya")
    ):
        return None
    for value, words in (
        ("low", ("low", "pelan", "pelanin", "rendah", "slow")),
        ("middle", ("medium", "middle", "mid", "sedang")),
        ("high", ("high", "kencang", "kenceng", "kencengin", "tinggi", "max", "full")),
        ("auto", ("auto", "otomatis")),
    ):
        if has_any(text, words):
            return value
    return None


def _colour(text: str, pct: int | None) -> Action | None:
    if pct is not None and has_any(text, ("colour temperature", "color temperature", "suhu warna")):
        return Action("colour", pct * 10)
    if has_any(text, ("warm white", "warm light", "cahaya hangat", "kuning", "warna hangat")):
        return Action("colour", 0)
    if has_any(text, ("cool white", "daylight", "cahaya putih", "putih", "cold white", "warna dingin")):
        return Action("colour", 1000)
    return None


# How a room feels, said instead of a request, and the request it means: "it's dark in
# here" asks for a light, "gerah banget" for the AC. Only when no device is named.
_FELT: tuple[tuple[tuple[str, ...], str], ...] = (
    (("dark", "too dark", "gelap", "can't see", "cant see", "nggak keliatan", "ga keliatan"), "turn on the light"),
    (("hot", "too hot", "so hot", "boiling", "sweating", "stuffy", "panas", "gerah", "sumuk", "kepanasan"),
     "make the AC cooler"),
    (("cold", "freezing", "chilly", "kedinginan", "dingin banget", "kedinginan banget"), "turn off the AC"),
    (("too bright", "silau", "terlalu terang", "kecerahan banget"), "dim the light"),
)  # fmt: skip


# The same feelings with the device named ("acnya kedinginan", "the light is too bright"): a step.
_FELT_NAMED: tuple[tuple[tuple[str, ...], Action], ...] = (
    (("hot", "too hot", "panas", "gerah", "kepanasan", "not cold enough", "kurang dingin"), Action("cooler", 1)),
    (("cold", "too cold", "freezing", "chilly", "kedinginan", "terlalu dingin", "dingin banget"), Action("warmer", 1)),
    (("too bright", "silau", "terlalu terang"), Action("brighter", -300)),
    (("too dark", "gelap", "kurang terang"), Action("brighter", 300)),
)


def felt(text: str) -> str | None:
    """The request a statement about the room means ("it's so hot" -> the AC cooler), or None."""
    if is_question(text) or any(has_any(text, words) for words in _KINDS.values()):
        return None
    for words, meant in _FELT:
        if has_any(text, words):
            return f"{meant} {text}"
    return None


def _slip(word: str, known: str) -> bool:
    """Is `word` a slip of the fingers for `known`: two letters swapped, one dropped or one
    added ("lihgt", "ligt", "bedrooom")? A different letter is not a slip ("right" is no light)."""
    # The first letter is kept: "flight" or "slight" is another word, not a slip of "light".
    if word == known or abs(len(word) - len(known)) > 1 or word[0] != known[0]:
        return False
    if len(word) == len(known):
        diff = [i for i, (a, b) in enumerate(zip(word, known, strict=True)) if a != b]
        if len(diff) != 2 or diff[1] != diff[0] + 1:
            return False
        first, second = diff
        return word[first] == known[second] and word[second] == known[first]
    short, long_ = (word, known) if len(word) < len(known) else (known, word)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def _keys_beside() -> dict[str, str]:
    """The letters next to each one on a QWERTY keyboard (a row is offset half a key)."""
    rows = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
    beside: dict[str, str] = {}
    for r, row in enumerate(rows):
        for c, key in enumerate(row):
            near = [row[i] for i in (c - 1, c + 1) if 0 <= i < len(row)]
            if r > 0:
                near += [rows[r - 1][i] for i in (c, c + 1) if i < len(rows[r - 1])]
            if r < len(rows) - 1:
                near += [rows[r + 1][i] for i in (c - 1, c) if 0 <= i < len(rows[r + 1])]
            beside[key] = "".join(near)
    return beside


_BESIDE = _keys_beside()


def _first_letter_slip(word: str, known: str) -> bool:
    """A slip in the first letter: the first two swapped ("ilght") or the key beside it
    ("kight"). Tried only when no slip that keeps the first letter fits."""
    if len(word) != len(known) or word == known:
        return False
    if word[1:] == known[1:]:
        return word[0] in _BESIDE.get(known[0], "")
    return word[:2] == known[1::-1] and word[2:] == known[2:]


# The device and room words a slip is read back to (four letters or more: shorter words are
# too close to others; everyday words such as "kerja" or "makan" are left as typed).
_SPELLED = tuple(
    sorted(
        {w for words in _KINDS.values() for phrase in words for w in phrase.split() if len(w) >= 4}
        | {
            "bedroom",
            "kitchen",
            "living",
            "bathroom",
            "garage",
            "garden",
            "office",
            "lounge",
            "gorden",
            "kamar",
            "dapur",
        }
    )
)
# Device words spelled as they sound, not slipped ("lite").
_SOUNDS_LIKE = {"lite": "light", "lites": "lights", "lyte": "light", "lytes": "lights"}
# Real words one slip away from a device or room word (or a key away in the first letter):
# never read back ("a pint", "bind", "odor", "ibu tiri", "masa lampau", "lamar kerja").
_REAL_WORDS = frozenset(
    (
        "pint", "pints", "font", "fonts", "dean", "deans", "bind", "binds", "laps", "lunge", "lunges", "odor",
        "tiri", "tirani", "lampau", "lamar", "kuncir", "harden", "pock",
    )
)  # fmt: skip


def _read_back(word: str) -> str | None:
    """The device or room word a typed word is a slip of, when exactly one fits; else None."""
    if word in _SOUNDS_LIKE:
        return _SOUNDS_LIKE[word]
    if len(word) < 4 or not word.isalpha() or word in _SPELLED or word in _REAL_WORDS:
        return None
    fits = {k for k in _SPELLED if _slip(word, k)} or {k for k in _SPELLED if _first_letter_slip(word, k)}
    if len({_meaning(k) for k in fits}) != 1:
        return None  # nothing fits, or two things do ("kamr" could never be both)
    # Words for the same thing ("lamup": lampu or lamp) are one fit; the swap is the likelier slip.
    return min(fits, key=lambda k: (len(k) != len(word), k))


def _meaning(word: str) -> str:
    """What a device or room word names (its kind or room), for telling two fits apart."""
    for name, words in (*_KINDS.items(), *_ROOMS.items()):
        if any(word in phrase.split() for phrase in words):
            return name
    return word


def spelled(text: str) -> str:
    """The text with slips of device and room words read back ("the bedroom lihgt", "the
    lite", "ilght"): one word only when exactly one fits (docs/agents.md, the offline model)."""
    out = []
    for word in re.findall(r"[\w'°%]+|\W+", text):
        out.append(_read_back(word.lower()) or word)
    return "".join(out)


def parse(text: str) -> Ask:
    text = spelled(text)
    meant = felt(text)
    if meant is not None:
        return replace(parse(meant), implied=True)
    rooms, rest = rooms_in(text)
    kinds = tuple(k for k, words in _KINDS.items() if has_any(rest, words))
    if not kinds and has_any(text, _TEMPERATURE):
        kinds = ("kt",)  # "what's the temperature in the bedroom?" is the AC's
    others = tuple(n for n, words in _OTHER_THINGS.items() if has_any(rest, words))
    if "fan" in others and (kinds or _fan_speed(text) or _mode(text)):
        others = tuple(o for o in others if o != "fan")  # "fan speed" is the AC's
    question = is_question(text)
    actions = () if question else _actions(text)
    if kinds and not actions and not question:
        actions = tuple(step for words, step in _FELT_NAMED if has_any(text, words))[:1]
    return Ask(
        kinds,
        rooms,
        others,
        has_any(text, _PLURAL),
        question,
        actions,
        has_any(text, _EVERYTHING),
        has_any(text, _TEMPERATURE),
    )


def asks_of(request: str, previous: str) -> list[Ask]:
    """Zee's part of the request, one Ask per clause; missing parts come from just before."""
    parts: list[str] = []
    current = None
    for clause in clauses(request):  # "turn on the AC and set it to 20": the second part is still Zee's
        current = topic_of(clause) or current
        if current == "zee":
            parts.append(clause)
    parts = parts or clauses(request)
    asks: list[Ask] = []
    for part in parts:
        ask = parse(part)
        before = asks[-1] if asks else _last_home_ask(previous)
        if before is not None and not ask.question:
            if not ask.kinds and not ask.others:
                ask = replace(
                    ask, kinds=before.kinds, rooms=ask.rooms or before.rooms, plural=ask.plural or before.plural
                )
            if not ask.actions:
                ask = replace(ask, actions=before.actions)
        asks.append(ask)
    if any(not a.implied for a in asks):  # "turn on the AC, it's so hot": the request said is the request
        asks = [a for a in asks if not a.implied]
    return asks


def _last_home_ask(previous: str) -> Ask | None:
    if not previous:
        return None
    parts = [parse(c) for c in clauses(previous) if topic_of(c) == "zee"]
    return parts[-1] if parts else None
