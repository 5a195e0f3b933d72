"""`ZepKnowledge`: the `Knowledge` port answered by Zep Cloud (API v4, `zep-cloud` 4.x).

The only module that imports `zep_cloud`. One Zep user per person (our person id is the
user's developer-assigned `user_id`), one Zep thread per person that receives every
message; Zep builds the temporal graph itself, so there is no extractor here. Search is
Zep's edge search over the user's graph; the whole graph is read by listing nodes and
edges page by page, within a bound; forgetting deletes the Zep user, graph and all.

Every call runs under one timeout with bounded retries (the SDK's own), and every SDK
or transport error becomes `KnowledgeError`, so the learning worker retries later and
the HTTP edge answers 503 instead of a 500.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
from zep_cloud import AsyncZep
from zep_cloud.core.api_error import ApiError
from zep_cloud.errors import NotFoundError
from zep_cloud.types import AddMessage, Edge, Node

from agents.knowledge.port import (
    QUERY_CHARS_MAX,
    SEARCH_LIMIT_MAX,
    Entity,
    EntityType,
    Fact,
    Forgotten,
    Graph,
    KnowledgeError,
    KnowledgeMessage,
)

T = TypeVar("T")

PAGE_SIZE = 100  # Zep's maximum
# The graph endpoint reads at most this many pages of nodes and of edges.
PAGES_MAX = 20
_MESSAGE_CHARS_MAX = 4_000
# Where each person's Zep user and thread are, remembered for at most this many people.
_PEOPLE_CACHED_MAX = 10_000
_LABEL_TYPES: dict[str, EntityType] = {
    "person": "person",
    "user": "person",
    "place": "place",
    "location": "place",
    "food": "food",
    "organization": "organisation",
    "organisation": "organisation",
    "company": "organisation",
    "preference": "preference",
    "event": "event",
    "thing": "thing",
    "object": "thing",
}


@dataclass(slots=True)
class _Person:
    user_uuid: str
    thread_uuid: str | None = None


def _when(value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _entity_type(labels: Sequence[str] | None) -> EntityType:
    for label in labels or ():
        found = _LABEL_TYPES.get(label.lower())
        if found is not None and label.lower() != "user":
            return found
    return "person" if "User" in (labels or ()) else "thing"


def _fact(edge: Edge) -> Fact:
    created = _when(edge.created_at) or datetime.now(UTC)
    return Fact(
        id=edge.uuid_ or "",
        subject_id=edge.source_node_uuid or "",
        relation=(edge.name or "related_to").lower(),
        object_id=edge.target_node_uuid or "",
        text=edge.fact or "",
        valid_at=_when(edge.valid_at) or created,
        invalid_at=_when(edge.invalid_at) or _when(edge.expired_at),
        message_ids=tuple(edge.episode_uuids or ()),
        subject=edge.source_node_name or "",
        object=edge.target_node_name or "",
    )


class ZepKnowledge:
    """Every person's graph in Zep Cloud. `httpx_client` points it elsewhere (a fake in tests)."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = 10.0,
        retries_max: int = 2,
        httpx_client: httpx.AsyncClient | None = None,
    ) -> None:
        assert api_key, "ZepKnowledge needs an API key"
        self._timeout_s = timeout_s
        self._http = httpx_client or httpx.AsyncClient(timeout=timeout_s)
        self._client = AsyncZep(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=retries_max, httpx_client=self._http
        )
        self._people: dict[str, _Person] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, step: Callable[[], Awaitable[T]]) -> T:
        try:
            async with asyncio.timeout(self._timeout_s):
                return await step()
        except (ApiError, httpx.HTTPError, TimeoutError, ValueError) as exc:
            status = getattr(exc, "status_code", None)
            raise KnowledgeError(f"Zep did not answer ({status or type(exc).__name__})") from exc

    async def _user(self, person_id: str, person_name: str = "", *, create: bool = True) -> _Person | None:
        known = self._people.get(person_id)
        if known is not None:
            return known
        async with self._locks.setdefault(person_id, asyncio.Lock()):
            if (known := self._people.get(person_id)) is not None:
                return known
            try:
                user = await self._call(lambda: self._client.user.lookup(user_id=person_id))
            except KnowledgeError as exc:
                if not isinstance(exc.__cause__, NotFoundError):
                    raise
                if not create:
                    return None
                user = await self._call(
                    lambda: self._client.user.create(user_id=person_id, first_name=person_name or None)
                )
            assert user.uuid_, "Zep answered a user without a uuid"
            if len(self._people) >= _PEOPLE_CACHED_MAX:
                self._people.clear()  # a lookup is cheap; unbounded memory is not
                self._locks = {person_id: self._locks[person_id]}
            person = self._people[person_id] = _Person(user_uuid=user.uuid_)
            return person

    async def _thread(self, person: _Person) -> str:
        if person.thread_uuid is None:
            page = await self._call(lambda: self._client.thread.list(user_uuid=person.user_uuid, page_size=1))
            existing = next((t.uuid_ for t in page.items or () if t.uuid_), None)
            if existing is None:
                thread = await self._call(lambda: self._client.thread.create(user_uuid=person.user_uuid))
                existing = thread.uuid_
            assert existing, "Zep answered a thread without a uuid"
            person.thread_uuid = existing
        return person.thread_uuid

    async def ingest(self, *, person_id: str, person_name: str, messages: Sequence[KnowledgeMessage]) -> None:
        # Zep reads facts with its own models, on the operator's Zep plan: nothing to charge.
        if not messages:
            return
        try:
            await self._add(person_id, person_name, messages)
        except KnowledgeError as exc:
            if not isinstance(exc.__cause__, NotFoundError):
                raise
            # Forgotten (by another process) since we cached where the person lives: start anew.
            self._people.pop(person_id, None)
            await self._add(person_id, person_name, messages)

    async def _add(self, person_id: str, person_name: str, messages: Sequence[KnowledgeMessage]) -> None:
        person = await self._user(person_id, person_name)
        assert person is not None
        thread = await self._thread(person)
        batch = [
            AddMessage(
                content=m.text[:_MESSAGE_CHARS_MAX],
                role="user" if m.author == "human" else "assistant",
                name=person_name if m.author == "human" else m.author.capitalize(),
                reference_time=m.created_at.isoformat(),
                metadata={"message_id": m.id, "seq": m.seq},
            )
            for m in messages
        ]
        # The same batch retried (after a crash) carries the same key, so Zep adds it once.
        key = hashlib.sha256(",".join(m.id for m in messages).encode()).hexdigest()
        await self._call(lambda: self._client.thread.add_messages(thread, messages=batch, idempotency_key=key))

    async def search(self, *, person_id: str, text: str, limit: int = 10) -> list[Fact]:
        person = await self._user(person_id, create=False)
        if person is None:
            return []
        query = text[:QUERY_CHARS_MAX].strip()
        size = max(1, min(limit, SEARCH_LIMIT_MAX))
        if not query:
            # Nothing to search for: what is known, newest first.
            page = await self._call(
                lambda: self._client.graph.edge.list(
                    person.user_uuid, page_size=PAGE_SIZE, order_by="created_at", order="desc"
                )
            )
        else:
            page = await self._call(
                lambda: self._client.graph.search_edges(person.user_uuid, query=query, page_size=size)
            )
        facts = [_fact(edge) for edge in page.items or ()]
        return [f for f in facts if f.valid][:size]

    async def graph(self, *, person_id: str) -> Graph:
        person = await self._user(person_id, create=False)
        if person is None:
            return Graph()
        nodes: list[Node] = await self._all(
            lambda cursor: self._client.graph.node.list(person.user_uuid, page_size=PAGE_SIZE, cursor=cursor)
        )
        edges: list[Edge] = await self._all(
            lambda cursor: self._client.graph.edge.list(person.user_uuid, page_size=PAGE_SIZE, cursor=cursor)
        )
        return Graph(
            nodes=tuple(
                Entity(
                    id=n.uuid_ or "",
                    name=n.name or "",
                    type=_entity_type(n.labels),
                    created_at=_when(n.created_at) or datetime.now(UTC),
                    is_self="User" in (n.labels or ()),
                )
                for n in nodes
            ),
            edges=tuple(_fact(e) for e in edges),
        )

    async def _all(self, page_at: Callable[[str | None], Awaitable[Any]]) -> list[Any]:
        """Every item of a listing, page by page, at most PAGES_MAX pages."""
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(PAGES_MAX):
            page = await self._call(functools.partial(page_at, cursor))
            items.extend(page.items or ())
            cursor = page.response.next_cursor
            if not page.has_next or not cursor:
                break
        return items

    async def forget(self, *, person_id: str) -> Forgotten:
        graph = await self.graph(person_id=person_id)
        person = self._people.pop(person_id, None) or await self._user(person_id, create=False)
        self._people.pop(person_id, None)
        if person is None:
            return Forgotten()
        await self._call(lambda: self._client.user.delete(person.user_uuid))
        return Forgotten(nodes=len(graph.nodes), edges=len(graph.edges))
