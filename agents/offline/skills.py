"""The offline model's dispatcher: which skills each agent tries, in order.

A skill reads the situation and answers, or returns None to let the next one try. Ava's
skills are listed here (wakes before `later`); a specialist's domain skills come from its
own package (agents/offline/skillset.py), tried after the silence check.
"""

from __future__ import annotations

from agents.offline.ava import answer_back, hand_on, later, relay, small_talk
from agents.offline.situation import Reply, Situation, Skill
from agents.offline.skillset import skills_of
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
    own = skills_of(s.agent)
    domain: tuple[Skill, ...] = own.skills if own is not None else ()
    for skill in (*domain, *COMMON):
        reply = skill(s)
        if reply is not None:
            return reply
    return not_yet(s)
