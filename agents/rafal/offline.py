"""Rafal's offline behaviour, in English and Indonesian: today's mail, sending an email
(propose, ask, send only after the person's yes), the calendar for a day, adding an
event on a weekday at an hour.

Mail and event text is read as data: nothing in a tool result is ever turned into a
call here; only the person's own request picks what happens. Returns None for anything
else, so the general specialist rules answer it.
"""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta
from typing import Any

from agents.integrations.confirmations import is_plain_yes
from agents.model import FunctionCall
from agents.offline.dayparts import day_part, part_span
from agents.offline.situation import Situation, call
from agents.offline.words import Lang, has_any, words_of

# Words that put a clause in email, the calendar or contacts.
WORKSPACE_WORDS = (
    "email", "emails", "mail", "inbox", "calendar", "meeting", "meetings", "contact", "contacts", "surel",
    "kalender", "rapat", "kontak", "jadwal", "agenda", "appointment", "emailnya", "kontaknya", "kalenderku",
    "jadwalku", "agendaku", "kontakku", "emailed", "ngemail", "emailin",
)  # fmt: skip


def claims(clause: str) -> bool:
    return has_any(clause, WORKSPACE_WORDS)


_SEND = re.compile(
    r"\b(?:send|write|email|mail)\b(?:\s+(?:an?|the))?(?:\s+(?:email|e-mail|mail|message|note))?\s+(?:to\s+)?"
    r"(?P<who>[\w.+-]+(?:@[\w.-]+)?)\s+(?:saying|that|to say|telling (?:him|her|them)|and say|"
    r"and tell (?:him|her|them)|and let (?:him|her|them) know)\s*:?\s+(?:that\s+)?(?P<what>.+)",
    re.IGNORECASE | re.DOTALL,
)
_SEND_ID = re.compile(
    r"\b(?:kirim|kirimin|kirimkan)\s+(?:email|e-mail|surel|pesan)\s+(?:ke|kepada|buat)\s+"
    r"(?P<who>[\w.+-]+(?:@[\w.-]+)?)\s+(?:bilang|bahwa|isinya|kalau)\s*:?\s+(?P<what>.+)",
    re.IGNORECASE | re.DOTALL,
)
# A message for someone, said as to a person: "tell Budi I'm running late", "let Sari know
# I'll be there at 7", "bilangin Budi aku telat". Sent as an email, after the person's yes.
_TELL = re.compile(
    r"^(?:(?:can|could|would) you\s+|please\s+|pls\s+)?(?:tell|let|inform|message|ping)\s+(?P<who>[A-Za-z][\w-]*)\s+"
    r"(?:know\s+)?(?:that\s+)?(?P<what>.{3,})",
    re.IGNORECASE | re.DOTALL,
)
_TELL_ID = re.compile(
    r"^(?:tolong\s+)?(?:bilangin|bilangin ke|bilang ke|kasih tau|kasih tahu|kabarin)\s+(?P<who>[A-Za-z][\w-]*)\s+"
    r"(?:kalau|kalo|bahwa|bilang)?\s*(?P<what>.{3,})",
    re.IGNORECASE | re.DOTALL,
)
# Never someone to write to: "tell me a joke", "let me know", "tell Zee to turn it off".
_NOT_TOLD = frozenset(
    "me us him her them it everyone ava zee yori rafal you aku saya gue kamu dia what who when where how".split()  # noqa: SIM905
)
_ADD = re.compile(r"\b(?:add|schedule|put|tambah|tambahin|tambahkan|jadwalkan|catat)\b\s+(?P<what>.+)", re.IGNORECASE)
_WHEN_SPLIT = re.compile(r"\s+(?:on|at|this|next|tomorrow|today|pada|hari|jam|pukul|besok|nanti)\b.*$", re.IGNORECASE)
_HOUR = re.compile(r"\b(?:at|jam|pukul)\s+(\d{1,2})(?:[:.](\d{2}))?\s*(am|pm|pagi|siang|sore|malam)?", re.IGNORECASE)
_WEEKDAYS = {
    "monday": 0, "senin": 0, "tuesday": 1, "selasa": 1, "wednesday": 2, "rabu": 2, "thursday": 3, "kamis": 3,
    "friday": 4, "jumat": 4, "saturday": 5, "sabtu": 5, "sunday": 6, "minggu": 6,
}  # fmt: skip
_IN_CALENDAR = re.compile(r"\b(?:in|on|to|into|ke|di)\s+(?:my|the|your)?\s*(?:calendar|kalender(?:ku)?)\b", re.I)
_ARTICLE = re.compile(r"^(?:an?|the|my|sebuah)\s+", re.IGNORECASE)
_MAIL_WORDS = ("email", "emails", "mail", "inbox", "surel", "e-mail", "pesan masuk", "emailed", "ngemail", "emailin",
               "ngirim email", "mails")  # fmt: skip
_CALENDAR_WORDS = (
    "calendar", "kalender", "schedule", "jadwal", "agenda", "events", "acara", "meetings", "rapat", "kalenderku",
    "jadwalku", "agendaku", "meeting",
)  # fmt: skip
# The calendar asked about without naming it: "what's on my plate today", "am I free on
# Wednesday?", "how's friday morning looking?", "besok aku ada acara apa aja".
_DAY_ASKED = re.compile(
    r"\b(?:on my plate|what do i have|what have i got|what've i got|what(?:'s| is) my day|how(?:'s| is) my day|"
    r"am i (?:free|busy)|how(?:'s| is| does) (?:my )?(?:tonight|tomorrow|\w+day)(?: \w+)? look(?:ing|s)?|"
    r"do i have anything|have i got anything|anything (?:on|planned)|what(?:'s| is) (?:on|happening|"
    r"planned)|my day look|ada acara|acara apa|sibuk (?:gak|nggak|ga|ngga|enggak)|aku ada apa|ada apa aja)\b",
    re.IGNORECASE,
)
# Mail from someone asked about without saying "email": "did Sari write back?", "got
# anything from Budi?", "udah ada kabar dari Sari?".
_HEARD_FROM = re.compile(
    r"\b(?:did|has|have)\s+(?P<who>[A-Za-z][\w-]+)\s+(?:write|wrote|written|reply|replied|answer(?:ed)?|"
    r"respond(?:ed)?|get|got|gotten|email(?:ed)?|mail(?:ed)?)\b(?:\s+(?:back|me|to me))?"
    r"|\b(?:anything|any word|any news|any mail|any message|news|word|heard|hear|kabar|balasan|apa-apa)\s+"
    r"(?:back\s+)?(?:from|dari)\s+(?P<who2>[A-Za-z][\w-]+)"
    r"|\b(?P<who3>[A-Za-z][\w-]+)\s+(?:udah|sudah|dah)\s+(?:bales|balas|bales email|balas email|ngebales)\b",
    re.IGNORECASE,
)
# One event asked about by its name: "when's my dentist appointment?", "kapan jadwal dentist?".
_EVENT_ASKED = re.compile(
    r"\bwhen(?:'s| is|s| are)? (?:my|the|our) (?P<what>[\w'-]+(?: [\w'-]+)??)(?: appointment| meeting| event| thing)?"
    r"\s*\??$|\bkapan (?:jadwal |janji |acara )?(?P<what2>[\w'-]+)(?: (?:aku|ku|ya))?\s*\??$",
    re.IGNORECASE,
)
_EVENT_DAYS = 30
_NO = (
    "no", "nope", "cancel", "don't", "dont", "jangan", "nggak", "gak", "enggak", "tidak", "batal", "batalin",
    "never mind", "nevermind", "nvm", "forget it", "nggak usah", "gak usah", "gak jadi", "nggak jadi", "ga jadi",
)  # fmt: skip


_DAYS_ID = ("Senin", "Selasa", "Rabu", "Kamis", "Jumat", "Sabtu", "Minggu")


def _pick(lang: Lang, en: str, id_: str) -> str:
    return id_ if lang == "id" else en


def _when(text: str) -> int | None:
    """Days from today the request names (today, tomorrow, a weekday), or None."""
    lowered = words_of(text)
    if " tomorrow " in lowered or " besok " in lowered:
        return 1
    if " today " in lowered or " hari ini " in lowered or " tonight " in lowered or " nanti malam " in lowered:
        return 0
    return None


def _weekday(text: str, today: datetime) -> int | None:
    """Days to the weekday named: the coming one, or with "next" ("next Tuesday", "Selasa
    depan") the one in the week after this one."""
    for word, day in _WEEKDAYS.items():
        if re.search(rf"\b{word}\b", text, re.IGNORECASE):
            if _NEXT_WEEK.search(text):
                return 7 - today.weekday() + day
            return (day - today.weekday()) % 7 or 7
    return None


_NOON = re.compile(r"\b(?:at\s+)?(?:noon|midday|lunchtime|tengah hari|jam 12 siang)\b", re.IGNORECASE)
_NEXT_WEEK = re.compile(r"\b(?:next|depan)\b", re.IGNORECASE)


def _hour(text: str) -> tuple[int, int] | None:
    match = _HOUR.search(text)
    if not match:
        return (12, 0) if _NOON.search(text) else None
    hour, minute, part = int(match.group(1)), int(match.group(2) or 0), (match.group(3) or "").lower()
    if (part in ("pm", "sore", "malam") and hour < 12) or (not part and 1 <= hour <= 7):
        hour += 12  # "dinner at 7" is evening; nobody books 7 in the morning without saying so
    return (hour, minute) if hour < 24 and minute < 60 else None


def _day_span(now: datetime, days: int) -> dict[str, str]:
    start = datetime.combine(now.date() + timedelta(days=days), time(0), tzinfo=now.tzinfo)
    return {"time_min": start.isoformat(), "time_max": (start + timedelta(days=1)).isoformat()}


def _failed(lang: Lang, error: str) -> tuple[str, list[FunctionCall]]:
    # The tool's hint, as one sentence; "do not retry" is advice for the model, not the person.
    reason = error.split("; do not retry")[0].rstrip(".")
    reason = reason[:1].lower() + reason[1:]
    return _pick(lang, f"I couldn't do that: {reason}.", f"Maaf, gagal: {reason}."), []


def _where(lang: Lang, result: dict[str, Any] | None) -> str:
    if result is None or result.get("account") != "sandbox":
        return ""
    return _pick(lang, " in your sandbox mailbox", " di kotak surat sandbox-mu")


def _sender_name(sender: str) -> str:
    return sender.split("<")[0].strip() or sender


def _read_mail(s: Situation, lang: Lang) -> tuple[str, list[FunctionCall]]:
    found = s.last_result("read_messages")
    today = s.local_now is not None and _when(s.request) in (0, None)
    if found is None:
        query = f"in:inbox after:{s.local_now:%Y/%m/%d}" if today and s.local_now else "in:inbox"
        return "", [call("read_messages", {"query": query, "limit": 10})]
    messages = found.get("messages", [])
    where = _where(lang, found)
    when = _pick(lang, " today" if today else "", " hari ini" if today else "")
    if not messages:
        return _pick(lang, f"No new email{when}{where}.", f"Belum ada email masuk{when}{where}."), []
    # The first line stands alone (on a call Ava relays only it); the list follows.
    senders = _join_names([_sender_name(m["from"]) for m in messages], lang)
    count = len(messages)
    head = _pick(
        lang,
        f"You have {count} email{'s' if count > 1 else ''}{when}{where}, from {senders}.",
        f"Ada {count} email{when}{where}, dari {senders}.",
    )
    # In Indonesian a subject is quoted: it is the mail's words, not the reply's.
    subjects = [m["subject"] if lang == "en" else f"“{m['subject']}”" for m in messages]
    return head + "\n" + "\n".join(
        f"- {_sender_name(m['from'])}: {t}" for m, t in zip(messages, subjects, strict=True)
    ), []


def _join_names(names: list[str], lang: Lang) -> str:
    unique = list(dict.fromkeys(names))
    if len(unique) == 1:
        return unique[0]
    return ", ".join(unique[:-1]) + _pick(lang, " and ", " dan ") + unique[-1]


def _send(s: Situation, lang: Lang, who: str, what: str) -> tuple[str, list[FunctionCall]]:
    what = what.strip().rstrip(".!")
    proposal = s.last_result("send_email")
    if proposal is not None:
        # The question comes first and stands alone: on a call Ava relays only the first line.
        p = proposal.get("proposal", {})
        return _pick(
            lang,
            f"Shall I send this email to {p.get('to')}?\nSubject: {p.get('subject')}\n\n{p.get('body')}",
            f"Aku kirim email ini ke {p.get('to')}?\nSubjek: {p.get('subject')}\n\n{p.get('body')}",
        ), []
    address = who if "@" in who else None
    if address is None:
        contacts = s.last_result("list_contacts")
        if contacts is None:
            return "", [call("list_contacts", {"limit": 100})]
        named = [c for c in contacts.get("contacts", []) if who.lower() in c["name"].lower().split() and c["emails"]]
        if not named:
            return _pick(
                lang,
                f"I can't find {who} in your contacts. What's their email address?",
                f"Aku nggak nemu {who} di kontakmu. Alamat emailnya apa?",
            ), []
        address, who = named[0]["emails"][0], named[0]["name"].split()[0]
    sender = next((line.author for line in reversed(s.lines) if line.by_human), "")
    body = f"Hi {who},\n\n{what[:1].upper()}{what[1:]}.\n\n{sender}".strip()
    subject = what[:1].upper() + what[1:60]
    return "", [call("send_email", {"to": address, "subject": subject, "body": body})]


def _answer_proposal(s: Situation, lang: Lang, yes: bool) -> tuple[str, list[FunctionCall]] | None:
    waiting = s.last_result("pending_actions")
    if waiting is None:
        return "", [call("pending_actions", {})]
    pending = waiting.get("pending", [])
    done = s.last_result("confirm_action") or s.last_result("cancel_action")
    if done is not None:
        if "cancelled" in done:
            return _pick(lang, "Okay, I won't send it.", "Oke, nggak jadi aku kirim."), []
        if done.get("done") == "send_email":
            return _pick(
                lang,
                f"Sent to {done['to']}{_where(lang, done)}.",
                f"Udah terkirim ke {done['to']}{_where(lang, done)}.",
            ), []
        event = done.get("event", {})
        return _pick(lang, f"Added {event.get('summary')}.", f"Udah aku tambahin {event.get('summary')}."), []
    if not pending:
        return _pick(
            lang, "Nothing is waiting for your yes right now.", "Nggak ada yang lagi nunggu persetujuanmu."
        ), []
    name = "confirm_action" if yes else "cancel_action"
    return "", [call(name, {"action_id": pending[0]["action_id"]})]


def _calendar(s: Situation, lang: Lang, now: datetime) -> tuple[str, list[FunctionCall]]:
    days = _when(s.request)
    days = _weekday(s.request, now) if days is None else days
    days = 0 if days is None else days
    day = now.date() + timedelta(days=days)
    part = day_part(s.request)  # "tomorrow morning", "besok sore": those hours only
    found = s.last_result("list_events")
    if found is None:
        span = _day_span(now, days)
        if part is not None:
            start, end = part_span(day, part, now.tzinfo)
            span = {"time_min": start.isoformat(), "time_max": end.isoformat()}
        return "", [call("list_events", {**span, "limit": 20})]
    label = {0: ("today", "hari ini"), 1: ("tomorrow", "besok")}.get(days)
    en, id_ = label or (f"on {day:%A %d %B}", f"tanggal {day:%d/%m}")
    if part is not None and days == 0:
        en, id_ = part.en_today, part.id_today
    elif part is not None:
        en, id_ = (f"{en} {part.en}", f"{id_} {part.id_}") if label else (f"{en} in the {part.en}", f"{id_} {part.id_}")
    events = found.get("events", [])
    where = (
        _pick(lang, " in your sandbox calendar", " di kalender sandbox-mu") if found.get("account") == "sandbox" else ""
    )
    if not events:
        return _pick(lang, f"Nothing on your calendar {en}{where}.", f"Kalendermu kosong {id_}{where}."), []
    items = _join_names([f"{e['summary']} at {e['start'][11:16]}" for e in events], lang)
    items_id = _join_names([f"“{e['summary']}” jam {e['start'][11:16]}" for e in events], lang)
    return _pick(lang, f"Your calendar {en}{where}: {items}.", f"Jadwalmu {id_}{where}: {items_id}."), []


def _event_named(s: Situation, lang: Lang, now: datetime, what: str) -> tuple[str, list[FunctionCall]]:
    """When the next event of that name is, over the coming weeks."""
    found = s.last_result("list_events")
    if found is None:
        span = {"time_min": now.isoformat(), "time_max": (now + timedelta(days=_EVENT_DAYS)).isoformat()}
        return "", [call("list_events", {**span, "query": what, "limit": 5})]
    events = found.get("events", [])
    if not events:
        return _pick(
            lang,
            f"I see nothing called “{what}” on your calendar in the next {_EVENT_DAYS} days.",
            f"Aku nggak nemu “{what}” di kalendermu {_EVENT_DAYS} hari ke depan.",
        ), []
    event = events[0]
    start = datetime.fromisoformat(event["start"])
    return _pick(
        lang,
        f"{event['summary']} is on {start:%A %d %B} at {start:%H:%M}.",
        f"“{event['summary']}” hari {_DAYS_ID[start.weekday()]} {start:%d/%m} jam {start:%H:%M}.",
    ), []


def _add_event(s: Situation, lang: Lang, now: datetime, what: str) -> tuple[str, list[FunctionCall]] | None:
    added = s.last_result("add_event")
    if added is not None:
        event = added.get("event", {})
        start = datetime.fromisoformat(event["start"])
        where = (
            _pick(lang, " in your sandbox calendar", " di kalender sandbox-mu")
            if added.get("account") == "sandbox"
            else ""
        )
        return _pick(
            lang,
            f"Added {event['summary']} on {start:%A %d %B} at {start:%H:%M}{where}.",
            f"Udah aku tambahin “{event['summary']}” hari {_DAYS_ID[start.weekday()]} {start:%d/%m}"
            f" jam {start:%H:%M}{where}.",
        ), []
    hour = _hour(s.request)
    days = _weekday(s.request, now)
    days = _when(s.request) if days is None else days
    if hour is None or days is None:
        return None
    summary = _IN_CALENDAR.sub(" ", _WHEN_SPLIT.sub("", _IN_CALENDAR.sub(" ", what)))
    summary = _ARTICLE.sub("", " ".join(summary.split())).strip(" .,") or "Event"
    start = datetime.combine(now.date() + timedelta(days=days), time(*hour), tzinfo=now.tzinfo)
    args = {
        "summary": summary[:1].upper() + summary[1:],
        "start": start.isoformat(),
        "end": (start + timedelta(hours=1)).isoformat(),
    }
    return "", [call("add_event", args)]


# --- one email, a reply, a contact (follow-ups read the thread: "the latest one", "it") ---

_READ_VERBS = ("read", "open", "show", "bacain", "bacakan", "baca", "bukain", "lihat", "liat", "what does", "isinya")
_ONE = (
    "latest", "last", "newest", "first", "top", "most recent", "that one", "this one", "it", "that email",
    "terakhir", "terbaru", "pertama", "yang itu", "itu", "isinya",
)  # fmt: skip
_FROM = re.compile(r"\b(?:from|dari)\s+([A-Za-z][\w-]*)", re.IGNORECASE)
_PRONOUNS = frozenset(
    ("it", "her", "him", "them", "that", "this", "one", "dia", "nya", "itu", "the", "latest", "last", "email")
)
_REPLY = re.compile(
    r"\b(?:reply|respond|answer|write back|balas|bales|balesin|balasin|balaskan)\b(?:\s+(?:to|ke|email(?:nya)?|"
    r"surel(?:nya)?))*(?:\s+(?P<who>[A-Za-z]\w*))?(?:\s+(?:one|email))?\s*[,:]?\s*(?:saying|that|to say|with|and say|"
    r"bilang|bilangin|isinya|kalau|bahwa)\s*:?\s+(?P<what>.+)",
    re.IGNORECASE | re.DOTALL,
)
_CONTACT_ASK = re.compile(
    r"\b(?:(?P<who>[A-Za-z]\w+)'s\s+(?:e-?mail|number|phone|contact|address)|(?:e-?mail\s+address|number|"
    r"phone(?:\s+number)?|nomor(?:\s+hp|\s+telepon)?|nomer(?:\s+hp)?|no hp|alamat email|kontak)\s+"
    r"(?:of\s+|for\s+|si\s+)?(?P<who2>[A-Za-z]\w+)|e-?mail\s+(?:of\s+|for\s+|si\s+)?(?P<who3>(?-i:[A-Z])\w+))",
    re.IGNORECASE,
)
_CONTACT_WORDS = ("contacts", "contact", "kontak", "kontakku", "address book")
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?:\+?\d[\d -]{6,}\d)")
_ADD_CONTACT = re.compile(
    r"\b(?:add|save|simpan|simpen|tambah|tambahin|tambahkan|masukin)\s+(?:kontak\s+|contact\s+)?"
    r"(?P<name>[A-Za-z]\w*(?:\s+[A-Z]\w*)?)(?:'s)?\b",
    re.IGNORECASE,
)
_NOT_A_NAME = frozenset(
    ("a", "an", "the", "my", "new", "this", "that", "it", "kontak", "contact", "number", "nomor", "email", "to")
)


def _told(request: str) -> tuple[str, str] | None:
    """Who to write to and what, for "tell Budi I'm running late"; None for "tell me a joke"."""
    tell = _TELL.search(request) or _TELL_ID.search(request)
    if tell is None or tell.group("who").lower() in _NOT_TOLD:
        return None
    return tell.group("who"), tell.group("what")


def _heard_from(request: str) -> str | None:
    """The person asked about in "did Sari write back?", "anything from Budi?", or None."""
    match = _HEARD_FROM.search(request)
    if match is None:
        return None
    who = match.group("who") or match.group("who2") or match.group("who3")
    return None if who.lower() in _PRONOUNS | _NOT_A_NAME | {"you", "i", "we", "the", "ava", "he", "she"} else who


def _reads_one(request: str) -> bool:
    return has_any(request, _READ_VERBS) and (has_any(request, _ONE) or bool(_FROM.search(request)))


def _named_in_thread(s: Situation) -> str | None:
    """The sender Rafal last spoke of ("The latest email, from Sari Wulandari ..."), for "it", "her"."""
    for line in reversed(s.lines[:-1]):
        if line.author == "Rafal":
            found = re.search(r"\b(?:from|dari)\s+([A-Z][\w-]+)", line.text)
            if found and line.text.count("\n- ") <= 1:  # one email spoken of, not a list
                return found.group(1)
            return None
    return None


def _first_name(sender: str) -> str:
    return _sender_name(sender).split()[0] if _sender_name(sender) else sender


def _address_of(sender: str) -> str:
    found = _ADDRESS.search(sender)
    return found.group(0) if found else sender


def _read_one(s: Situation, lang: Lang, sender: str | None = None) -> tuple[str, list[FunctionCall]]:
    found = s.last_result("read_messages")
    if found is None:
        who = _FROM.search(s.request)
        name = who.group(1) if who and who.group(1).lower() not in _PRONOUNS else sender
        query = f"from:{name}" if name else "in:inbox"
        return "", [call("read_messages", {"query": query, "limit": 1})]
    messages = found.get("messages", [])
    if not messages:
        return _pick(
            lang, f"I found no such email{_where(lang, found)}.", f"Email itu nggak ketemu{_where(lang, found)}."
        ), []
    m = messages[0]
    # The mail itself is quoted as written ("> "), in whatever language it was sent in.
    body = " ".join(str(m.get("body") or m.get("snippet") or "").split())[:600]
    return _pick(
        lang,
        f"The latest email is from {_sender_name(m['from'])}, about “{m['subject']}”:\n> {body}",
        f"Email terbaru dari {_sender_name(m['from'])}, soal “{m['subject']}”:\n> {body}",
    ), []


def _reply(s: Situation, lang: Lang, who: str | None, what: str) -> tuple[str, list[FunctionCall]]:
    if s.last_result("send_email") is not None:
        return _send(s, lang, "", what)  # the proposal is shown and asked about as any email
    found = s.last_result("read_messages")
    if found is None:
        name = who if who and who.lower() not in _PRONOUNS else _named_in_thread(s)
        query = f"from:{name}" if name else "in:inbox"
        return "", [call("read_messages", {"query": query, "limit": 1})]
    messages = found.get("messages", [])
    if not messages:
        return _pick(lang, "Which email should I reply to?", "Email yang mana yang mau dibalas?"), []
    m = messages[0]
    what = what.strip().rstrip(".!")
    sender = next((line.author for line in reversed(s.lines) if line.by_human), "")
    body = f"Hi {_first_name(m['from'])},\n\n{what[:1].upper()}{what[1:]}.\n\n{sender}".strip()
    subject = m["subject"] if str(m["subject"]).lower().startswith("re:") else f"Re: {m['subject']}"
    return "", [call("send_email", {"to": _address_of(m["from"]), "subject": subject, "body": body})]


def _contact(s: Situation, lang: Lang) -> tuple[str, list[FunctionCall]]:
    found = s.last_result("list_contacts")
    if found is None:
        return "", [call("list_contacts", {"limit": 100})]
    contacts = found.get("contacts", [])
    said = set(words_of(s.request.replace("'s", " ")).split())
    named = [c for c in contacts if said & set(c["name"].lower().split())]
    if not named:
        asked = _CONTACT_ASK.search(s.request)
        who = (asked.group("who") or asked.group("who2") or asked.group("who3")) if asked else None
        if who and who.lower() not in _NOT_A_NAME:
            return _pick(lang, f"I don't see {who} in your contacts.", f"Aku nggak nemu {who} di kontakmu."), []
        names = _join_names(
            [f"{c['name']} {_pick(lang, 'at', 'di')} {c['emails'][0]}" if c["emails"] else c["name"] for c in contacts],
            lang,
        )
        return _pick(lang, f"Your contacts: {names}.", f"Kontakmu: {names}."), []
    c = named[0]
    ways = _join_names([*c["emails"], *c["phones"]], lang) or _pick(lang, "no email or number", "belum ada email/nomor")
    return _pick(lang, f"You can reach {c['name']} at {ways}.", f"{c['name']} bisa dihubungi di {ways}."), []


def _add_contact(s: Situation, lang: Lang, name: str) -> tuple[str, list[FunctionCall]]:
    added = s.last_result("add_contact")
    if added is not None:
        who = added.get("contact", {}).get("name", name)
        return _pick(lang, f"Added {who} to your contacts.", f"{who} udah aku simpan di kontakmu."), []
    emails = _ADDRESS.findall(s.request)
    phones = [p.strip() for p in _PHONE.findall(_ADDRESS.sub(" ", s.request))]
    return "", [call("add_contact", {"name": name.title(), "emails": emails[:5], "phones": phones[:5]})]


def _contact_to_add(request: str) -> str | None:
    """The name in "add Nay to my contacts, nay@example.com" / "simpan nomor Nay 0812...", or None."""
    if not (_ADDRESS.search(request) or _PHONE.search(request)):
        return None
    if not (has_any(request, _CONTACT_WORDS) or has_any(request, ("number", "nomor", "nomer", "email"))):
        return None
    cleaned = re.sub(
        r"\b(?:kontak|contact|nomor|nomer|number|email|e-mail|hp)\b", " ", _ADDRESS.sub(" ", request), flags=re.I
    )
    match = _ADD_CONTACT.search(cleaned)
    if match is None:
        return None
    name = " ".join(w for w in match.group("name").split() if w.lower() not in _NOT_A_NAME)
    return name or None


def wants_workspace(request: str) -> bool:
    """Is this one of Rafal's requests (mail, calendar, "add dinner ... on Friday at 7")?"""
    if _SEND.search(request) or _SEND_ID.search(request):
        return True
    if _ADD.search(request) and _hour(request) is not None:
        return True
    if _REPLY.search(request) or (
        _reads_one(request) and has_any(request, ("latest", "newest", "terbaru", "terakhir"))
    ):
        return True
    if _CONTACT_ASK.search(request) or _contact_to_add(request) or _told(request):
        return True
    if _heard_from(request) is not None or _DAY_ASKED.search(request) or _EVENT_ASKED.search(request):
        return True
    return has_any(request, _CALENDAR_WORDS) or has_any(request, _MAIL_WORDS) or has_any(request, _CONTACT_WORDS)


def mail_turn(s: Situation) -> tuple[str, list[FunctionCall]] | None:
    request, lang, now = s.request, s.lang, s.local_now
    if s.results and "error" in s.results[-1][1]:
        return _failed(lang, str(s.results[-1][1]["error"]))
    short = len(request.split()) <= 6
    asks_more = (
        request.rstrip().endswith("?") or _REPLY.search(request) or _SEND.search(request) or _SEND_ID.search(request)
    )
    if short and (is_plain_yes(request) or has_any(request, _NO)) and not asks_more:
        answered = _answer_proposal(s, lang, yes=is_plain_yes(request))
        if answered is not None:
            return answered
    send = _SEND.search(request) or _SEND_ID.search(request)
    if send:
        return _send(s, lang, send.group("who"), send.group("what"))
    if (told := _told(request)) is not None:
        return _send(s, lang, *told)
    if (sender := _heard_from(request)) is not None:
        return _read_one(s, lang, sender)
    reply = _REPLY.search(request)
    if reply:
        return _reply(s, lang, reply.group("who"), reply.group("what"))
    if (name := _contact_to_add(request)) is not None:
        return _add_contact(s, lang, name)
    if _reads_one(request) and not has_any(request, ("emails", "today", "hari ini")):
        return _read_one(s, lang)
    if _CONTACT_ASK.search(request) or has_any(request, _CONTACT_WORDS):
        return _contact(s, lang)
    add = _ADD.search(request)
    if add and now is not None and (added := _add_event(s, lang, now, add.group("what"))) is not None:
        return added
    if now is not None and (asked := _EVENT_ASKED.search(request)) and _when(request) is None:
        return _event_named(s, lang, now, asked.group("what") or asked.group("what2"))
    if now is not None and (has_any(request, _CALENDAR_WORDS) or _DAY_ASKED.search(request)):
        return _calendar(s, lang, now)
    if has_any(request, _MAIL_WORDS):
        return _read_mail(s, lang)
    return None
