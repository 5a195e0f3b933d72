"""Ava's offline skills: hand each part of a request to its specialist with a bare tag,
in the order asked; stay silent after them in text and relay their results in tagged
sentences on a call; say plainly what nobody can do yet; small talk, the time, and a
goodbye with #end#. What she says the team can do comes from the team layer, which is
built from the tools each agent really has."""

from __future__ import annotations

import re

from agents.capabilities import capabilities
from agents.knowledge.rules import only_mentioned
from agents.offline.answers import asked_by, owner_of
from agents.offline.situation import Reply, Situation, call
from agents.offline.skillset import skills_of
from agents.offline.words import Lang, in_language, intent_of, is_follow_up, is_question, join, topics_of
from agents.roster import current_roster
from agents.team import Member

_CANT = ("couldn't", "can't", "cannot", "gagal", "nggak bisa", "gak bisa", "belum bisa", "nggak ada", "there's no")
_TIMED = re.compile(
    r"\b(remind|reminder|ingatkan|ingetin|ingatin|in \d+ (?:minutes?|mins?|hours?)|\d+ menit lagi|tomorrow|besok|"
    r"tonight|nanti malam|at \d{1,2}(?::\d\d)?\s*(?:am|pm)?|jam \d{1,2}(?:[.:]\d\d)?)\b",
    re.IGNORECASE,
)


def _tagged(s: Situation, text: str, emotion: str) -> str:
    """On a call every sentence Ava says carries an emotion tag; in text, none."""
    return f"{text} #{emotion}#" if s.voice else text


def wanted(s: Situation) -> list[str]:
    """The specialists this request needs, in the order the person asked."""
    team = current_roster()
    named = [m.lower() for m in team.mention.findall(s.request) if m.lower() in team.by_name]
    topics = topics_of(s.request)
    intent = intent_of(s.request)
    owner = owner_of(s.request) if not topics else None
    if not topics and intent in ("greeting", "how_are_you", "thanks", "goodbye", "time") and owner is None:
        # "@zee @yori hello", "thanks!" are small talk for the lead, not work to hand on; but
        # "balesin Budi bilang makasih ya" is a reply for Rafal to send, thanks inside it or not.
        return []
    if not topics and not named and intent in ("capabilities", "who"):
        return []  # "what can you do?" asks about the team, whoever spoke last: the lead answers
    if not topics and not named and s.previous_request and is_follow_up(s.request):
        topics = topics_of(s.previous_request)[-1:]
    if not topics and not named and owner is not None:
        return [owner]  # a request the specialist's own rules recognise ("skip this one")
    return list(dict.fromkeys(named + topics))  # a topic is named by its specialist


# Said on a call in the same answer as the first handoff, while the specialist works: what
# will be done, never that it is done (chat.speaking drops a sentence that claims a result).
ACKNOWLEDGEMENTS = {"en": "On it.", "id": "Oke, bentar ya."}


def hand_on(s: Situation) -> Reply | None:
    """The next specialist not yet handed this request, by calling its tool with the bare tag.

    On a call the first handoff comes with a short acknowledgement, and when one specialist
    is all the request needs, Ava asks for its answer to be said as it is: she would only
    repeat it."""
    handed = {name for name, _ in s.results if name in current_roster().by_name}
    needed = wanted(s)
    for name in needed:
        if name not in handed and name in s.tools:
            args: dict[str, object] = {"tag": f"@{name}"}
            if not s.voice or handed:
                return "", [call(name, args)]
            if len(needed) == 1:
                args["answer_directly"] = True
            ack = ACKNOWLEDGEMENTS["id" if s.lang == "id" else "en"]
            return _tagged(s, ack, "neutral"), [call(name, args)]
    return None


def answer_back(s: Situation) -> Reply | None:
    """A short yes or no to a specialist's question ("shall I send it?") goes back to it."""
    asker = asked_by(s)
    if asker is None or asker not in s.tools or any(name == asker for name, _ in s.results):
        return None
    return "", [call(asker, {"tag": f"@{asker}"})]


def relay(s: Situation) -> Reply | None:
    """After the specialists: silent in text (the person read them), spoken on a call."""
    team = current_roster().by_name
    replies = [(name, str(r.get("response", ""))) for name, r in s.results if name in team]
    if not replies:
        return None
    if not s.voice:
        return "", []
    sentences: list[str] = []
    for name, reply in replies:
        first = _in_third_person(name, reply.strip().split("\n")[0].replace("(", "").replace(")", ""))
        if not first:
            first = in_language(s.lang, "It's taken care of.", "Udah beres ya.")
        low = first.lower()
        emotion = "thinking" if first.endswith("?") else "guilty" if any(w in low for w in _CANT) else "relieved"
        sentences.append(f"{first} #{emotion}#")
    return " ".join(sentences[:2]), []


def _in_third_person(name: str, text: str) -> str:
    """Ava relays a specialist's "I can't ..." as "Yori can't ...", never as her own."""
    who = name.capitalize()
    text = re.sub(r"\bI (can't|cannot|couldn't|don't)\b", lambda m: f"{who} {m.group(1)}", text)
    return re.sub(r"\b(aku|Aku)\b", who, text)


def _later_work(topic: str) -> bool:
    skills = skills_of(topic)
    return skills is not None and skills.timed_work_is_later


def later(s: Situation) -> Reply | None:
    """Work for a later time: without wake tools Ava cannot keep it, and says so."""
    if "schedule_wake" in s.tools or not _TIMED.search(s.request) or is_question(s.request):
        return None  # "what's on my calendar tomorrow?" asks now about later: not later work
    reminder = re.search(r"remind|ingatkan|ingetin|ingatin", s.request, re.I)
    # A calendar event's time is data for Rafal, not work to do later ("add dinner on Friday at 7").
    if not reminder and not any(_later_work(topic) for topic in topics_of(s.request)):
        return None
    text = in_language(
        s.lang,
        "I can't do anything at a later time yet, so I can't set that up. I can do it right now if you like.",
        "Aku belum bisa ngerjain sesuatu nanti-nanti, jadi yang itu belum bisa. Kalau mau, bisa aku kerjain sekarang.",
    )
    return _tagged(s, text, "guilty"), []


def team_sentence(lang: Lang, team: tuple[Member, ...]) -> str:
    """What the group can do, from the team layer; empty when the layer is absent."""
    able: list[str] = []
    idle: list[str] = []
    for member in team:
        if member.name == "ava":
            continue
        caps = [c for c in capabilities() if c.name in member.capabilities]
        if caps:
            able.append(
                f"{member.name.capitalize()} "
                + in_language(lang, "can ", "bisa ")
                + join(lang, [c.en if lang == "en" else c.id for c in caps])
            )
        else:
            idle.append(member.name.capitalize())
    own = next((m for m in team if m.name == "ava"), None)
    mine = [c.en if lang == "en" else c.id for c in capabilities() if own and c.name in own.capabilities]
    parts = []
    if able:
        parts.append("; ".join(able) + ".")
    if idle:
        parts.append(
            in_language(
                lang,
                f"{join(lang, idle)} {'is' if len(idle) == 1 else 'are'} not connected to anything yet.",
                f"{join(lang, idle)} belum tersambung ke apa-apa.",
            )
        )
    if mine:
        parts.append(in_language(lang, "I can ", "Aku bisa ") + join(lang, mine) + ".")
    return " ".join(parts)


_DAYS_ID = {"Monday": "Senin", "Tuesday": "Selasa", "Wednesday": "Rabu", "Thursday": "Kamis", "Friday": "Jumat",
            "Saturday": "Sabtu", "Sunday": "Minggu"}  # fmt: skip


def small_talk(s: Situation) -> Reply:
    lang, intent = s.lang, intent_of(s.request)
    if intent == "goodbye":
        text = in_language(lang, "Bye for now, talk soon!", "Dadah, sampai nanti ya!")
        return (f"{text} #affectionate# #end#" if s.voice else text), []
    if intent == "time" and s.clock:
        day, hour, weekday = s.clock
        text = in_language(
            lang,
            f"It's {hour} on {weekday}." if s.voice else f"It's {hour} on {weekday}, {day}.",
            f"Sekarang jam {hour.replace(':', '.')}, hari {_DAYS_ID.get(weekday, weekday)}.",
        )
        return _tagged(s, text, "neutral"), []
    if intent == "how_are_you":
        text = in_language(
            lang,
            "I'm doing great, thanks for asking! How about you?",
            "Baik banget, makasih udah nanya! Kamu sendiri gimana?",
        )
        return _tagged(s, text, "affectionate"), []
    if intent == "thanks":
        return _tagged(s, in_language(lang, "Anytime!", "Sama-sama!"), "affectionate"), []
    team = team_sentence(lang, s.team)
    if intent == "greeting":
        if s.first_time:
            hello = in_language(
                lang, "Hi, I'm Ava!" if s.voice else "Hi! I'm Ava.", "Hai, aku Ava!" if s.voice else "Hai! Aku Ava."
            )
            ask = in_language(lang, "What's up?", "Ada apa?")
            # On a call one or two sentences; the team is told in text, where it can be read.
            said = (hello, ask) if s.voice else (hello, team, ask)
            return _tagged(s, " ".join(p for p in said if p), "affectionate"), []
        return _tagged(
            s, in_language(lang, "Hey! What can I do for you?", "Hai! Ada yang bisa aku bantu?"), "affectionate"
        ), []
    if intent in ("capabilities", "who"):
        lead = in_language(lang, "I'm Ava, I lead the group.", "Aku Ava, yang mimpin grup ini.")
        return _tagged(s, f"{lead} {team}".strip(), "neutral"), []
    if (name := only_mentioned(s.request)) is not None:
        # Telling of one's day is no request: nothing to refuse (docs/agents.md, the offline model).
        text = in_language(
            lang,
            f"Nice! Tell me anything about {name} you'd like me to remember.",
            f"Asyik! Kalau ada yang perlu aku ingat soal {name}, bilang aja ya.",
        )
        return _tagged(s, text, "affectionate"), []
    text = in_language(
        lang,
        "I can't do that yet, sorry: nobody here has a tool for it.",
        "Maaf, yang itu belum bisa: belum ada yang punya alat buat itu di sini.",
    )
    return _tagged(s, text, "guilty"), []
