"""Zee's offline skill: the smart home, read and operated through Zee's real tools.

A request is read clause by clause ("turn off the lights and play some jazz": only the
first clause is Zee's). Each clause names devices (kind and room) and what to do with
them. The rules the issue asked for live here: a question only reads; a device that is
not in the home, or words that fit several devices, get a question back, never an
action; dimming, colour temperature, AC temperature, mode and fan speed, and curtain
percentages are done for real; a follow-up ("and the living room too", "make it
warmer") borrows what it leaves out from the person's previous request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from agents.model import FunctionCall
from agents.offline.situation import Reply, Situation, call
from agents.offline.specialists import mine
from agents.offline.words import Lang, clauses, has_any, in_language, join, topic_of, words_of

_KINDS: dict[str, tuple[str, ...]] = {
    "dj": ("light", "lights", "lamp", "lamps", "lampu", "lampunya", "bulb"),
    "kt": ("ac", "acnya", "aircon", "air con", "air conditioner", "air conditioning"),
    "cl": ("curtain", "curtains", "gorden", "gordennya", "tirai", "blind", "blinds"),
}
_KIND_ID = {"dj": "lampu", "kt": "AC", "cl": "gorden"}
# Things people ask for that this home may not have: asked about, never guessed at.
_OTHER_THINGS = {
    "TV": ("tv", "television", "televisi"),
    "fan": ("fan", "ceiling fan"),
    "heater": ("heater", "pemanas"),
    "door lock": ("door", "lock", "pintu", "kunci"),
    "garage door": ("garage door",),
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
_ROOM_ID = {
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
_TEMPERATURE = ("temperature", "temp", "suhu", "degrees", "derajat", "berapa derajat")
_OFF = ("turn off", "switch off", "off", "matikan", "matiin", "padamkan", "padamin", "mati", "shut off")
_ON = ("turn on", "switch on", "on", "nyalain", "nyalakan", "hidupkan", "hidupin", "nyala", "idupin")
_OPEN = ("open", "buka", "bukain", "bukakan")
_CLOSE = ("close", "shut", "tutup", "tutupin", "tutupkan", "lower", "draw")
_STOP = ("stop", "berhenti", "stop gordennya", "setop")
_HALF = ("halfway", "half", "half way", "setengah", "separuh")
_QUESTION_START = (
    "is", "are", "was", "were", "what", "what's", "which", "how", "how's", "does", "do", "did", "apakah", "apa",
    "berapa", "gimana", "bagaimana", "status", "cek", "check",
)  # fmt: skip
_REQUEST_START = ("can", "could", "would", "will", "please", "tolong", "bisa", "coba", "pls", "mohon")


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

    @property
    def shown(self) -> frozenset[str]:
        """What the reply should mention beyond on/off: the settings asked about."""
        asked = frozenset({"temp"}) if self.asked_temperature else frozenset()
        return asked | frozenset(a.what for a in self.actions)


def is_question(text: str) -> bool:
    words = words_of(text).split()
    if not words or words[0] in _REQUEST_START:
        return False
    if text.strip().endswith("?"):
        return words[0] not in ("turn", "switch", "nyalain", "matiin", "open", "close", "buka", "tutup", "set")
    return words[0] in _QUESTION_START or has_any(text, ("status", "belum", "nggak sih"))


def _rooms(text: str) -> tuple[tuple[str, ...], str]:
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
    if has_any(text, _OFF):
        found.append(Action("power", False))
    elif has_any(text, _ON):
        found.append(Action("power", True))
    return tuple(found)


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


def parse(text: str) -> Ask:
    rooms, rest = _rooms(text)
    kinds = tuple(k for k, words in _KINDS.items() if has_any(rest, words))
    if not kinds and has_any(text, _TEMPERATURE):
        kinds = ("kt",)  # "what's the temperature in the bedroom?" is the AC's
    others = tuple(n for n, words in _OTHER_THINGS.items() if has_any(rest, words))
    if "fan" in others and (kinds or _fan_speed(text) or _mode(text)):
        others = tuple(o for o in others if o != "fan")  # "fan speed" is the AC's
    question = is_question(text)
    actions = () if question else _actions(text)
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
        if current == "home":
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
    return asks


def _last_home_ask(previous: str) -> Ask | None:
    if not previous:
        return None
    parts = [parse(c) for c in clauses(previous) if topic_of(c) == "home"]
    return parts[-1] if parts else None


# --- devices -----------------------------------------------------------------------------


def room_of(device: dict[str, Any]) -> str | None:
    rooms, _ = _rooms(device["name"])
    return rooms[0] if rooms else None


def label(lang: Lang, device: dict[str, Any]) -> str:
    """How a device is named mid-sentence: "the bedroom light", or "lampu kamar"."""
    kind, room = _KIND_ID.get(device["category"]), room_of(device)
    if lang == "id" and kind and room:
        return f"{kind} {_ROOM_ID[room]}"
    words = device["name"].split()
    name = " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in words)
    return name if lang == "id" else f"the {name}"


def status_of(device: dict[str, Any]) -> dict[str, Any]:
    return {s["code"]: s["value"] for s in device.get("status", [])}


def describe(lang: Lang, device: dict[str, Any], status: dict[str, Any], shown: set[str]) -> str:
    """A device's state in words; `shown` adds the settings the person asked about."""
    category = device["category"]
    if category == "cl":
        opened = 100 - int(status.get("percent_control", 0))
        if opened in (0, 100):
            return in_language(lang, "open" if opened else "closed", "kebuka" if opened else "ketutup")
        return in_language(lang, f"{opened}% open", f"kebuka {opened}%")
    on = bool(status.get("switch_led", status.get("switch")))
    parts = [in_language(lang, "on" if on else "off", "nyala" if on else "mati")]
    if category == "dj" and on and ({"brightness", "brighter", "percent"} & shown):
        parts.append(
            in_language(
                lang,
                f"at {status.get('bright_value', 0) // 10}% brightness",
                f"kecerahan {status.get('bright_value', 0) // 10}%",
            )
        )
    if category == "dj" and ({"colour", "warmer", "cooler"} & shown):
        parts.append(_white(lang, int(status.get("temp_value", 500))))
    if category == "kt" and on:
        parts.append(f"{status.get('temp_set')}°C")
    elif category == "kt" and {"temp", "warmer", "cooler"} & shown:
        parts.append(in_language(lang, f"set to {status.get('temp_set')}°C", f"disetel {status.get('temp_set')}°C"))
    if category == "kt" and "mode" in shown:
        mode = str(status.get("mode"))
        parts.append(in_language(lang, f"{mode} mode", f"mode {_MODE_ID.get(mode, mode)}"))
    if category == "kt" and "fan" in shown:
        speed = str(status.get("fan_speed_enum"))
        parts.append(in_language(lang, f"fan {speed}", f"kipas {_SPEED_ID.get(speed, speed)}"))
    return ", ".join(parts)


def _white(lang: Lang, warmth: int) -> str:
    """Colour temperature in words: 0 is the warmest white, 1000 the coolest."""
    if warmth <= 300:
        return in_language(lang, "warm white", "putih hangat")
    if warmth >= 700:
        return in_language(lang, "cool white", "putih dingin")
    return in_language(lang, "neutral white", "putih netral")


_MODE_ID = {"cold": "dingin", "wind": "kipas", "dry": "kering", "auto": "otomatis"}
_SPEED_ID = {"low": "pelan", "middle": "sedang", "high": "kencang", "auto": "otomatis"}


def commands_for(device: dict[str, Any], actions: tuple[Action, ...]) -> list[dict[str, Any]] | None:
    """The data point commands the actions mean for one device; None when it cannot do them."""
    category, status = device["category"], status_of(device)
    out: dict[str, Any] = {}
    for action in actions:  # words that mean nothing for this device ("lower" for an AC) are skipped
        out.update(_command(category, status, action) or {})
    return [{"code": c, "value": v} for c, v in out.items()] or None


def _command(category: str, status: dict[str, Any], action: Action) -> dict[str, Any] | None:
    what, value = action.what, action.value
    if category == "dj":
        return _light(status, what, value)
    if category == "kt":
        return _air(status, what, value)
    if category == "cl" and what == "curtain":
        return {"percent_control": value}
    if category == "cl" and what == "stop":
        return {"control": "stop"}
    return None


def _light(status: dict[str, Any], what: str, value: Any) -> dict[str, Any] | None:
    bright, warmth = int(status.get("bright_value", 1000)), int(status.get("temp_value", 500))
    if what == "power":
        return {"switch_led": value}
    if what == "brightness":
        return {"switch_led": True, "bright_value": value}
    if what == "percent":
        return {"switch_led": True, "bright_value": max(10, value * 10)}
    if what == "brighter":
        return {"switch_led": True, "bright_value": max(10, min(1000, bright + value))}
    if what == "colour":
        return {"switch_led": True, "temp_value": value}
    if what in ("warmer", "cooler"):
        return {"switch_led": True, "temp_value": max(0, min(1000, warmth + (-250 if what == "warmer" else 250)))}
    return None


def _air(status: dict[str, Any], what: str, value: Any) -> dict[str, Any] | None:
    target = int(status.get("temp_set", 24))
    if what == "power":
        return {"switch": value}
    if what == "temp":
        return {"switch": True, "temp_set": max(16, min(30, value))}
    if what in ("warmer", "cooler"):
        return {"switch": True, "temp_set": max(16, min(30, target + (1 if what == "warmer" else -1)))}
    if what == "mode":
        return {"switch": True, "mode": value}
    if what == "fan":
        return {"switch": True, "fan_speed_enum": value}
    return None


# --- the skill ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    """What Zee will do: commands per device, reads, or one question/explanation back."""

    sends: tuple[tuple[dict[str, Any], tuple[dict[str, Any], ...], frozenset[str]], ...] = ()
    reads: tuple[tuple[dict[str, Any], frozenset[str]], ...] = ()
    say: str = ""


def _missing(lang: Lang, ask: Ask, devices: list[dict[str, Any]]) -> str:
    wanted = ask.others[0] if ask.others else _KIND_ID.get(ask.kinds[0], "device") if ask.kinds else "device"
    if ask.rooms and ask.kinds:
        room = ask.rooms[0]
        thing = f"{_KIND_ID[ask.kinds[0]]} {_ROOM_ID[room]}" if lang == "id" else f"{room} {_EN_KIND[ask.kinds[0]]}"
    else:
        thing = wanted if lang == "id" else f"{wanted}"
    same_kind = [d for d in devices if d["category"] in ask.kinds]
    seen = join(lang, [label(lang, d) for d in same_kind or devices])
    return in_language(
        lang,
        f"There's no {thing} in your home, only {seen}. Which one do you mean?",
        f"Nggak ada {thing} di rumahmu, adanya {seen}. Maksudmu yang mana?",
    )


_EN_KIND = {"dj": "light", "kt": "AC", "cl": "curtain"}


def _which(lang: Lang, options: list[dict[str, Any]]) -> str:
    names = join(lang, [label(lang, d) for d in options]).replace(" and ", " or ").replace(" dan ", " atau ")
    return in_language(lang, f"Which one: {names}?", f"Yang mana: {names}?")


def _targets(ask: Ask, devices: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Devices the ask names, and whether every room it names was found."""
    chosen = [d for d in devices if not ask.kinds or d["category"] in ask.kinds]
    if not ask.rooms:
        return chosen, True
    in_rooms = [d for d in chosen if room_of(d) in ask.rooms]
    found_rooms = {room_of(d) for d in in_rooms}
    return in_rooms, all(r in found_rooms for r in ask.rooms)


def plan(lang: Lang, asks: list[Ask], devices: list[dict[str, Any]]) -> Plan:
    sends: list[tuple[dict[str, Any], tuple[dict[str, Any], ...], frozenset[str]]] = []
    reads: list[tuple[dict[str, Any], frozenset[str]]] = []
    for ask in asks:
        if ask.others and not ask.kinds:
            return Plan(say=_missing(lang, ask, devices))
        if not ask.kinds and not ask.rooms:
            if ask.question or not ask.actions:
                reads += [(d, ask.shown) for d in devices]
                continue
            if not ask.everything:
                return Plan(say=_which(lang, devices))
            # "turn off everything": every device the action means something for
            sends += [(d, tuple(c), ask.shown) for d in devices if (c := commands_for(d, ask.actions))]
            continue
        targets, complete = _targets(ask, devices)
        if not targets or not complete:
            return Plan(say=_missing(lang, ask, devices))
        shown = ask.shown
        if ask.question or not ask.actions:
            reads += [(d, shown) for d in targets]
            continue
        if len(targets) > 1 and not ask.plural and not ask.rooms:
            return Plan(say=_which(lang, targets))
        for device in targets:
            commands = commands_for(device, ask.actions)
            if commands is None:
                return Plan(say=_cannot(lang, device))
            sends.append((device, tuple(commands), shown))
    return Plan(sends=_merged(sends), reads=tuple(reads))


def _merged(
    sends: list[tuple[dict[str, Any], tuple[dict[str, Any], ...], frozenset[str]]],
) -> tuple[tuple[dict[str, Any], tuple[dict[str, Any], ...], frozenset[str]], ...]:
    """One command list per device, in the order first asked ("on, then 20 degrees")."""
    by_device: dict[str, tuple[dict[str, Any], dict[str, Any], frozenset[str]]] = {}
    for device, commands, shown in sends:
        _, merged, seen = by_device.get(device["id"], (device, {}, frozenset()))
        merged = merged | {c["code"]: c["value"] for c in commands}
        by_device[device["id"]] = (device, merged, seen | shown)
    return tuple(
        (d, tuple({"code": k, "value": v} for k, v in merged.items()), shown) for d, merged, shown in by_device.values()
    )


def _cannot(lang: Lang, device: dict[str, Any]) -> str:
    return in_language(
        lang,
        f"{label(lang, device).capitalize()} can't do that; tell me another way to set it?",
        f"{label(lang, device).capitalize()} nggak bisa diatur kayak gitu. Mau diatur gimana?",
    )


def _sentence(lang: Lang, pairs: list[str], *, done: bool) -> str:
    body = join(lang, pairs)
    if done:
        return in_language(lang, f"Done: {body}.", f"Beres, {body} ya.")
    return body[:1].upper() + body[1:] + "."


def _state_pairs(lang: Lang, items: list[tuple[dict[str, Any], dict[str, Any], frozenset[str]]]) -> list[str]:
    verb = in_language(lang, " is ", " sekarang ")
    return [label(lang, d) + verb + describe(lang, d, status, set(shown)) for d, status, shown in items]


def home(s: Situation) -> Reply | None:
    """Zee: list the devices, then act, read, or ask; report the real result."""
    if s.agent != "zee" or "list_devices" not in s.tools:
        return None
    if not (s.results or mine(s) or has_any(s.request, ("status", "rumah", "home", "house"))):
        return None
    listing = s.last_result("list_devices")
    if listing is None:
        return "", [call("list_devices", {})]
    devices: list[dict[str, Any]] = listing.get("devices", [])
    lang = s.lang
    chosen = plan(lang, asks_of(s.request, s.previous_request), devices)
    if chosen.say:
        return chosen.say, []
    sent = [r for name, r in s.results if name == "send_commands"]
    if sent:
        failed = [r for r in sent if "error" in r]
        if failed:
            reason = str(failed[0]["error"])
            return in_language(lang, f"I couldn't change that: {reason}", f"Maaf, gagal aku ubah: {reason}"), []
        applied = [(d, status_of(d) | {c["code"]: c["value"] for c in cmds}, shown) for d, cmds, shown in chosen.sends]
        read = [(d, status_of(d), shown) for d, shown in chosen.reads]
        return _sentence(lang, _state_pairs(lang, applied + read), done=True), []
    if chosen.sends:
        calls = [
            FunctionCall(id=f"offline_send_{i}", name="send_commands", args={"device_id": d["id"], "commands": list(c)})
            for i, (d, c, _) in enumerate(chosen.sends, start=1)
        ]
        return "", calls
    read = [(d, status_of(d), shown) for d, shown in chosen.reads]
    return _sentence(lang, _state_pairs(lang, read), done=False), []
