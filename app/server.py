"""The server's composition root: Settings -> adapters -> domains -> the ASGI app.

This is cosmicpython's `bootstrap`: each `build_*` step makes one part and registers how
to close it on one `contextlib.AsyncExitStack`, so whatever step fails, everything opened
before it is closed, in reverse order; a clean shutdown unwinds the same stack. It
decides which adapter serves each port and lists them in `Services.adapters`, which
`avagenc serve` logs in one line at startup, so an operator can see at a glance what a
deployment is really talking to. The steps come from the builders beside it, shared with
the other roots; this module only puts the serving process together.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import importlib
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import asyncpg
import httpx
from fastapi import APIRouter, FastAPI

from agents import Knowledge, Model, Specialists, Toolbox, installed_roster
from agents.integrations.confirmations import prune_actions
from app.database import build_database, build_listener, build_migrations, build_pool, supervise_database
from app.keys import session_secret
from app.knowledge import KnowledgeParts, build_knowledge, start_learning
from app.model import build_model
from app.operations import build_tracing, read_levels_on_scrape
from app.reminders import ReminderParts, build_reminders, start_reminders
from app.specialists import build_specialists_on, build_toolbox, check_models
from app.turns import build_turns
from app.voice import (
    PRELOAD_JOIN_S,
    VoiceLater,
    build_voice,
    call_elsewhere_on,
    end_calls,
    hear_calls_elsewhere,
    live_call_on,
)
from app.wallet import build_ledger
from chat import (
    REVOKED_CHANNEL,
    Devices,
    EventHub,
    EventLog,
    Forgetting,
    KnownDeviceTokens,
    Limits,
    LiveCall,
    LocalTokens,
    LoggedPhoneCodes,
    Outbox,
    People,
    Phones,
    PhoneVerifier,
    Rate,
    Runs,
    Sessions,
    Sweeper,
    Threads,
    Tickets,
    TokenVerifier,
    Turns,
    TwilioSms,
    Wallet,
    drain_detached,
    no_wakes,
    parse_zone,
    settle_crash,
)
from chat.retention import Keep, Retention
from database import EmbeddedPostgres, Listener, TurnPool, holding, holding_own
from ledger import PostgresLedger
from settings import Settings
from web import WRONG_CODES_WINDOW_S, ChatApi, DeviceLimits, EdgeLimits, FirebaseWeb, WakeDoors, build_app
from web.doors import BROWSER_DOOR_PREFIX, DoorsStarting, LaterDoors, add_doors

# How long a recall waits for the person's newest messages to be learned first.
RECALL_CATCH_UP_S = 1.0
# The connections handed back without asyncpg's reset round trip, for users that run only
# single statements leaving no session state: the limiter, live-event reads (one per
# notification and person, chat.events), the sign-in checks every request makes (the
# session's revocation, the person) and the learning worker's check for anything new. Each
# holds one for about 0.1-1 ms, so eight serve thousands a second, more than a process
# serves requests.
SINGLE_STATEMENTS_POOL_MAX = 8

if TYPE_CHECKING:
    # Voice (Pipecat, speech engines) is imported only by the steps that build it.
    from voice import VoiceDoors


@dataclass
class Services:
    """Everything one process runs, built once on one stack and closed once by unwinding it
    (`running` owns the stack)."""

    settings: Settings
    dsn: str
    pool: asyncpg.Pool
    lock_pool: asyncpg.Pool
    hub: EventHub
    people: People
    threads: Threads
    runs: Runs
    turns: Turns
    wallet: Wallet
    ledger: PostgresLedger
    local_tokens: LocalTokens
    sessions: Sessions
    verifier: TokenVerifier
    tickets: Tickets
    # The call doors: built at startup (`doors`), or after it while text is served (`voice_later`).
    doors: VoiceDoors | None
    toolbox: Toolbox
    knowledge: KnowledgeParts
    reminders: ReminderParts | None = None
    embedded: EmbeddedPostgres | None = None
    adapters: dict[str, str] = field(default_factory=dict)
    specialists: Specialists | None = None
    # The thread loading the offline speech models at startup, if one was started.
    preload: threading.Thread | None = None
    # What settles an outage's leftovers while the server runs (chat.recovery).
    sweeper: Sweeper | None = None
    # Paired speakers (chat.devices).
    devices: Devices | None = None
    # The limits every instance shares (chat.limits), on connections of their own.
    limits: Limits | None = None
    # Verified phone numbers (chat.phones).
    phones: Phones | None = None
    # What prunes the records that grow with use (chat.retention).
    retention: Retention | None = None
    voice_later: VoiceLater | None = None
    # What a process's call doors are given once they exist (the devices, the phone webhook).
    wire_doors: Callable[[VoiceDoors], None] | None = None

    @property
    def voice(self) -> VoiceDoors:
        """The call doors (raises while they are still being built in the background)."""
        doors = self.doors if self.voice_later is None else self.voice_later.doors
        if doors is None:
            raise RuntimeError("the call doors are still starting")
        return doors

    def listening(self) -> None:
        """The server listens: what the first request would pay is paid now, and the call
        doors, when built in the background, begin loading."""
        warm_first_request()
        if self.voice_later is not None:
            self.voice_later.serving.set()

    async def end_calls(self) -> None:
        """Hang up every live call (the first step of shutdown, before connections close)."""
        if self.doors is not None:
            await end_calls(self.doors)
        elif self.voice_later is not None and self.voice_later.doors is not None:
            await end_calls(self.voice_later.doors)


def warm_first_request() -> None:
    """What the first request after a start would otherwise pay itself, done before it
    comes (about 20 ms of CPU with compiled modules, 60 without; bench/cold_start.py): the
    async backend FastAPI's dependencies import on first use, and the list of time zone
    names every request's zone is checked against (chat.zones)."""
    importlib.import_module("anyio._backends._asyncio")
    parse_zone("Asia/Jakarta")


def build_identity(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    pool: asyncpg.Pool,
    people: People,
    wallet: Wallet,
    local: LocalTokens,
) -> tuple[Sessions, TokenVerifier]:
    """Who signs people in: Firebase when a project is configured (firebase-admin, loaded
    only then), else our own local tokens; either way sessions can be signed out."""
    if not settings.firebase_project_id:
        sessions = Sessions(local, pool)
        return sessions, sessions
    from chat.firebase import FirebasePeople, FirebaseTokens

    tokens = FirebaseTokens(settings.firebase_project_id, certs_url=settings.firebase_certs_url)
    stack.callback(tokens.close)
    sessions = Sessions(tokens, pool)
    return sessions, FirebasePeople(tokens, sessions, people, on_signup=lambda person: wallet.grant_signup(person.id))


def build_devices(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    pool: asyncpg.Pool,
    listener: Listener,
    doors: Callable[[], VoiceDoors | None],
) -> Devices:
    """Paired speakers: their credentials, and every process forgetting a revoked device's
    token and ending its live call when the database says so (a missed notification is
    caught up by re-checking, and by forgetting every token remembered).
    `doors` gives the call doors, None while they are still being built (no call is live)."""
    # Tokens verified lately are trusted while a revocation would be heard (chat.device_tokens).
    known = KnownDeviceTokens(listening=functools.partial(listener.listening, REVOKED_CHANNEL))
    devices = Devices(
        pool,
        pairing_ttl_s=settings.device_pairing_ttl_s,
        devices_per_person_max=settings.devices_per_person_max,
        wrong_codes_max=settings.pairing_wrong_codes_max,
        known=known,
    )
    ending: set[asyncio.Task[None]] = set()

    def revoked(device_id: str | None) -> None:
        known.forget(device_id)  # None: listening (re)started, a revocation may have gone unheard
        voice = doors()
        if voice is None:
            return
        if device_id is None and not any(call.device_id for call in voice.registry.live()):
            return  # (re)started listening with no device call to re-check
        task = asyncio.create_task(voice.end_device_calls(device_id), name="device-revoked")
        ending.add(task)
        task.add_done_callback(ending.discard)

    listener.watch(REVOKED_CHANNEL, revoked)

    async def settle() -> None:
        for task in list(ending):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    stack.push_async_callback(settle)
    return devices


def build_phones(
    settings: Settings, stack: contextlib.AsyncExitStack, *, pool: asyncpg.Pool, tickets: Tickets
) -> tuple[Phones, str, Callable[[VoiceDoors], None]]:
    """Verified phone numbers, how their codes are sent (a text message through Twilio with
    its credentials, the server's log otherwise), and what gives the call doors Twilio's
    voice webhook over them once they exist."""
    token = settings.twilio_auth_token.get_secret_value() if settings.twilio_auth_token else None
    sender: PhoneVerifier
    if token and settings.twilio_account_sid and settings.twilio_from_number:
        sms = TwilioSms(
            account_sid=settings.twilio_account_sid,
            auth_token=token,
            from_number=settings.twilio_from_number,
            timeout_s=settings.integration_timeout_s,
        )
        stack.push_async_callback(sms.close)
        sender, adapter = sms, "TwilioSms"
    else:
        sender, adapter = LoggedPhoneCodes(), "LoggedPhoneCodes (the server's log)"
    phones = Phones(
        pool,
        sender,
        code_ttl_s=settings.phone_code_ttl_s,
        wrong_codes_max=settings.phone_wrong_codes_max,
        phones_per_person_max=settings.phones_per_person_max,
    )

    async def call_token(person_id: str) -> str:
        return await tickets.issue(person_id, door="phone")

    def wire(voice: VoiceDoors) -> None:
        from voice import PhoneWebhook  # voice is imported by now: its doors exist

        voice.phone_webhook = PhoneWebhook(
            auth_token=token,
            person_for=phones.person_for,
            call_token=call_token,
            first_call=phones.first_call,
            public_base_url=settings.public_base_url,
        )

    return phones, adapter, wire


def build_event_hub(listener: Listener) -> EventHub:
    return EventHub(listener)


async def freeze_startup_heap(services: Services) -> None:
    """A serving process's objects built at startup leave the garbage collector's sight:
    now, and again once the speech models have loaded.

    Why: the server holds about 150,000 tracked objects once it has started (Pipecat,
    FastAPI, the speech models' Python side), nearly all of them alive until it stops. The
    collector's full pass walks every one of them: 80-135 ms measured in the voice
    benchmark's server, one every few minutes of calls, stopping the event loop wherever
    it lands, in the middle of a person's wait for Ava's voice too. Frozen (`gc.freeze`),
    they are never walked again (a full pass after it: well under a millisecond); what
    the server makes later is collected as before. Only for a process that serves: objects
    frozen are never collected even when they become garbage, which is what startup's are
    not, but a test process building many servers would keep each one's cycles."""
    preload = services.preload
    if services.voice_later is not None:
        # The call doors are still being built: one pass once they are, not one now, which
        # would run before the server listens and delay its /readyz (bench/cold_start.py).
        await services.voice_later.ready.wait()
        preload = services.voice_later.preload
    gc.collect()
    gc.freeze()
    if preload is not None:
        await asyncio.to_thread(preload.join, PRELOAD_JOIN_S)
        gc.collect()
        gc.freeze()


def build_retention(settings: Settings, pool: asyncpg.Pool, reminders: ReminderParts) -> Retention:
    """Retention over the chat's records, with the wake notes' and risky actions' own pruners."""
    wake_keep_s = settings.wake_notes_keep_s
    return Retention(
        pool,
        keep=Keep(
            events_s=settings.events_keep_s,
            tool_records_s=settings.tool_records_keep_s,
            call_records_s=settings.call_records_keep_s,
        ),
        interval_s=settings.retention_interval_s,
        pruners={
            "wake_notes": lambda n: reminders.notes.prune_past(older_than_s=wake_keep_s, limit=n),
            "pending_actions": lambda n: prune_actions(pool, older_than_s=wake_keep_s, limit=n),
        },
    )


def start_sweeping(sweeper: Sweeper | Retention, stack: contextlib.AsyncExitStack) -> None:
    """A periodic loop (the sweep, retention) for as long as the server serves; stopped first at shutdown."""
    task = asyncio.create_task(sweeper.run(), name=type(sweeper).__name__.lower())

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    stack.push_async_callback(stop)


async def bootstrap(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    model: Model | None = None,
    migrate_first: bool = True,
    vendor_transport: httpx.AsyncBaseTransport | None = None,
    clock: Callable[[], datetime] | None = None,
    knowledge: Knowledge | None = None,
    deliver_wakes: bool = True,
    voice_in_background: bool = False,
) -> Services:
    """Build the whole server on `stack`; if any step raises, the caller's stack closes the rest."""
    # The room first: everything after reads the specialists from it; the previous room
    # comes back when the stack closes (a test's toy specialist leaves no trace).
    stack.enter_context(installed_roster(settings.agent_packages))
    check_models(settings)
    traces = build_tracing(settings, stack)
    dsn, embedded = await build_database(settings, stack)
    supervise_database(embedded, dsn, stack)
    pool = await build_pool(dsn, stack, size_max=settings.database_pool_max)
    lock_pool = await build_pool(dsn, stack, size_max=settings.turns_concurrent_max)
    # Connections handed back without asyncpg's reset round trip (database.pool.create_pool):
    # the limiter's (chat.limits), and the people's and sessions' single statements below.
    single = await build_pool(dsn, stack, size_max=SINGLE_STATEMENTS_POOL_MAX, single_statements=True)
    limits = Limits(single)
    if migrate_first:
        await build_migrations(pool)
    chosen = build_model(settings, stack, model)
    # The stores a turn writes through run its statements on the connection that holds the
    # person's thread lock while the turn runs (database.pool.TurnPool), on the pool otherwise.
    # Knowledge stays on the plain pool: its lookup is cut short by a timeout.
    turn_pool = TurnPool(pool).as_pool()
    threads, runs = Threads(turn_pool, lock_pool=lock_pool, hold=holding), Runs(turn_pool)
    specialists = build_specialists_on(
        settings, stack, pool=turn_pool, threads=threads, vendor_transport=vendor_transport
    )
    # Each model call's usage is kept on disk from its return until its charge is written;
    # closed after the detached charges below have finished (chat.outbox).
    outbox = Outbox(settings.avagenc_home / "outbox")
    stack.callback(outbox.close)
    ledger, wallet = build_ledger(settings, turn_pool, runs, outbox=outbox)
    memory = build_knowledge(settings, stack, pool=pool, threads=threads, chosen=knowledge, wallet=wallet, reads=single)
    # Stopped after the detached turns below have finished, so their events are still heard.
    listener = await build_listener(dsn, stack)
    reminder_parts = build_reminders(settings, pool=pool, listener=listener, clock=clock)
    learning = memory.learning
    toolbox = build_toolbox(
        specialists=specialists,
        knowledge=memory.knowledge,
        reminders=reminder_parts.reminders,
        # A fact said a moment ago is learned before Ava recalls (docs/agents.md#memory), within a second.
        catch_up=lambda person_id: learning.catch_up(person_id, timeout_s=RECALL_CATCH_UP_S),
    )
    turns = build_turns(
        settings,
        threads=threads,
        runs=runs,
        wallet=wallet,
        model=chosen,
        toolbox=toolbox,
        knowledge=memory,
        clock=clock,
        apart=functools.partial(holding_own, pool),
    )
    # Turns and charges that outlived their requests finish before the listener and pools close.
    stack.push_async_callback(drain_detached, timeout_s=settings.shutdown_grace_s)
    hub = build_event_hub(listener)
    people = People(single, default_time_zone=settings.default_time_zone)
    # The server's sweep: what a crash left, settled before serving; then, every few
    # seconds, what an outage left while it serves (chat.recovery).
    sweeper = Sweeper(
        threads=threads,
        runs=runs,
        wallet=wallet,
        turns=turns,
        people=people,
        pool=pool,
        interval_s=settings.sweep_interval_s,
    )
    await settle_crash(sweeper)
    start_sweeping(sweeper, stack)
    retention = build_retention(settings, pool, reminder_parts)
    start_sweeping(retention, stack)
    await start_learning(memory, hub, stack)
    local_tokens = LocalTokens(session_secret(settings), ttl_s=settings.session_ttl_s)
    sessions, verifier = build_identity(settings, stack, pool=single, people=people, wallet=wallet, local=local_tokens)
    tickets = Tickets(pool)
    # `avagenc serve` builds the call doors after it serves text (app.voice.VoiceLater); they
    # close at this place in the shutdown either way.
    voice: VoiceDoors | None = None
    voice_later: VoiceLater | None = None
    preload: threading.Thread | None = None

    def doors_now() -> VoiceDoors | None:
        return voice if voice_later is None else voice_later.doors

    devices = build_devices(settings, stack, pool=pool, listener=listener, doors=doors_now)
    phones, phone_codes, wire_phones = build_phones(settings, stack, pool=pool, tickets=tickets)

    def wire_doors(doors: VoiceDoors) -> None:
        doors.devices = devices
        wire_phones(doors)

    live_call: LiveCall
    if voice_in_background:
        voice_later = VoiceLater()
        stack.push_async_callback(voice_later.close)
        speech, live_call = voice_later.speech, voice_later.live_call
    else:
        voice, speech, preload = build_voice(
            settings, stack, dsn=dsn, people=people, verifier=verifier, tickets=tickets, turns=turns, wallet=wallet
        )
        wire_doors(voice)
        live_call = live_call_on(voice)
    # Started last, stopped first: deliveries in flight finish before calls end and pools close.
    # A scenario run (avagenc eval) keeps its notes pending: its clock is not the wall's,
    # so a note due in the scenario's future may already be due by the wall.
    # A note for a person on a call another process holds is said there (app.voice).
    hear_calls_elsewhere(doors_now, listener, stack)
    if deliver_wakes:
        start_reminders(
            reminder_parts,
            turns=turns,
            people=people,
            pool=pool,
            live_call=live_call,
            call_elsewhere=call_elsewhere_on(doors_now, pool),
        )
    stack.push_async_callback(reminder_parts.close, timeout_s=settings.shutdown_grace_s)
    # Each pool's label is its name in app/server.py (docs/operations.md): the single-statement
    # pool serves the limiter, live-event reads and sign-in checks, not the limiter alone.
    pools = {"statements": pool, "turns": lock_pool, "single_statements": single}
    read_levels_on_scrape(stack, pools=pools, doors=doors_now, notes=reminder_parts.notes)
    adapters = {
        "database": "embedded PostgreSQL" if embedded else "DATABASE_URL",
        "model": type(chosen).__name__,
        # The sandbox always; "+ the live adapter" where the vendor's credentials are set.
        **specialists.adapters(),
        "identity": "FirebaseTokens" if settings.firebase_project_id else "LocalTokens (revocable sessions)",
        "speech": speech,
        "phone codes": phone_codes,
        "knowledge": memory.adapter,
        **reminder_parts.adapters,
        "traces": traces,
    }
    return Services(
        settings=settings,
        dsn=dsn,
        pool=pool,
        lock_pool=lock_pool,
        hub=hub,
        people=people,
        threads=threads,
        runs=runs,
        turns=turns,
        wallet=wallet,
        ledger=ledger,
        local_tokens=local_tokens,
        sessions=sessions,
        verifier=verifier,
        tickets=tickets,
        doors=voice,
        voice_later=voice_later,
        toolbox=toolbox,
        knowledge=memory,
        reminders=reminder_parts,
        embedded=embedded,
        adapters=adapters,
        specialists=specialists,
        preload=preload,
        sweeper=sweeper,
        devices=devices,
        limits=limits,
        phones=phones,
        retention=retention,
        wire_doors=wire_doors,
    )


def firebase_web(settings: Settings) -> FirebaseWeb | None:
    """What the web app is told about Firebase sign-in, when Firebase signs people in."""
    if not settings.firebase_project_id:
        return None
    return FirebaseWeb(
        project_id=settings.firebase_project_id,
        api_key=settings.firebase_api_key,
        auth_url=settings.firebase_auth_url,
        token_url=settings.firebase_token_url,
        providers=tuple(settings.firebase_providers),
    )


def serve_app(services: Services) -> FastAPI:
    """The ASGI app over what `bootstrap` built: the HTTP edge with the call doors in it (or
    added once built, when they are built in the background)."""
    settings = services.settings
    api = ChatApi(
        people=services.people,
        verifier=services.verifier,
        # Local sign-in only where Firebase does not sign people in.
        local_tokens=None if settings.firebase_project_id else services.local_tokens,
        sessions=services.sessions,
        tickets=services.tickets,
        turns=services.turns,
        threads=services.threads,
        # Reset-free connections: a read is one statement (chat.events).
        event_log=EventLog(services.limits.pool if services.limits is not None else services.pool),
        hub=services.hub,
        sse_streams_per_person_max=settings.sse_streams_per_person_max,
        sse_keepalive_s=settings.sse_keepalive_s,
        limits=services.limits if services.limits is not None else Limits(services.pool),
        edge_limits=EdgeLimits(
            sign_ins_per_address=Rate(max=settings.sign_ins_per_address_max, window_s=settings.sign_in_window_s),
            runs_per_person=Rate(max=settings.runs_per_person_per_minute_max, window_s=60),
            runs_in_flight_per_person_max=settings.runs_in_flight_per_person_max,
        ),
        on_signup=lambda person: services.wallet.grant_signup(person.id),
        firebase_web=firebase_web(settings),
    )
    parts = services.reminders
    forgetting = Forgetting(
        pool=services.pool,
        threads=services.threads,
        learning=services.knowledge.learning,
        knowledge=services.knowledge.knowledge,
        cancel_wakes=parts.reminders.cancel_pending if parts is not None else no_wakes,
        settle=services.wallet.settle_uncharged,
        wait_s=settings.thread_wait_s,
        timeout_s=settings.knowledge_timeout_s,
    )
    wakes = None
    if parts is not None and parts.delivery is not None:
        wakes = WakeDoors(reminders=parts.reminders, delivery=parts.delivery, gate=parts.gate)
    app = build_app(
        api,
        pool=services.pool,
        wallet=services.wallet,
        admin_api_key=settings.admin_api_key.get_secret_value() if settings.admin_api_key else None,
        knowledge=services.knowledge.knowledge,
        forgetting=forgetting,
        knowledge_timeout_s=settings.knowledge_timeout_s,
        wakes=wakes,
        connections=services.specialists.connections if services.specialists is not None else None,
        devices=services.devices,
        device_limits=DeviceLimits(
            pairing_per_address=Rate(max=settings.pairings_per_address_max, window_s=settings.pairing_window_s),
            wrong_codes_per_person=Rate(max=settings.pairing_wrong_codes_max, window_s=WRONG_CODES_WINDOW_S),
        ),
        phones=services.phones,
        phone_codes_per_person=Rate(max=settings.phone_codes_per_person_per_hour_max, window_s=3600),
        phone_codes_per_address=Rate(max=settings.phone_codes_per_address_per_hour_max, window_s=3600),
        request_time_max_s=settings.request_time_max_s,
        metrics_enabled=settings.metrics_enabled,
        first_product_routes=settings.first_product_routes,
        metrics_token=settings.metrics_token.get_secret_value() if settings.metrics_token else None,
    )
    later = services.voice_later
    if later is None:
        add_doors(app, *_call_doors(services.voice))
        add_doors(app, *_browser_door(services.voice))
        return app
    # Outermost, so it sees every request: a call waits for its door, and until they begin
    # loading, the requests in flight are counted for the loading's quiet spell.
    app.add_middleware(
        DoorsStarting,
        ready=later.calls_ready,
        open_=lambda: later.doors is not None,
        traffic=later.traffic,
        later=[LaterDoors(BROWSER_DOOR_PREFIX, later.ready, lambda: later.browser, later.browser_wanted)],
    )
    later.start(
        lambda stack: build_voice(
            settings,
            stack,
            dsn=services.dsn,
            people=services.people,
            verifier=services.verifier,
            tickets=services.tickets,
            turns=services.turns,
            wallet=services.wallet,
        ),
        functools.partial(_attach_doors, app, services.wire_doors),
        lambda doors: add_doors(app, *_browser_door(doors)),
    )
    return app


def _attach_doors(app: FastAPI, wire: Callable[[VoiceDoors], None] | None, doors: VoiceDoors) -> None:
    """Doors built in the background: given what they need, then their routes added."""
    if wire is not None:
        wire(doors)
    add_doors(app, *_call_doors(doors))


def _call_doors(doors: VoiceDoors) -> tuple[list[APIRouter], list[type[Exception]]]:
    """The call routes over `doors` but the browser's, and the errors they raise (voice is
    imported by now)."""
    from voice import VoiceError, build_voice_router

    return [build_voice_router(doors)], [VoiceError]


def _browser_door(doors: VoiceDoors) -> tuple[list[APIRouter], list[type[Exception]]]:
    """The browser's WebRTC call route over `doors` (its errors are voice's, added with the others)."""
    from voice.webrtc import build_webrtc_router

    return [build_webrtc_router(doors)], []


@contextlib.asynccontextmanager
async def running(
    settings: Settings,
    *,
    model: Model | None = None,
    vendor_transport: httpx.AsyncBaseTransport | None = None,
    clock: Callable[[], datetime] | None = None,
    knowledge: Knowledge | None = None,
    deliver_wakes: bool = True,
    voice_in_background: bool = False,
) -> AsyncIterator[tuple[Services, FastAPI]]:
    """Services and app for one process's lifetime (used by the server, tests, benchmarks and eval)."""
    async with contextlib.AsyncExitStack() as stack:
        services = await bootstrap(
            settings,
            stack,
            model=model,
            vendor_transport=vendor_transport,
            clock=clock,
            knowledge=knowledge,
            deliver_wakes=deliver_wakes,
            voice_in_background=voice_in_background,
        )
        yield services, serve_app(services)
