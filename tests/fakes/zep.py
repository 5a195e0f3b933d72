"""An in-process fake of the Zep Cloud v4 endpoints `ZepKnowledge` uses, for its contract test.

It is an `httpx.MockTransport` handler with state: users (addressed by uuid, found by
our `user_id`), their threads and messages, and a temporal graph per user. Zep builds
its graph with a model; the fake builds it with our rule extractor, so the contract
suite can ask both adapters the same questions. It speaks Zep's wire format (JSON with
`uuid`, `items`/`next_cursor` pages) and honours `Idempotency-Key` on adding messages.
Requests it does not know are answered 418 and counted in `unknown`.

    fake = FakeZep()
    knowledge = ZepKnowledge(api_key="k", base_url=fake.base_url, httpx_client=fake.client())
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from agents.knowledge import Claim, KnowledgeMessage, Mention, read_claims

_LABELS = {
    "person": "Person",
    "place": "Location",
    "food": "Food",
    "organisation": "Organization",
    "thing": "Object",
    "preference": "Preference",
    "event": "Event",
}


@dataclass
class _User:
    uuid: str
    user_id: str
    first_name: str
    threads: list[str] = field(default_factory=list)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: list[dict[str, Any]] = field(default_factory=list)
    claims: list[tuple[Claim, str]] = field(default_factory=list)  # (claim, edge uuid)


class FakeZep:
    base_url = "https://zep.test/api/v4"

    def __init__(self) -> None:
        self.users: dict[str, _User] = {}
        self.threads: dict[str, str] = {}  # thread uuid -> user uuid
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.keys: set[str] = set()
        self.unknown = 0
        self.requests: list[tuple[str, str]] = []
        self._ids = itertools.count(1)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle))

    def _uuid(self, kind: str) -> str:
        return f"{kind}-{next(self._ids):04d}"

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/api/v4/")
        self.requests.append((request.method, path))
        body = json.loads(request.content) if request.content else {}
        for method, pattern, handler in self._routes():
            match = re.fullmatch(pattern, path)
            if match and request.method == method:
                response: httpx.Response = handler(request, body, *match.groups())
                return response
        self.unknown += 1
        return httpx.Response(418, json={"message": "not faked"})

    def _routes(self) -> list[tuple[str, str, Any]]:
        return [
            ("POST", r"users/lookup", self._lookup_user),
            ("POST", r"users", self._create_user),
            ("DELETE", r"users/([^/]+)", self._delete_user),
            ("GET", r"threads", self._list_threads),
            ("POST", r"threads", self._create_thread),
            ("POST", r"threads/([^/]+)/messages", self._add_messages),
            ("POST", r"graphs/([^/]+)/search/edges", self._search_edges),
            ("POST", r"graphs/([^/]+)/nodes/list", self._list_nodes),
            ("POST", r"graphs/([^/]+)/edges/list", self._list_edges),
        ]

    @staticmethod
    def _user_json(user: _User) -> dict[str, Any]:
        return {"uuid": user.uuid, "user_id": user.user_id, "first_name": user.first_name, "graph_uuid": user.uuid}

    def _lookup_user(self, _: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        for user in self.users.values():
            if user.user_id == body.get("user_id"):
                return httpx.Response(200, json=self._user_json(user))
        return httpx.Response(404, json={"message": "user not found"})

    def _create_user(self, _: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        user = _User(self._uuid("user"), body["user_id"], body.get("first_name") or "")
        self.users[user.uuid] = user
        me = {"uuid": self._uuid("node"), "name": user.first_name or user.user_id, "labels": ["Entity", "User"]}
        user.nodes["@self"] = me | {
            "created_at": datetime.now(UTC).isoformat(),
            "episode_uuids": [],
            "episode_uuids_truncated": False,
        }
        return httpx.Response(201, json=self._user_json(user))

    def _delete_user(self, _: httpx.Request, __: dict[str, Any], uuid: str) -> httpx.Response:
        user = self.users.pop(uuid, None)
        if user is None:
            return httpx.Response(404, json={"message": "user not found"})
        for thread in user.threads:
            self.threads.pop(thread, None)
            self.messages.pop(thread, None)
        return httpx.Response(200, json={})

    def _list_threads(self, request: httpx.Request, _: dict[str, Any]) -> httpx.Response:
        user = self.users.get(request.url.params.get("user_uuid", ""))
        items = [{"uuid": t, "user_uuid": user.uuid} for t in user.threads] if user else []
        return httpx.Response(200, json={"items": items, "next_cursor": None, "total_size": len(items)})

    def _create_thread(self, _: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        user = self.users[body["user_uuid"]]
        thread = self._uuid("thread")
        user.threads.append(thread)
        self.threads[thread] = user.uuid
        self.messages[thread] = []
        return httpx.Response(201, json={"uuid": thread, "user_uuid": user.uuid, "graph_uuid": user.uuid})

    def _add_messages(self, request: httpx.Request, body: dict[str, Any], thread: str) -> httpx.Response:
        if thread not in self.threads:
            return httpx.Response(404, json={"message": "thread not found"})
        key = request.headers.get("idempotency-key", "")
        if key in self.keys:
            return httpx.Response(200, json={})
        self.keys.add(key)
        user = self.users[self.threads[thread]]
        self.messages[thread].extend(body["messages"])
        incoming = [
            KnowledgeMessage(
                id=self._uuid("episode"),
                seq=0,
                author="human" if m["role"] == "user" else "ava",
                text=m["content"],
                created_at=datetime.fromisoformat(m["reference_time"]),
            )
            for m in body["messages"]
        ]
        known = [c for c, edge in user.claims if self._edge(user, edge)["invalid_at"] is None]
        said = {m.id: m.created_at.isoformat() for m in incoming}
        for claim in read_claims(person_name=user.first_name, messages=incoming, known=known):
            self._learn(user, claim, said[claim.message_id])
        return httpx.Response(200, json={"messages": []})

    @staticmethod
    def _edge(user: _User, uuid: str) -> dict[str, Any]:
        return next(e for e in user.edges if e["uuid"] == uuid)

    def _node(self, user: _User, mention: Mention) -> dict[str, Any]:
        key = "@self" if mention.is_self else f"{mention.type}:{mention.name.casefold()}"
        if key not in user.nodes:
            labels = ["Entity", _LABELS[mention.type]]
            user.nodes[key] = {
                "uuid": self._uuid("node"),
                "name": mention.name,
                "labels": labels,
                "created_at": datetime.now(UTC).isoformat(),
                "episode_uuids": [],
                "episode_uuids_truncated": False,
            }
        return user.nodes[key]

    def _learn(self, user: _User, claim: Claim, at: str) -> None:
        source, target = self._node(user, claim.subject), self._node(user, claim.object)
        for earlier, uuid in user.claims:
            edge = self._edge(user, uuid)
            same_slot = claim.slot is not None and earlier.slot == claim.slot and edge["invalid_at"] is None
            if same_slot and edge["target_node_uuid"] != target["uuid"]:
                edge["invalid_at"] = at
        edge = {
            "uuid": self._uuid("edge"),
            "name": claim.relation.upper(),
            "fact": claim.text,
            "source_node_uuid": source["uuid"],
            "source_node_name": source["name"],
            "target_node_uuid": target["uuid"],
            "target_node_name": target["name"],
            "valid_at": at,
            "invalid_at": None,
            "created_at": datetime.now(UTC).isoformat(),
            "episode_uuids": [claim.message_id],
        }
        user.edges.append(edge)
        user.claims.append((claim, edge["uuid"]))

    def _page(self, request: httpx.Request, items: list[dict[str, Any]]) -> httpx.Response:
        size = int(request.url.params.get("page_size", "50"))
        start = int(request.url.params.get("cursor") or 0)
        chunk = items[start : start + size]
        following = str(start + size) if start + size < len(items) else None
        return httpx.Response(200, json={"items": chunk, "next_cursor": following, "total_size": len(items)})

    def _search_edges(self, request: httpx.Request, body: dict[str, Any], graph: str) -> httpx.Response:
        user = self.users.get(graph)
        words = set(re.findall(r"\w+", body.get("query", "").lower()))
        scored = [(len(words & set(re.findall(r"\w+", e["fact"].lower()))), e) for e in (user.edges if user else [])]
        found = [e | {"score": float(s)} for s, e in sorted(scored, key=lambda p: -p[0]) if s]
        size = int(request.url.params.get("page_size", body.get("page_size", 10)))
        return httpx.Response(200, json={"items": found[:size], "next_cursor": None})

    def _list_nodes(self, request: httpx.Request, _: dict[str, Any], graph: str) -> httpx.Response:
        user = self.users.get(graph)
        return self._page(request, list(user.nodes.values()) if user else [])

    def _list_edges(self, request: httpx.Request, _: dict[str, Any], graph: str) -> httpx.Response:
        user = self.users.get(graph)
        edges = list(user.edges) if user else []
        if request.url.params.get("order_by") == "created_at" and request.url.params.get("order") == "desc":
            edges.reverse()
        return self._page(request, edges)
