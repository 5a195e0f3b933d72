"""The offline model's dispatcher: which skills each agent tries, in order.

A skill reads the situation and answers, or returns None to let the next one try. A
domain keeps its intents in its own module and plugs in here with one line: wakes go in
`LEAD` before `later`, a specialist's domain skill goes in its `DOMAIN_SKILLS` entry.
"""

from __future__ import annotations

from agents.offline.ava import answer_back, hand_on, later, relay, small_talk
from agents.offline.home import home
from agents.offline.mail import mail_turn
from agents.offline.music import music_turn
from agents.offline.situation import Reply, Situation, Skill
from agents.offline.specialists import elsewhere, not_yet, own_part, silent_if_answered, social
from agents.offline.wakes import wake_turn

# Ava: wake notes (schedule, list, cancel; speak when one wakes her); timed work; hand on
# to the next specialist asked for; once all answered, relay or stay silent; anything else
# is small talk.
LEAD: tuple[Skill, ...] = (
    wake_turn,
    answer_back,
    later,
    hand_on,
    relay,
)

# Each specialist's own domain skills, tried after the silence check.
DOMAIN_SKILLS: dict[str, tuple[Skill, ...]] = {
    "zee": (home,),
    "yori": (music_turn,),
    "rafal": (mail_turn,),
}

# Every specialist, after its domain: small talk, other domains to Ava, then "not yet".
COMMON: tuple[Skill, ...] = (social, elsewhere)


def lead_turn(s: Situation) -> Reply:
    for skill in LEAD:
        reply = skill(s)
        if reply is not None:
            return reply
    return small_talk(s)


def specialist_turn(s: Situation) -> Reply:
    if (silent := silent_if_answered(s)) is not None:
        return silent
    s = own_part(s)  # each specialist reads only the part of the request meant for it
    for skill in (*DOMAIN_SKILLS.get(s.agent, ()), *COMMON):
        reply = skill(s)
        if reply is not None:
            return reply
    return not_yet(s)
