"""The `Knowledge` port: semantic memory learned from the thread (docs/agents.md#memory).

A person's knowledge is a temporal graph: entities (the person, people they know, food,
places, things...) joined by facts that became true at `valid_at` and, once a newer fact
contradicted them, stopped being true at `invalid_at`. Facts are never deleted by being
contradicted; only forgetting the person erases them. Adapters take and return these
dataclasses, never a vendor's types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from agents.model import Usage

EntityType = Literal["person", "place", "thing", "food", "organisation", "preference", "event"]
ENTITY_TYPES: tuple[EntityType, ...] = ("person", "place", "thing", "food", "organisation", "preference", "event")

# Search answers at most this many facts; the session layer uses fewer.
SEARCH_LIMIT_MAX = 50
# What a query may hold; longer texts are cut before they reach any index.
QUERY_CHARS_MAX = 500


@dataclass(frozen=True, slots=True)
class KnowledgeMessage:
    """One thread message as knowledge sees it: who wrote it, what, and when."""

    id: str
    seq: int
    author: str  # "human", an agent's name, or "postera"
    text: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Entity:
    id: str
    name: str
    type: EntityType
    created_at: datetime
    # The person the graph belongs to.
    is_self: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "is_self": self.is_self,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class Fact:
    """An edge: `subject --relation--> object`, with the sentence that states it."""

    id: str
    subject_id: str
    relation: str
    object_id: str
    text: str
    valid_at: datetime
    invalid_at: datetime | None = None
    message_ids: tuple[str, ...] = ()
    subject: str = ""  # names, for readers that have no node list at hand
    object: str = ""

    @property
    def valid(self) -> bool:
        return self.invalid_at is None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.subject_id,
            "target": self.object_id,
            "relation": self.relation,
            "text": self.text,
            "valid_at": self.valid_at.isoformat(),
            "invalid_at": self.invalid_at.isoformat() if self.invalid_at else None,
            "valid": self.valid,
            "message_ids": list(self.message_ids),
        }


@dataclass(frozen=True, slots=True)
class Graph:
    nodes: tuple[Entity, ...] = ()
    edges: tuple[Fact, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"nodes": [n.as_json() for n in self.nodes], "edges": [e.as_json() for e in self.edges]}


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What forgetting a person erased from their graph."""

    nodes: int = 0
    edges: int = 0


@dataclass(frozen=True, slots=True)
class ModelSpend:
    """The model call an ingestion made, as the vendor reported it: the learning worker
    charges it to the person (docs/money.md#learning)."""

    model: str
    usage: Usage


class Knowledge(Protocol):
    """Semantic memory for every person, one graph each."""

    async def ingest(
        self, *, person_id: str, person_name: str, messages: Sequence[KnowledgeMessage]
    ) -> ModelSpend | None:
        """Learn from thread messages, in `seq` order. Ingesting a message twice learns nothing new.
        Returns the model call it made to read them, if any (None: nothing to charge)."""
        ...

    async def search(self, *, person_id: str, text: str, limit: int = 10) -> list[Fact]:
        """Facts still true that are relevant to `text`, most relevant first. A text with
        nothing to search for asks for what is known in general (the newest facts)."""
        ...

    async def graph(self, *, person_id: str) -> Graph:
        """Every node and edge, the invalidated edges included."""
        ...

    async def forget(self, *, person_id: str) -> Forgotten:
        """Erase the person's whole graph."""
        ...


class KnowledgeError(Exception):
    """Knowledge could not be read or written (the backing service failed or timed out)."""
