"""The specialists' offline behaviour. Zee really operates the home through its tools:
list the devices, pick the ones the request names, send the command, report the result.
Yori and Rafal answer small talk and say plainly what they cannot do offline yet."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from agents.model import FunctionCall
from agents.offline.mail import mail_turn
from agents.offline.music import music_turn
from agents.offline.situation import Situation, call
from agents.offline.words import Lang, has_any, intent_of

_ROOMS = {
    "bedroom": ("bedroom", "kamar", "kamar tidur"),
    "living": ("living room", "living", "lounge", "ruang tamu", "ruang keluarga", "ruang tengah"),
}
_KINDS = {
    "dj": ("light", "lights", "lamp", "lamps", "lampu"),
    "kt": ("ac", "aircon", "air con", "air conditioner"),
    "cl": ("curtain", "curtains", "gorden", "tirai", "blind", "blinds"),
}
_OFF = ("turn off", "switch off", "off", "matikan", "matiin", "padamkan", "mati")
_ON = ("turn on", "switch on", "on", "nyalain", "nyalakan", "hidupkan", "hidupin", "nyala")
_OPEN = ("open", "buka", "bukain")
_CLOSE = ("close", "shut", "tutup", "tutupin")


def _in_sentence(name: str) -> str:
    """A device name mid-sentence: lower case, but acronyms ("AC") stay as they are."""
    return " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in name.split())


def _pick(lang: Lang, en: str, id_: str) -> str:
    return id_ if lang == "id" else en


def _targets(request: str, devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Devices the request names: by kind and room; by kind alone means all of that kind."""
    kinds = [k for k, words in _KINDS.items() if has_any(request, words)]
    rooms = [r for r, words in _ROOMS.items() if has_any(request, words)]
    chosen = [d for d in devices if not kinds or d["category"] in kinds]
    if rooms:
        chosen = [d for d in chosen if any(r in d["id"] for r in rooms)]
    return chosen if (kinds or rooms) else []


def _command(request: str, category: str) -> list[dict[str, Any]] | None:
    """The data point commands a request means for one category, or None for a status read."""
    degrees = re.search(r"(\d{2})\s*(?:°|degrees?|derajat|c\b)", request.lower())
    if category == "kt" and degrees:
        return [{"code": "switch", "value": True}, {"code": "temp_set", "value": int(degrees.group(1))}]
    if category == "cl":
        if has_any(request, ("halfway", "half", "half way", "setengah", "separuh")):
            return [{"code": "percent_control", "value": 50}]  # 0 is open and 100 closed: half is half either way
        if has_any(request, _OPEN):
            return [{"code": "percent_control", "value": 0}]
        if has_any(request, _CLOSE):
            return [{"code": "percent_control", "value": 100}]
    code = {"dj": "switch_led", "kt": "switch"}.get(category)
    if code is None:
        return None
    if has_any(request, _OFF):
        return [{"code": code, "value": False}]
    if has_any(request, _ON):
        return [{"code": code, "value": True}]
    return None


def _state(lang: Lang, device: dict[str, Any]) -> str:
    status = {s["code"]: s["value"] for s in device["status"]}
    name = device["name"]
    if device["category"] == "cl":
        pct = status.get("percent_control", 0)
        return _pick(lang, f"the {_in_sentence(name)} is {100 - pct}% open", f"{name} kebuka {100 - pct}%")
    on = bool(status.get("switch_led", status.get("switch")))
    extra = f" at {status['temp_set']}°C" if device["category"] == "kt" and on else ""
    return _pick(
        lang,
        f"the {_in_sentence(name)} is {'on' if on else 'off'}{extra}",
        f"{name} lagi {'nyala' if on else 'mati'}{extra}",
    )


def _join(parts: Iterable[str]) -> str:
    items = list(parts)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _zee(s: Situation, lang: Lang) -> tuple[str, list[FunctionCall]]:
    listing = s.last_result("list_devices")
    if listing is None:
        return "", [call("list_devices", {})]
    sent = [r for name, r in s.results if name == "send_commands"]
    if any("error" in r for r in sent):
        return _pick(lang, "I couldn't change that device, sorry.", "Maaf, perangkatnya gagal aku ubah."), []
    devices: list[dict[str, Any]] = listing.get("devices", [])
    targets = _targets(s.request, devices)
    if not targets:
        if has_any(s.request, ("device", "devices", "perangkat", "status", "home", "rumah")):
            return _pick(lang, "Here's your home: ", "Rumahmu sekarang: ") + _join(
                _state(lang, d) for d in devices
            ) + ".", []
        return _pick(
            lang,
            "Which device do you mean? I can see " + _join(d["name"] for d in devices) + ".",
            "Perangkat yang mana? Aku lihat ada " + _join(d["name"] for d in devices) + ".",
        ), []
    commands = [(d, _command(s.request, d["category"])) for d in targets]
    if sent:
        names = _join(_in_sentence(d["name"]) if lang == "en" else d["name"] for d, c in commands if c)
        done_en = {"dj": "on", "kt": "on"}
        on = any(c and c[0]["value"] is True for _, c in commands)
        # The person always knows when it was the sandbox home (no brackets: Ava may speak this).
        where = (
            _pick(lang, " in your sandbox home", " di rumah sandbox-mu") if listing.get("account") == "sandbox" else ""
        )
        if all(d["category"] == "cl" for d, _ in commands):
            return _pick(lang, f"Done, the {names} moved{where}.", f"Udah, {names} udah gerak{where}."), []
        word = done_en.get(commands[0][0]["category"], "on") if on else "off"
        return _pick(
            lang,
            f"Done, the {names} {'is' if len(targets) == 1 else 'are'} {word}{where}.",
            f"Udah, {names} sekarang {'nyala' if on else 'mati'}{where} ya.",
        ), []
    to_send = [(d, c) for d, c in commands if c]
    if not to_send:
        return _pick(lang, "Right now ", "Sekarang ") + _join(_state(lang, d) for d in targets) + ".", []
    calls = [
        FunctionCall(id=f"offline_send_{i}", name="send_commands", args={"device_id": d["id"], "commands": c})
        for i, (d, c) in enumerate(to_send, start=1)
    ]
    return "", calls


def specialist_turn(s: Situation) -> tuple[str, list[FunctionCall]]:
    lang = s.lang
    if s.trigger == "ava" and s.answered_after_request:
        return "", []  # already answered this request: silence
    # Yori's and Rafal's intents live in their own modules; None means "not theirs".
    if s.agent == "yori" and (music := music_turn(s)) is not None:
        return music
    if s.agent == "rafal" and (mail := mail_turn(s)) is not None:
        return mail
    intent = intent_of(s.request)
    if s.agent == "zee" and (intent == "home" or s.results):
        return _zee(s, lang)
    name = s.agent.capitalize()
    if intent == "greeting":
        return _pick(lang, f"Hi! {name} here. What do you need?", f"Hai! {name} di sini. Ada apa?"), []
    if intent == "thanks":
        return _pick(lang, "You're welcome!", "Sama-sama!"), []
    domain = {"zee": "home", "yori": "music", "rafal": "workspace"}[s.agent]
    if intent not in (domain, "other"):
        return _pick(
            lang,
            "That's not my area; ask Ava, she'll know who can help.",
            "Itu bukan bidangku, coba tanya Ava ya, dia tahu siapa yang bisa bantu.",
        ), []
    return _pick(lang, "I can't do that offline yet, sorry.", "Maaf, yang itu belum bisa aku lakukan offline."), []
