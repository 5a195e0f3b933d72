"""The offline Ava's wake notes: "remind me in 5 minutes to stretch", "ingatkan aku jam
17:00 jemput Nay", "what are you reminding me of?", "cancel the stretch reminder", and
what she says when a note wakes her.

She works the tools as the real model would: `list_wakes` first (it also tells her the
exact local time, which the session layer gives only to the minute), then
`schedule_wake` or `cancel_wake`, then a sentence about what really happened. A
question ("can you remind me…?") is answered, never acted on; a request without a time
gets a question back, never a guessed time.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from agents.model import FunctionCall
from agents.offline.situation import Situation, call
from agents.offline.skillset import skills_of
from agents.offline.words import Lang, has_any, intent_of, words_of
from agents.roster import current_roster

_SCHEDULE = ("remind me", "remind", "ingatkan", "ingetin", "ingatin", "ingatkan aku", "ingetin aku", "wake me",
             "wake me up", "bangunin", "bangunkan")  # fmt: skip
# "wake me up at 6": the task is waking up, in the person's language.
_WAKE_ME = re.compile(r"\b(?:wake me(?: up)?|bangunin(?: aku| saya| gue)?|bangunkan(?: aku| saya)?)\b", re.I)
_LIST = (
    "what are you reminding me",
    "what will you remind me",
    "my reminders",
    "list reminders",
    "list my reminders",
    "any reminders",
    "which reminders",
    "what reminders",
    "pengingatku",
    "daftar pengingat",
    "pengingat apa",
    "ada pengingat",
    "mau ngingetin apa",
    "ngingetin aku apa",
)
_CANCEL = ("cancel", "delete", "remove", "forget", "batalkan", "batalin", "hapus", "gak usah", "nggak usah")
_REMINDER_WORDS = ("reminder", "reminders", "remind", "pengingat", "ingatkan", "ingetin")
_INDONESIAN_CUES = ("ingatkan", "ingetin", "ingatin", "pengingat", "dalam", "menit", "detik", "jemput", "batalkan")
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "ten": 10, "fifteen": 15,
    "twenty": 20, "thirty": 30, "satu": 1, "dua": 2, "tiga": 3, "empat": 4, "lima": 5, "sepuluh": 10,
}  # fmt: skip
_UNITS = {
    "second": 1, "sec": 1, "detik": 1, "minute": 60, "min": 60, "menit": 60,
    "hour": 3600, "hr": 3600, "jam": 3600, "day": 86400, "hari": 86400,
}  # fmt: skip
_NUM = r"(\d{1,4}|" + "|".join(_NUMBERS) + r")"
_RELATIVE = re.compile(
    rf"\b(?:in|dalam|dlm)\s+{_NUM}\s+(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|detik|menit|jam|hari)\b"
    rf"|\b{_NUM}\s+(detik|menit|jam|hari)\s+lagi\b",
    re.IGNORECASE,
)
_CLOCK = re.compile(
    r"\b(?:at|jam|pukul|pkl)\s+(\d{1,2})(?:[:.](\d{2}))?\s*(am|pm|a\.m\.|p\.m\.|pagi|siang|sore|malam)?(?!\w)"
    # "set the AC at 24 degrees", "volume at 50%" are settings, not times.
    r"(?!\s*(?:°|%|degrees?|derajat|persen|percent|c\b))",
    re.IGNORECASE,
)
_PRONOUNS = {"my": "your", "me": "you", "i": "you", "myself": "yourself", "i'm": "you're", "mine": "yours"}
_TASK_EN = re.compile(r"\bremind\s+me\s+(?:to\s+|about\s+|that\s+|of\s+)?(.*)$", re.IGNORECASE | re.DOTALL)
_TASK_ID = re.compile(
    r"\b(?:ingatkan|ingetin|ingatin)\s+(?:aku|saya|gue|gw|ku)?\s*(?:untuk|buat|utk|supaya|biar)?\s*(.*)$",
    re.IGNORECASE | re.DOTALL,
)
# Work for a specialist at a later time is a note to hand it on when Ava wakes; a domain
# is named by its specialist (agents/offline/words.py `topic_of`).
_HAND_ON = re.compile(r"^(?:Hand on to|Teruskan ke) (\w+): (.+)$", re.DOTALL)
_NOTE_EN = re.compile(r"^Remind (.+?) to (.+?)\.?$", re.DOTALL)
_NOTE_ID = re.compile(r"^Ingatkan (.+?) untuk (.+?)\.?$", re.DOTALL)


def _pick(lang: Lang, en: str, id_: str) -> str:
    return id_ if lang == "id" else en


def _lang(s: Situation) -> Lang:
    return "id" if has_any(s.request, _INDONESIAN_CUES) else s.lang


def _kind(request: str) -> str | None:
    if has_any(request, _LIST):
        return "list"
    if has_any(request, _CANCEL) and has_any(request, _REMINDER_WORDS):
        return "cancel"
    if has_any(request, _SCHEDULE):
        return "schedule"
    topic = intent_of(request)
    skills = skills_of(topic)
    # "turn off the AC in 10 minutes": a specialist acts only now. But where a time is the
    # request's own data ("put a dentist appointment in my calendar at 3pm") it is not later.
    if _has_time(request) and skills is not None and skills.timed_work_is_later:
        return "later"
    return None


_EVENING = re.compile(r"\b(?:tonight|this evening|nanti malam|malam ini|this afternoon|sore ini|nanti sore)\b", re.I)
_TOMORROW = re.compile(r"\b(?:tomorrow|besok)\b", re.I)


def _number(token: str) -> int:
    return int(token) if token.isdigit() else _NUMBERS[token.lower()]


def _when(request: str, now: datetime) -> datetime | None:
    """The moment a request names, from the person's exact local time now."""
    relative = _RELATIVE.search(request)
    if relative:
        amount, unit = (relative.group(1), relative.group(2)) if relative.group(1) else relative.group(3, 4)
        seconds = _UNITS[unit.lower().rstrip("s")] if unit.lower().rstrip("s") in _UNITS else _UNITS[unit.lower()]
        return now + timedelta(seconds=_number(amount) * seconds)
    clock = _CLOCK.search(request)
    if clock:
        hour, minute = int(clock.group(1)), int(clock.group(2) or 0)
        half = (clock.group(3) or "").lower().replace(".", "")
        if (half in ("pm", "sore", "malam") and hour < 12) or (half == "siang" and hour < 11):
            hour += 12
        elif half in ("am", "pagi") and hour == 12:
            hour = 0
        elif not half and hour < 12 and _EVENING.search(request):
            hour += 12  # "tonight at 9", "nanti malam jam 8": the evening's hour
        if hour > 23 or minute > 59:
            return None
        at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if _TOMORROW.search(request):
            return at + timedelta(days=1)  # "tomorrow at 7am" said at 3am is tomorrow's, not today's
        return at if at > now else at + timedelta(days=1)
    return None


def _has_time(request: str) -> bool:
    """Names a moment that exists ("at 24" is a setting, not a time)."""
    return _when(request, datetime(2000, 1, 1)) is not None  # noqa: DTZ001 - only asks whether it parses


_DAY = re.compile(r"\b(?:tomorrow|today|tonight|this (?:morning|afternoon|evening)|besok|hari ini|nanti malam)\b", re.I)


_COURTESY_END = re.compile(r"(?:[\s,]+(?:ya|yah|yaa|dong|deh|ok|okay|oke|please|pls|plz|thanks|makasih|thx))+$", re.I)


def _task(request: str, lang: Lang) -> str:
    """What to be reminded of, in the person's words (pronouns turned to "you")."""
    if _WAKE_ME.search(request) and not re.search(r"remind|ingat|inget", request, re.I):
        return _pick(lang, "wake up", "bangun")
    # The day is said with the time ("at 07:00 tomorrow"), never inside the task.
    text = _DAY.sub(" ", _CLOCK.sub(" ", _RELATIVE.sub(" ", request)))
    match = (_TASK_ID if lang == "id" else _TASK_EN).search(text) or _TASK_EN.search(text) or _TASK_ID.search(text)
    task = " ".join((match.group(1) if match else text).split()).strip(" .!,;")
    task = re.sub(r"^(?:to|untuk|buat)\s+", "", task, flags=re.IGNORECASE)
    # Politeness at the end is said to Ava, not part of the task ("... jam 8 malam ya", "..., please").
    task = _COURTESY_END.sub("", task).strip(" .!,;")
    if lang == "en":
        task = " ".join(_PRONOUNS.get(w.lower(), w) for w in task.split())
    return task


def _person(s: Situation) -> str:
    return next((line.author for line in reversed(s.lines) if line.by_human), "the person")


def _clock_text(due_local: str, now_local: str) -> str:
    due = datetime.fromisoformat(due_local)
    now = datetime.fromisoformat(now_local)
    shown = due.strftime("%H:%M:%S" if due - now < timedelta(minutes=2) else "%H:%M")
    return shown if due.date() == now.date() else due.strftime("%d %b ") + shown


def _about(note: str) -> str:
    """A note's task, for listing: "stretch" from "Remind Budi to stretch."."""
    match = _NOTE_EN.match(note) or _NOTE_ID.match(note)
    return match.group(2) if match else note.rstrip(".")


def _schedule(s: Situation, lang: Lang) -> tuple[str, list[FunctionCall]]:
    scheduled = s.last_result("schedule_wake")
    if scheduled is not None:
        if "error" in scheduled:
            return _pick(
                lang,
                f"I couldn't set that reminder: {scheduled['error']}",
                f"Maaf, pengingatnya gagal aku pasang: {scheduled['error']}",
            ), []
        made: dict[str, Any] = scheduled["scheduled"]
        seen = s.last_result("list_wakes") or {}
        shown = _clock_text(made["due_local"], str(seen.get("now_local", made["due_local"])))
        about = _about(made["note"])
        return _pick(
            lang, f"Okay, I'll remind you to {about} at {shown}.", f"Oke, jam {shown} aku ingetin {about} ya."
        ), []
    listing = s.last_result("list_wakes")
    if listing is None:
        return "", [call("list_wakes", {})]
    when = _when(s.request, datetime.fromisoformat(str(listing["now_local"])))
    task = _task(s.request, lang)
    if when is None or not task:
        return _pick(
            lang,
            "When should I remind you, and of what?",
            "Mau diingetin kapan, dan soal apa?",
        ), []
    name = _person(s)
    note = _pick(lang, f"Remind {name} to {task}.", f"Ingatkan {name} untuk {task}.")
    return "", [call("schedule_wake", {"note": note, "at_local": when.strftime("%Y-%m-%dT%H:%M:%S")})]


def _later(s: Situation, lang: Lang) -> tuple[str, list[FunctionCall]]:
    """Work for a specialist at a later time: a note to hand it on then, never a handoff now."""
    scheduled = s.last_result("schedule_wake")
    if scheduled is not None:
        if "error" in scheduled:
            return _pick(
                lang, f"I couldn't plan that: {scheduled['error']}", f"Maaf, gagal aku jadwalkan: {scheduled['error']}"
            ), []
        seen = s.last_result("list_wakes") or {}
        shown = _clock_text(
            scheduled["scheduled"]["due_local"], str(seen.get("now_local", "")) or scheduled["scheduled"]["due_local"]
        )
        return _pick(lang, f"Okay, I'll take care of it at {shown}.", f"Oke, jam {shown} aku urus ya."), []
    listing = s.last_result("list_wakes")
    if listing is None:
        return "", [call("list_wakes", {})]
    when = _when(s.request, datetime.fromisoformat(str(listing["now_local"])))
    work = " ".join(_CLOCK.sub(" ", _RELATIVE.sub(" ", s.request)).split()).strip(" .!,;")
    if when is None or not work:
        return _pick(lang, "When should I do that?", "Mau dilakukan kapan?"), []
    specialist = current_roster().agents[intent_of(s.request)].display_name
    note = _pick(lang, f"Hand on to {specialist}: {work}", f"Teruskan ke {specialist}: {work}")
    return "", [call("schedule_wake", {"note": note, "at_local": when.strftime("%Y-%m-%dT%H:%M:%S")})]


def _list(s: Situation, lang: Lang) -> tuple[str, list[FunctionCall]]:
    listing = s.last_result("list_wakes")
    if listing is None:
        return "", [call("list_wakes", {})]
    wakes: list[dict[str, Any]] = listing.get("wakes", [])
    if not wakes:
        return _pick(lang, "Nothing right now: no reminders pending.", "Belum ada pengingat yang nunggu."), []
    now_local = str(listing["now_local"])
    items = [f"{_about(w['note'])} at {_clock_text(w['due_local'], now_local)}" for w in wakes[:10]]
    if lang == "id":
        items = [f"{_about(w['note'])} jam {_clock_text(w['due_local'], now_local)}" for w in wakes[:10]]
    joined = items[0] if len(items) == 1 else "; ".join(items[:-1]) + _pick(lang, "; and ", "; dan ") + items[-1]
    return _pick(lang, f"I'll remind you: {joined}.", f"Nanti aku ingetin: {joined}."), []


def _content_words(text: str) -> set[str]:
    ignore = set(_CANCEL) | set(_REMINDER_WORDS) | {"the", "a", "to", "my", "me", "please", "tolong", "yang", "untuk"}
    return {w for w in words_of(text).split() if w not in ignore and len(w) > 1}


_SET_EN = re.compile(r"^Okay, I'll remind you to (.+) at [\d:]+", re.DOTALL)
_SET_ID = re.compile(r"^Oke, jam [\d: A-Za-z]+ aku ingetin (.+) ya\.", re.DOTALL)


def _just_set(s: Situation) -> str | None:
    """The task of the reminder Ava set in answer to the person's previous message, when the
    latest one points back at it ("actually cancel that", "batalin yang tadi")."""
    if not has_any(s.request, ("that", "it", "this", "itu", "tadi", "yang tadi")):
        return None
    human_seen = False
    for line in reversed(s.lines):
        if line.by_human:
            if human_seen:
                return None
            human_seen = True
            continue
        if human_seen and line.author == "Ava":
            found = _SET_EN.match(line.text) or _SET_ID.match(line.text)
            if found:
                return found.group(1)
    return None


def _cancel(s: Situation, lang: Lang) -> tuple[str, list[FunctionCall]]:
    cancelled = s.last_result("cancel_wake")
    if cancelled is not None:
        if "error" in cancelled:
            return _pick(lang, "I couldn't cancel that one.", "Maaf, yang itu gagal aku batalin."), []
        task = _about(cancelled["cancelled"]["note"])
        return _pick(lang, f"Done, I won't remind you to {task}.", f"Oke, pengingat {task} aku batalin."), []
    listing = s.last_result("list_wakes")
    if listing is None:
        return "", [call("list_wakes", {})]
    wanted = _content_words(s.request)
    if (just := _just_set(s)) is not None:
        wanted = _content_words(just)
    scored = [(len(wanted & _content_words(w["note"])), w) for w in listing.get("wakes", [])]
    best = max((score for score, _ in scored), default=0)
    matches = [w for score, w in scored if score == best and best > 0]
    if len(matches) != 1:
        return _pick(
            lang,
            "Which reminder should I cancel? Tell me what it was about.",
            "Pengingat yang mana yang mau dibatalin? Sebutin soal apa.",
        ), []
    return "", [call("cancel_wake", {"id": matches[0]["id"]})]


def _woken(s: Situation) -> tuple[str, list[FunctionCall]]:
    """Woken by a note: hand its work on now, or say it so the first line stands alone as a
    notification."""
    note = s.request.strip()
    hand_on = _HAND_ON.match(note)
    if hand_on and hand_on.group(1).lower() in current_roster().by_name:
        name = hand_on.group(1).lower()
        answered = s.last_result(name)
        if answered is None:
            return "", [call(name, {"tag": f"@{name}"})]
        # In text the person sees the specialist's reply; on a call only Ava is heard.
        relay = str(answered.get("response", "")).strip().split("\n")[0]
        return (f"{relay} #relieved#" if s.voice and relay else ""), []
    english, indonesian = _NOTE_EN.match(note), _NOTE_ID.match(note)
    if english:
        text = f"Hey {english.group(1)}, it's time to {english.group(2)}!"
    elif indonesian:
        text = f"{indonesian.group(1)}, udah waktunya {indonesian.group(2)} ya!"
    else:
        text = note
    return (text + " #affectionate#" if s.voice else text), []


def wake_turn(s: Situation) -> tuple[str, list[FunctionCall]] | None:
    """Ava's turn when it is about wake notes; None when it is about something else."""
    if s.trigger == "postera":
        return _woken(s)
    kind = _kind(s.request) or ("cancel" if _just_set(s) and has_any(s.request, _CANCEL) else None)
    tools = getattr(s, "tools", None)  # the tools this run has, where the situation lists them
    if kind is None or (tools is not None and "schedule_wake" not in tools):
        return None
    lang = _lang(s)
    if kind == "later" and s.request.rstrip().endswith("?"):
        return _pick(
            lang,
            'I can do that later for you: say when, like "turn off the AC at 22:00".',
            'Bisa aku lakukan nanti: bilang aja kapan, misalnya "matikan AC jam 22:00".',
        ), []
    if kind == "schedule" and s.request.rstrip().endswith("?") and not _has_time(s.request):
        return _pick(
            lang,
            'Yes! Tell me when and what, like "remind me in 10 minutes to stretch".',
            'Bisa! Bilang aja kapan dan soal apa, misalnya "ingatkan aku dalam 10 menit untuk peregangan".',
        ), []
    turn = {"schedule": _schedule, "later": _later, "list": _list, "cancel": _cancel}[kind](s, lang)
    if s.voice and turn[0]:
        return turn[0] + " #neutral#", turn[1]
    return turn
