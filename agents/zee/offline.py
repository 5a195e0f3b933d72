"""Zee's offline skill: the smart home, read and operated through Zee's real tools.

A request is read clause by clause by `asks` ("turn off the lights and play some jazz":
only the first clause is Zee's). The rules are kept here (docs/agents.md#the-offline-model): a question
only reads; a device that is not in the home, or words that fit several devices, get a
question back, never an action; dimming, colour temperature, AC temperature, mode and fan
speed, and curtain percentages are done for real, and the reply reports the real result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.integrations.confirmations import is_plain_yes
from agents.model import FunctionCall
from agents.offline.situation import Reply, Situation, call
from agents.offline.specialists import mine
from agents.offline.words import Lang, has_any, in_language, join
from agents.zee.asks import KIND_ID, ROOM_ID, Action, Ask, asks_of, felt, rooms_in, spelled
from agents.zee.home import RISKY_CATEGORIES

# Words that put a clause in the smart home (the general vocabulary of agents/offline/words.py).
HOME_WORDS = (
    "light", "lights", "lamp", "lamps", "lampu", "lampunya", "ac", "acnya", "aircon", "air con", "air conditioner",
    "curtain", "curtains", "gorden", "gordennya", "tirai", "blind", "blinds", "device", "devices", "perangkat",
    "turn on", "turn off", "switch on", "switch off", "nyalain", "nyalakan", "matikan", "matiin", "hidupkan",
    "hidupin", "dim", "redupin", "redupkan", "brightness", "kecerahan", "tv", "television", "fan", "kipas", "heater",
    "door", "pintu", "home status", "everything off", "everything on", "semuanya mati", "semua mati", "the house",
    "rumah", "bedroom", "living room", "kitchen", "dapur", "ruang tamu", "kamar",
    "pintunya", "front door", "lock", "unlock", "kunciin", "kuncikan", "kunci pintu", "buka kunci", "gate", "gerbang",
    "garage door",
)  # fmt: skip


def claims(clause: str) -> bool:
    return has_any(spelled(clause), HOME_WORDS) or felt(clause) is not None


def room_of(device: dict[str, Any]) -> str | None:
    rooms, _ = rooms_in(device["name"])
    return rooms[0] if rooms else None


def label(lang: Lang, device: dict[str, Any]) -> str:
    """How a device is named mid-sentence: "the bedroom light", or "lampu kamar"."""
    kind, room = KIND_ID.get(device["category"]), room_of(device)
    if lang == "id" and kind and room:
        return f"{kind} {ROOM_ID[room]}"
    if lang == "id" and kind:  # "kunci pintu “Front door”": the name is data, quoted
        return f"{kind} “{device['name']}”"
    words = device["name"].split()
    name = " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in words)
    return name if lang == "id" else f"the {name}"


def status_of(device: dict[str, Any]) -> dict[str, Any]:
    return {s["code"]: s["value"] for s in device.get("status", [])}


def describe(lang: Lang, device: dict[str, Any], status: dict[str, Any], shown: set[str]) -> str:
    """A device's state in words; `shown` adds the settings the person asked about."""
    category = device["category"]
    if "lock_motor_state" in status:
        locked = bool(status["lock_motor_state"])
        return in_language(lang, "locked" if locked else "unlocked", "terkunci" if locked else "nggak terkunci")
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
    if category in RISKY_CATEGORIES and what == "lock" and "lock_motor_state" in status:
        return {"lock_motor_state": value}
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


_EN_KIND = {"dj": "light", "kt": "AC", "cl": "curtain"}
# Things a home may lack (agents/zee/asks.py `_OTHER_THINGS`), named in Indonesian.
_OTHERS_ID = {"fan": "kipas", "heater": "pemanas", "garage door": "pintu garasi", "gate": "gerbang", "kettle": "ketel"}


def _wanted(lang: Lang, ask: Ask) -> str:
    """What the person asked for, in their words: "kitchen light", "lampu dapur", "TV"."""
    if ask.others and not ask.kinds:
        return _OTHERS_ID.get(ask.others[0], ask.others[0]) if lang == "id" else ask.others[0]
    kind = ask.kinds[0] if ask.kinds else None
    room = ask.rooms[0] if ask.rooms else None
    if lang == "id":
        return " ".join(w for w in (KIND_ID.get(kind or "", "perangkat"), ROOM_ID.get(room or "", "")) if w)
    return " ".join(w for w in (room, _EN_KIND.get(kind or "", "device")) if w)


def _missing(lang: Lang, ask: Ask, devices: list[dict[str, Any]]) -> str:
    same_kind = [d for d in devices if d["category"] in ask.kinds]
    seen = join(lang, [label(lang, d) for d in same_kind or devices])
    thing = _wanted(lang, ask)
    return in_language(
        lang,
        f"There's no {thing} in your home, only {seen}. Which one do you mean?",
        f"Nggak ada {thing} di rumahmu, adanya {seen}. Maksudmu yang mana?",
    )


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
        # Several devices fit and the person did not say "all": ask, unless they named both
        # the kind and the room ("the bedroom light"). A room alone ("the bedroom", or a
        # misheard "the bedroom life") never switches the whole room.
        if len(targets) > 1 and not ask.plural and not ask.everything and not (ask.rooms and ask.kinds):
            return Plan(say=_which(lang, targets))
        if not ask.kinds and (ask.everything or ask.plural):
            # "everything in the living room", "semua di ruang tamu": every device there the
            # action means something for; a question back only when none of them can.
            fitting = [(d, c) for d in targets if (c := commands_for(d, ask.actions)) is not None]
            if not fitting:
                return Plan(say=_cannot(lang, targets[0]))
            sends += [(d, tuple(c), shown) for d, c in fitting]
            continue
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
        f"{_upper(label(lang, device))} can't do that; tell me another way to set it?",
        f"{_upper(label(lang, device))} nggak bisa diatur kayak gitu. Mau diatur gimana?",
    )


def _sentence(lang: Lang, pairs: list[str], *, done: bool, sandbox: bool = False) -> str:
    body = join(lang, pairs)
    if done:
        # The person always knows when it was the sandbox home (no brackets: Ava may speak this).
        where = in_language(lang, " in your sandbox home", " di rumah sandbox-mu") if sandbox else ""
        return in_language(lang, f"Done: {body}{where}.", f"Beres, {body}{where} ya.")
    return body[:1].upper() + body[1:] + "."


def _state_pairs(lang: Lang, items: list[tuple[dict[str, Any], dict[str, Any], frozenset[str]]]) -> list[str]:
    verb = in_language(lang, " is ", " sekarang ")
    return [label(lang, d) + verb + describe(lang, d, status, set(shown)) for d, status, shown in items]


_NO = (
    "no", "nope", "cancel", "don't", "dont", "jangan", "nggak", "gak", "enggak", "tidak", "batal", "batalin",
    "never mind", "nevermind", "nvm", "forget it", "nggak usah", "gak usah", "gak jadi", "nggak jadi", "ga jadi",
    "ga usah",
)  # fmt: skip


def answer(s: Situation) -> Reply | None:
    """A short yes or no to Zee's own question about a lock: carried out or dropped, through
    pending_actions and confirm_action or cancel_action (the gate checks the yes itself)."""
    request = s.request
    if s.agent != "zee" or "pending_actions" not in s.tools or len(request.split()) > 6 or claims(request):
        return None
    yes = is_plain_yes(request)
    if not yes and not has_any(request, _NO):
        return None
    lang = s.lang
    waiting = s.last_result("pending_actions")
    if waiting is None:
        return "", [call("pending_actions", {})]
    pending = [p for p in waiting.get("pending", []) if p.get("kind") == "device_commands"]
    done = s.last_result("confirm_action") or s.last_result("cancel_action")
    if done is None and not pending and not yes:  # "never mind" to a question such as "which one?"
        return in_language(lang, "Okay, I'll leave everything as it is.", "Oke, nggak aku ubah apa-apa."), []
    if done is None and not pending:
        return in_language(
            lang, "Nothing is waiting for your yes right now.", "Nggak ada yang lagi nunggu persetujuanmu."
        ), []
    if done is None:
        name = "confirm_action" if yes else "cancel_action"
        return "", [call(name, {"action_id": pending[0]["action_id"]})]
    proposal = pending[0]["proposal"] if pending else {}
    device = {"name": str(proposal.get("device_name", "")), "category": "ms", "id": proposal.get("device_id")}
    if "error" in done:
        return in_language(
            lang, f"I couldn't do that: {done['error']}", f"Maaf, gagal: {done['error']}"
        ), []  # fmt: skip
    if done.get("cancelled") or "done" not in done:
        return in_language(
            lang, f"Okay, I'll leave {label(lang, device)} as it is.", f"Oke, {label(lang, device)} nggak aku ubah."
        ), []
    status = {c["code"]: c["value"] for c in proposal.get("commands", [])}
    sandbox = done.get("account") == "sandbox"
    where = in_language(lang, " in your sandbox home", " di rumah sandbox-mu") if sandbox else ""
    state, name = describe(lang, device, status, set()), label(lang, device)
    return in_language(lang, f"Done: {name} is {state}{where}.", f"Beres, {name} sekarang {state}{where} ya."), []


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
        # A lock's command is only proposed (docs/agents.md#risky-actions): said as a question, done after a yes.
        waiting = {str(r["proposal"]["device_id"]) for r in sent if r.get("status") == "awaiting_confirmation"}
        asked = [_proposal(lang, d, cmds) for d, cmds, _ in chosen.sends if d["id"] in waiting]
        said = _done(lang, chosen, listing, waiting)
        return " ".join(p for p in (said, *asked) if p), []
    if chosen.sends:
        calls = [
            FunctionCall(id=f"offline_send_{i}", name="send_commands", args={"device_id": d["id"], "commands": list(c)})
            for i, (d, c, _) in enumerate(chosen.sends, start=1)
        ]
        ahead = ""
        if s.said_aloud and not any(d.get("category") in RISKY_CATEGORIES for d, _, _ in chosen.sends):
            # Said aloud on a call: the sentence that will report it done, written beside the
            # commands, held until they succeed (docs/agents.md#streaming), the same one as after.
            ahead = _done(lang, chosen, listing, set())
        return ahead, calls
    if len(chosen.reads) < len(devices) and "device_status" in s.tools:
        # Asked about some devices, not the whole home: each one read fresh, as it is now.
        fresh = [r for name, r in s.results if name == "device_status"]
        if len(fresh) < len(chosen.reads):
            return "", [
                FunctionCall(id=f"offline_status_{i}", name="device_status", args={"device_id": d["id"]})
                for i, (d, _) in enumerate(chosen.reads[len(fresh) :], start=len(fresh) + 1)
            ]
        now = [
            (d, {p["code"]: p["value"] for p in r.get("status", [])} or status_of(d), shown)
            for (d, shown), r in zip(chosen.reads, fresh, strict=False)
        ]
        return _sentence(lang, _state_pairs(lang, now), done=False), []
    read = [(d, status_of(d), shown) for d, shown in chosen.reads]
    return _sentence(lang, _state_pairs(lang, read), done=False), []


def _done(lang: Lang, chosen: Plan, listing: dict[str, Any], waiting: set[str]) -> str:
    """The sentence that reports the chosen commands done ("" when all of them await a yes),
    with the devices read beside them as they are."""
    applied = [
        (d, status_of(d) | {c["code"]: c["value"] for c in cmds}, shown)
        for d, cmds, shown in chosen.sends
        if d["id"] not in waiting
    ]
    if not applied:
        return ""
    read = [(d, status_of(d), shown) for d, shown in chosen.reads]
    sandbox = listing.get("account") == "sandbox"
    return _sentence(lang, _state_pairs(lang, applied + read), done=True, sandbox=sandbox)


def _upper(text: str) -> str:
    """The first letter up, the rest as written (a quoted name keeps its own capitals)."""
    return text[:1].upper() + text[1:]


def _proposal(lang: Lang, device: dict[str, Any], commands: tuple[dict[str, Any], ...]) -> str:
    """The question a risky command becomes: what will change, asked before anything is done."""
    locking = {c["code"]: c["value"] for c in commands}.get("lock_motor_state")
    name = label(lang, device)
    if locking is None:
        return in_language(lang, f"Shall I change {name}?", f"{_upper(name)} mau aku ubah?")
    return in_language(
        lang,
        f"Shall I {'lock' if locking else 'unlock'} {name}?",
        f"{_upper(name)} mau aku {'kunci' if locking else 'buka'}?",
    )
