"""The `Extractor` port: what a thread message says about the person, as claims.

A claim is a fact not yet in the graph: `subject --relation--> object` with the sentence
stating it and, for relations that admit one value at a time, a `slot`. Two claims in
one slot of one subject contradict each other, so the graph keeps the newer one valid
and marks the older no longer valid. Extractors see the facts currently known, so that
"I've switched to soto" can be read against "my favourite food is rendang".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agents.knowledge.port import EntityType, KnowledgeMessage, ModelSpend

NAME_CHARS_MAX = 80
TEXT_CHARS_MAX = 300


@dataclass(frozen=True, slots=True)
class Mention:
    """An entity as a claim names it; `is_self` is the person the graph belongs to."""

    name: str
    type: EntityType
    is_self: bool = False


SELF = Mention(name="", type="person", is_self=True)


@dataclass(frozen=True, slots=True)
class Claim:
    message_id: str
    subject: Mention
    relation: str
    object: Mention
    text: str
    # Claims sharing a slot (for one subject) exclude each other; None: they accumulate.
    slot: str | None = None


@dataclass(frozen=True, slots=True)
class Extraction:
    """What an extractor read: the claims, and the model call that read them (None when
    no model was asked, as with the rules), which the person is charged for."""

    claims: list[Claim]
    spent: ModelSpend | None = None


class Extractor(Protocol):
    async def extract(
        self, *, person_name: str, messages: Sequence[KnowledgeMessage], known: Sequence[Claim]
    ) -> Extraction:
        """Claims the messages make, in message order. `known` are the valid facts so far."""
        ...


class ExtractionFailed(Exception):
    """The extractor could not read these messages (a model refused or did not answer, or
    answered something unreadable: then `spent` is that answer's call, still charged)."""

    def __init__(self, message: str, *, spent: ModelSpend | None = None) -> None:
        super().__init__(message)
        self.spent = spent
