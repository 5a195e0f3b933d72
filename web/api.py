"""The text API (docs/http.md): sign-in, the person, messages and live events.

(No `from __future__ import annotations` here: FastAPI must evaluate the dependency
annotations of the closures below, which live in no module namespace.)

Handlers only translate HTTP to domain calls; validation lives in the schemas and the
domain, and errors become problem+json in the exception handlers web.app registers.
Every query is scoped to the authenticated person: no id from a path or body can reach
another person's data.
"""

import asyncio
import functools
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from agents import AGENTS, Channel
from chat import (
    EVENTS_PAGE,
    EventHub,
    EventLog,
    Lease,
    Limits,
    LocalTokens,
    People,
    Person,
    Rate,
    RateLimited,
    Sessions,
    SignInDisabled,
    Threads,
    Tickets,
    TokenVerifier,
    TooManyStreams,
    TurnResult,
    Turns,
    Unauthorized,
    parse_zone,
    run_detached,
)
from telemetry import metrics
from web.edge import problem_responses
from web.schemas import (
    AgentsOut,
    LocalSignIn,
    MessagesPage,
    PersonOut,
    PostMessage,
    SignedIn,
    SignInMethods,
    TicketOut,
    TurnOut,
)

PAGE_MAX = 200
SEQ_MAX = 2**63 - 1  # a bigint: a cursor past it names nothing, and PostgreSQL refuses it
_EVENT_ID = re.compile(r"[0-9]{1,18}")
# A bearer token in the live stream's address: a Firebase ID token (chat/firebase.py) is
# far longer than our own, and EventSource cannot send it as a header.
ACCESS_TOKEN_CHARS_MAX = 4096


@dataclass(frozen=True, slots=True)
class EdgeLimits:
    """The limits the text API applies (docs/http.md#limits), from the settings."""

    sign_ins_per_address: Rate
    runs_per_person: Rate
    runs_in_flight_per_person_max: int
    # A run in flight holds its place at most this long if its process dies mid-run.
    run_lease_s: float = 900.0


@dataclass(frozen=True, slots=True)
class FirebaseWeb:
    """How the web app signs in where Firebase does (docs/webapp.md#firebase-sign-in): the
    REST services the browser talks to itself. The server only verifies what they issue."""

    project_id: str
    api_key: str | None
    auth_url: str
    token_url: str
    providers: tuple[str, ...]

    def origins(self) -> tuple[str, ...]:
        """The addresses the app's page must be allowed to reach (its CSP connect-src)."""
        return tuple(dict.fromkeys((self.auth_url, self.token_url)))


@dataclass(frozen=True, slots=True)
class ChatApi:
    """Everything the text API needs, built by the composition root."""

    people: People
    verifier: TokenVerifier
    local_tokens: LocalTokens | None
    sessions: Sessions
    tickets: Tickets
    turns: Turns
    threads: Threads
    event_log: EventLog
    hub: EventHub
    sse_streams_per_person_max: int
    sse_keepalive_s: float
    limits: Limits
    edge_limits: EdgeLimits
    on_signup: Callable[[Person], Awaitable[None]] | None = None
    firebase_web: FirebaseWeb | None = None

    @property
    def stream_lease_s(self) -> float:
        """How long a live-event stream's place outlives a process that died holding it;
        an open stream renews it at every keep-alive."""
        return max(3 * self.sse_keepalive_s, 30.0)

    async def limited_turn(
        self, person: Person, *, text: str, channel: Channel, zone: ZoneInfo, client_id: str | None = None
    ) -> TurnResult:
        """A person's message through the edge's limits (runs per minute, runs in flight),
        then the turn, for every door that posts one (the v1 API and the first product's)."""
        limits = self.edge_limits
        await self.limits.hit(f"runs:{person.id}", limits.runs_per_person, what="messages")
        busy = RateLimited(
            f"At most {limits.runs_in_flight_per_person_max} messages in flight at once.", retry_after_s=5
        )
        async with self.limits.lease(
            f"runs_in_flight:{person.id}",
            cap=limits.runs_in_flight_per_person_max,
            ttl_s=limits.run_lease_s,
            refused=busy,
        ):
            # The turn runs as its own task: a client that disconnects does not cancel the
            # runs halfway, so the thread and the usage records stay whole.
            result = await run_detached(
                self.turns.post(person, text=text, channel=channel, zone=zone, client_id=client_id)
            )
        await self.people.learn_language(person, text)  # the language their calls are heard in
        return result


def client_address(request: Request) -> str:
    """The address limits count by: the peer (uvicorn puts a trusted proxy's forwarded
    address here when told to trust it)."""
    return request.client.host if request.client is not None else "unknown"


def _bearer(authorization: str | None) -> str:
    if not authorization:
        raise Unauthorized("Send Authorization: Bearer <token>.")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Send Authorization: Bearer <token>.")
    return token.strip()


async def person_from(api: ChatApi, token: str) -> Person:
    person = await api.people.get(await api.verifier.verify(token))
    if person is None:
        raise Unauthorized("This account no longer exists.")
    return person


async def _ticket_holder(api: ChatApi, ticket: str) -> Person:
    person = await api.people.get(await api.tickets.redeem(ticket))
    if person is None:
        raise Unauthorized("This account no longer exists.")
    return person


def current_person_dependency(api: ChatApi) -> Callable[..., Awaitable[Person]]:
    """A FastAPI dependency: the person named by the bearer token, or 401."""

    async def current_person(authorization: Annotated[str | None, Header()] = None) -> Person:
        return await person_from(api, _bearer(authorization))

    return current_person


def current_zone_dependency(
    api: ChatApi, current_person: Callable[..., Awaitable[Person]]
) -> Callable[..., AsyncIterator[ZoneInfo]]:
    """A FastAPI dependency: the request's `time-zone` header, else the profile's. The
    header's zone is remembered only once the request has succeeded: a refused request
    (bad body, empty wallet) changes nothing."""

    async def current_zone(
        person: Annotated[Person, Depends(current_person)],
        time_zone: Annotated[str | None, Header(alias="time-zone")] = None,
    ) -> AsyncIterator[ZoneInfo]:
        if time_zone is None:
            yield parse_zone(person.time_zone)
            return
        zone = parse_zone(time_zone)
        yield zone  # an error raised by the request comes back here, and nothing is saved
        if zone.key != person.time_zone:
            await api.people.remember_time_zone(person.id, zone.key)

    return current_zone


def build_router(api: ChatApi) -> APIRouter:
    router = APIRouter(prefix="/v1")
    current_person = current_person_dependency(api)
    current_zone = current_zone_dependency(api, current_person)

    @router.get("/auth/methods", response_model=SignInMethods, tags=["identity"])
    async def sign_in_methods() -> dict[str, Any]:
        """How to sign in here: by name (local), or with Firebase (its REST services and the
        methods offered), so an app needs no configuration of its own."""
        found = api.firebase_web
        firebase = None
        if found is not None:
            firebase = {
                "project_id": found.project_id,
                "api_key": found.api_key,
                "auth_url": found.auth_url,
                "token_url": found.token_url,
                "providers": list(found.providers),
            }
        return {"local": api.local_tokens is not None, "firebase": firebase}

    @router.post(
        "/auth/local", response_model=SignedIn, tags=["identity"], responses=problem_responses(400, 404, 413, 422, 429)
    )
    async def sign_in_local(body: LocalSignIn, request: Request) -> dict[str, Any]:
        """Local sign-in (single-machine mode): a display name in, a session token out."""
        if api.local_tokens is None:
            raise SignInDisabled("This server signs people in with Firebase.")
        await api.limits.hit(
            f"sign_in:{client_address(request)}", api.edge_limits.sign_ins_per_address, what="sign-ins from one address"
        )
        person, created = await api.people.sign_in_local(body.name)
        if created and api.on_signup is not None:
            await api.on_signup(person)
        return {"token": api.local_tokens.issue(person.id), "user": person.as_json()}

    @router.post("/auth/sign-out", status_code=204, tags=["identity"], responses=problem_responses(401, 422))
    async def sign_out(authorization: Annotated[str | None, Header()] = None) -> Response:
        """End this session on every instance: its token is refused from now on."""
        await person_from(api, _bearer(authorization))
        await api.sessions.sign_out(_bearer(authorization))
        return Response(status_code=204)

    @router.post("/tickets", response_model=TicketOut, tags=["identity"], responses=problem_responses(401, 422))
    async def ticket(person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        """A single-use ticket, good for a minute, to open live events (`?ticket=`) or the
        speaker socket by URL: the URL a log keeps then names no session."""
        return {"ticket": await api.tickets.issue(person.id), "expires_in_s": int(api.tickets.ttl_s)}

    @router.get("/me", response_model=PersonOut, tags=["identity"], responses=problem_responses(401, 422))
    async def me(person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        return person.as_json()

    @router.get("/agents", response_model=AgentsOut, tags=["thread"], responses=problem_responses(401, 422))
    async def agents(_person: Annotated[Person, Depends(current_person)]) -> dict[str, Any]:
        """The team in the room, Ava first: whom `@` can name (the app's autocomplete)."""
        return {
            "agents": [
                {"name": a.name, "display_name": a.display_name, "role": a.role, "domain": a.domain}
                for a in AGENTS.values()
            ]
        }

    @router.post(
        "/messages",
        response_model=TurnOut,
        tags=["thread"],
        responses=problem_responses(400, 401, 402, 413, 422, 429, 503),
    )
    async def post_message(
        body: PostMessage,
        person: Annotated[Person, Depends(current_person)],
        zone: Annotated[ZoneInfo, Depends(current_zone)],
    ) -> dict[str, Any]:
        """Write a message to the person's thread, run whoever it is for, return what was written."""
        result = await api.limited_turn(person, text=body.text, channel="text", zone=zone, client_id=body.client_id)
        return result.as_json()

    @router.get("/messages", response_model=MessagesPage, tags=["thread"], responses=problem_responses(401, 422))
    async def list_messages(
        person: Annotated[Person, Depends(current_person)],
        before: Annotated[int | None, Query(ge=0, le=SEQ_MAX)] = None,
        after: Annotated[int | None, Query(ge=0, le=SEQ_MAX)] = None,
        limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 50,
    ) -> dict[str, Any]:
        """The thread, paged by seq: the newest `limit` before `before`, or the oldest after `after`."""
        rows = await api.threads.page(person.id, before=before, after=after, limit=limit + 1)
        has_more = len(rows) > limit
        rows = (rows[:limit] if after is not None else rows[-limit:]) if has_more else rows
        return {"messages": [m.as_json() for m in rows], "has_more": has_more}

    @router.get(
        "/events",
        tags=["thread"],
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}, **problem_responses(401, 422, 429)},
    )
    async def events(
        authorization: Annotated[str | None, Header()] = None,
        last_event_id: Annotated[str | None, Header(alias="last-event-id")] = None,
        access_token: Annotated[str | None, Query(max_length=ACCESS_TOKEN_CHARS_MAX)] = None,
        ticket: Annotated[str | None, Query(max_length=300)] = None,
        after: Annotated[int | None, Query(ge=0, le=SEQ_MAX)] = None,
    ) -> StreamingResponse:
        """Server-Sent Events: message, run.started, run.finished, wallet.changed, …

        Browsers' EventSource cannot set headers: `ticket` (from POST /v1/tickets, single
        use) opens the stream instead; `access_token` still does, but its URL is a session.
        Resumes after `Last-Event-ID` (or `after`); otherwise starts with new events."""
        if ticket is not None:
            person = await _ticket_holder(api, ticket)
        else:
            person = await person_from(api, access_token if access_token else _bearer(authorization))
        cursor = after
        if last_event_id is not None and _EVENT_ID.fullmatch(last_event_id):
            cursor = int(last_event_id)
        if cursor is None:
            cursor = await api.event_log.latest_id(person.id)
        # The place is taken last, once nothing else can refuse the stream, and given back
        # when the stream ends; one count for every instance (chat.limits).
        lease = await api.limits.take(
            f"streams:{person.id}",
            cap=api.sse_streams_per_person_max,
            ttl_s=api.stream_lease_s,
            refused=TooManyStreams(f"At most {api.sse_streams_per_person_max} live connections per person."),
        )
        return _LeasedStream(
            _events(api, person.id, cursor, lease),
            release=functools.partial(api.limits.release, lease),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return router


class _LeasedStream(StreamingResponse):
    """A live-event stream that gives its place back the moment it ends, however it ends.

    A generator's own `finally` is not enough: when the client goes away, Starlette stops
    iterating the generator without closing it, and it would hold its place until the
    garbage collector found it."""

    def __init__(self, content: AsyncGenerator[str], *, release: Callable[[], Awaitable[None]], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._content = content
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            with metrics.sse_clients.tracking():
                await super().__call__(scope, receive, send)
        finally:
            await self._content.aclose()
            await self._release()


async def _events(api: ChatApi, person_id: str, cursor: int, lease: Lease) -> AsyncGenerator[str]:
    renewed_at = asyncio.get_running_loop().time()
    async with api.hub.subscribe(person_id) as wake:
        yield "retry: 2000\n\n"
        while True:
            if asyncio.get_running_loop().time() - renewed_at > lease.ttl_s / 3:
                await lease.renew()
                renewed_at = asyncio.get_running_loop().time()
            wake.clear()
            # The person's other streams, woken by the same notification, share this read.
            batch = await api.hub.read(api.event_log, person_id, cursor)
            for event in batch:
                cursor = event.id
                yield f"id: {event.id}\nevent: {event.type}\ndata: {json.dumps(event.data, ensure_ascii=False)}\n\n"
            # A full page may have more behind it. A shorter one held every event committed
            # when it was read, and any later one notifies after its commit, which sets `wake`
            # (cleared before the read): waiting loses nothing and saves a read that finds none.
            if len(batch) >= EVENTS_PAGE:
                continue
            try:
                async with asyncio.timeout(api.sse_keepalive_s):
                    await wake.wait()
            except TimeoutError:
                yield ": keep-alive\n\n"
