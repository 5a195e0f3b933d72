"""What every specialist does offline beyond its own domain skill: stay silent when it
already answered, answer small talk, send other domains' requests to Ava, and say
plainly that it cannot do something yet when it has no tool for it."""

from __future__ import annotations

from dataclasses import replace

from agents.offline.situation import Line, Reply, Situation
from agents.offline.skillset import skills_of
from agents.offline.words import clauses, in_language, intent_of, is_follow_up, topic_of, topics_of

# A specialist's domain is named by its handle (agents/offline/words.py `topic_of`).


def own_part(s: Situation) -> Situation:
    """The situation with the latest request cut to this agent's clauses: of "play some jazz
    and turn on the light", Yori reads only "play some jazz" (a clause with no topic of its
    own, "and set it to 20", belongs with the one before)."""
    domain, current, kept, topics = s.agent, None, [], set()
    for clause in clauses(s.request):
        current = topic_of(clause) or current
        topics.add(current)
        if current == domain:
            kept.append(clause)
    if len(topics - {None}) < 2 or not kept:
        return s
    last = max(i for i, line in enumerate(s.lines) if line.by_human)
    lines = list(s.lines)
    lines[last] = Line(lines[last].author, " and ".join(kept))
    return replace(s, lines=tuple(lines))


def silent_if_answered(s: Situation) -> Reply | None:
    """Handed the same request again after answering it: silence (docs/agents.md#silence)."""
    return ("", []) if s.trigger == "ava" and s.answered_after_request else None


def mine(s: Situation) -> bool:
    """Is the latest request (or a follow-up to the previous one) in this agent's domain?"""
    domain = s.agent
    if domain in topics_of(s.request):
        return True
    return not topics_of(s.request) and is_follow_up(s.request) and domain in topics_of(s.previous_request)


def social(s: Situation) -> Reply | None:
    lang, intent = s.lang, intent_of(s.request)
    name = s.agent.capitalize()
    if intent == "how_are_you" and s.trigger == "human":
        return in_language(lang, "I'm good, thanks! What do you need?", "Baik, makasih! Ada yang bisa aku bantu?"), []
    if intent == "greeting" and s.trigger == "human":
        return in_language(lang, f"Hi! {name} here. What do you need?", f"Hai! {name} di sini. Ada apa?"), []
    if intent == "thanks":
        return in_language(lang, "You're welcome!", "Sama-sama!"), []
    return None


def elsewhere(s: Situation) -> Reply | None:
    """Asked directly for another domain's work: point the person to Ava."""
    topics = topics_of(s.request)
    if not topics or s.agent in topics:
        return None
    return in_language(
        s.lang,
        "That's not my area; ask Ava, she'll know who can help.",
        "Itu bukan bidangku, coba tanya Ava ya, dia tahu siapa yang bisa bantu.",
    ), []


def not_yet(s: Situation) -> Reply:
    """The domain's work with no tool to do it, or anything else: said plainly, never faked."""
    skills = skills_of(s.agent)
    assert skills is not None, f"{s.agent} is not a specialist in the room"
    en, id_ = skills.not_yet
    if mine(s) and s.tools:  # its own domain, with tools: it missed the words, not the means
        en, id_ = (
            "I didn't quite get what to do there. Could you say it another way?",
            "Aku kurang nangkep maksudnya. Bisa bilang dengan cara lain?",
        )
    elif s.tools:
        en, id_ = "I can't help with that one, sorry.", "Maaf, yang itu aku nggak bisa bantu."
    return in_language(s.lang, en, id_), []
