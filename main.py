"""The composition root: Settings -> adapters -> domains -> the ASGI app.

This is cosmicpython's `bootstrap`: each `build_*` function makes one part and registers
how to close it on one `contextlib.AsyncExitStack`, so whatever step fails, everything
opened before it is closed, in reverse order; a clean shutdown unwinds the same stack.
It is the only place that decides which adapter serves each port, and it says so in one
log line at startup, so an operator can see at a glance what a deployment is really
talking to. The command line (`cli.py`) and the tests build from the pieces here, each
only what it needs.
"""

from __future__ import annotations

import os

# Pipecat logs through loguru at DEBUG from the moment it is imported (below, through
# voice); the product's own logging is the standard library's. Unless asked otherwise,
# only Pipecat's warnings reach the console.
os.environ.setdefault("LOGURU_LEVEL", "WARNING")

import asyncio
import contextlib
import functools
import gc
import hashlib
import hmac
import logging
import secrets
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import asyncpg
import httpx
from fastapi import APIRouter, FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from agents import (
    AGENTS,
    Channel,
    Knowledge,
    LinkError,
    LocalKnowledge,
    Model,
    OfflineModel,
    RuleExtractor,
    RunContext,
    SandboxHome,
    Specialists,
    TokenCipher,
    Tool,
    Toolbox,
    ToolSpec,
    VendorSettings,
    build_specialists,
    handoff_tools,
    installed_roster,
    parse_spoken,
    recall_tools,
    session_facts,
    specialist_packages,
    specialist_settings_models,
)
from agents.ava.wakes import wake_tools
from chat import (
    DATABASE_GONE,
    BodyLimit,
    ChatApi,
    ChatError,
    EventHub,
    EventLog,
    FactLookup,
    Forgetting,
    Learning,
    LocalTokens,
    People,
    PostgresEvents,
    Runs,
    Threads,
    Turns,
    Wallet,
    build_callback_router,
    build_integrations_router,
    build_knowledge_router,
    build_reminders_router,
    build_router,
    build_wallet_router,
    drain_detached,
    no_wakes,
    on_chat_error,
    on_database_gone,
    on_domain_error,
    on_http_error,
    on_ledger_error,
    on_unexpected,
    on_validation_error,
    problem,
    problem_responses,
    publish_reminder_delivered,
    run_detached,
)
from database import (
    EmbeddedPostgres,
    Listener,
    TurnPool,
    apply_migrations,
    create_pool,
    holding,
    holding_own,
    migration_sources,
)
from ledger import LedgerError, PostgresLedger, PriceBook, VoicePriceBook
from reminders import (
    CallbackGate,
    CallbackSigner,
    Delivery,
    DeliveryLimits,
    EmbeddedQueue,
    IdTokenVerifier,
    LocalPush,
    Note,
    Notes,
    Push,
    Queue,
    ReminderError,
    Reminders,
    Wake,
    Woken,
)
from scenarios import RecordingModel, ScenarioClock
from settings import Settings

if TYPE_CHECKING:
    # Voice (Pipecat, speech engines) is imported only by the steps that build it, so a
    # command that needs the database alone never loads it.
    from voice import Call, Engines, VoiceDoors

log = logging.getLogger("avagenc")

# How long shutdown waits for the Whisper preload thread: a native thread still loading
# the model when the interpreter exits aborts the process (exit 134).
_PRELOAD_JOIN_S = 60.0
# How long live calls get for Ava's goodbye at shutdown before they are cut.
_CALLS_END_S = 10.0


def session_secret(settings: Settings) -> bytes:
    """The HMAC key for local tokens: from settings, or generated once and kept on disk."""
    if settings.session_secret is not None:
        return settings.session_secret.get_secret_value().encode()
    path = settings.avagenc_home / "session_secret"
    if not path.exists():
        settings.avagenc_home.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return path.read_text().strip().encode()


def choose_engines(
    settings: Settings, stack: contextlib.AsyncExitStack
) -> tuple[Engines, str, threading.Thread | None]:
    """Speech engines for calls: Google Cloud with credentials, offline otherwise; and the
    thread loading the offline models, when one was started."""
    from voice import Engines
    from voice.prosody import emotion_to_ssml, strip_stray_tags

    transforms = [("*", emotion_to_ssml), ("*", strip_stray_tags)]
    if settings.google_speech_credentials is not None:
        from voice.engines.google import SsmlGoogleHttpTTSService, google_stt

        path = str(settings.google_speech_credentials)
        return (
            Engines(
                stt=lambda: google_stt(path, settings.google_stt_languages),
                tts=lambda: SsmlGoogleHttpTTSService(
                    credentials_path=path, voice=settings.google_tts_voice, text_transforms=transforms
                ),
            ),
            "Google Cloud STT + TTS",
            None,
        )
    from voice.engines.offline import offline_engines, preload_offline

    preload: threading.Thread | None = None
    if settings.voice_preload:
        preload = threading.Thread(
            target=preload_offline, args=(settings.voice_tts,), name="speech-preload", daemon=True
        )
        preload.start()
        stack.push_async_callback(asyncio.to_thread, preload.join, _PRELOAD_JOIN_S)
    engines, speech = offline_engines(
        tts=settings.voice_tts,
        transforms=transforms,
        models_dir=settings.avagenc_home / "models",
        stt_workers=settings.voice_stt_workers,
    )
    return engines, speech, preload


def choose_model(settings: Settings) -> Model:
    if settings.gemini_api_key is not None:
        from agents.gemini import GeminiModel  # the SDK loads only when it is used

        return GeminiModel(
            api_key=settings.gemini_api_key.get_secret_value(),
            timeout_s=settings.gemini_timeout_s,
            retries_max=settings.gemini_retries_max,
        )
    return OfflineModel()


def person_said(threads: Threads) -> Callable[[str], Awaitable[tuple[str, datetime] | None]]:
    """The person's latest message and when it came: what a confirmation is checked against."""

    async def latest(person_id: str) -> tuple[str, datetime] | None:
        recent = await threads.page(person_id, before=None, after=None, limit=20)
        said = [m for m in recent if m.author == "human"]
        return (said[-1].text, said[-1].created_at) if said else None

    return latest


def integration_key(settings: Settings) -> bytes:
    """The Fernet key sealing refresh tokens: from settings, or generated once and kept on disk."""
    if settings.integration_token_key is not None:
        return settings.integration_token_key.get_secret_value().encode()
    path = settings.avagenc_home / "integration_key"
    if not path.exists():
        settings.avagenc_home.mkdir(parents=True, exist_ok=True)
        path.write_bytes(TokenCipher.new_key())
        path.chmod(0o600)
    return path.read_bytes().strip()


def specialist_settings(settings: Settings) -> dict[str, VendorSettings]:
    """Each installed specialist's own settings, read once here (agents/specialist.py)."""
    chosen: dict[str, VendorSettings] = {}
    for name, model in specialist_settings_models().items():
        chosen[name] = settings.for_specialist(name, model)
    return chosen


def check_models(settings: Settings) -> None:
    """GEMINI_MODELS may only name agents in the room: a misspelt handle would silently
    leave that agent on the default model."""
    unknown = sorted(set(settings.gemini_models) - set(AGENTS))
    if unknown:
        raise ValueError(f"GEMINI_MODELS names {', '.join(unknown)}, not in the room ({', '.join(AGENTS)})")


def build_specialists_on(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    pool: asyncpg.Pool,
    threads: Threads,
    vendor_transport: httpx.AsyncBaseTransport | None,
) -> Specialists:
    """The specialists' sandboxes, live adapters (where credentials are set) and linking,
    over one HTTP client for every vendor, closed with the stack."""
    http = httpx.AsyncClient(
        transport=vendor_transport, timeout=settings.integration_timeout_s, limits=httpx.Limits(max_connections=50)
    )
    stack.push_async_callback(http.aclose)
    return build_specialists(
        pool=pool,
        http=http,
        settings=specialist_settings(settings),
        redirect_base_url=settings.oauth_redirect_base_url,
        token_key=integration_key(settings),
        # The OAuth state key is derived from the session secret, apart from it by its label.
        state_key=hmac.new(session_secret(settings), b"oauth-state", hashlib.sha256).digest(),
        person_said=person_said(threads),
    )


@dataclass
class KnowledgeParts:
    """Semantic memory as this process runs it: the port, the ingestion worker, the session lookup."""

    knowledge: Knowledge
    learning: Learning
    adapter: str

    @property
    def facts(self) -> FactLookup:
        async def lookup(*, person_id: str, text: str) -> list[str]:
            return await session_facts(self.knowledge, person_id=person_id, text=text)

        return lookup


def build_knowledge(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    pool: asyncpg.Pool,
    threads: Threads | None = None,
    chosen: Knowledge | None = None,
) -> KnowledgeParts:
    """Zep with a key; otherwise the local graph, read by Gemini with a key and by rules
    without. `chosen` (a test's) serves the port instead. The worker starts later
    (`start_learning`), once the event hub is up."""
    knowledge: Knowledge
    if chosen is not None:
        knowledge, adapter = chosen, type(chosen).__name__
    elif settings.zep_api_key is not None:
        from agents.knowledge.zep import ZepKnowledge  # the SDK loads only when it is used

        zep = ZepKnowledge(
            api_key=settings.zep_api_key.get_secret_value(),
            base_url=settings.zep_base_url,
            timeout_s=settings.zep_timeout_s,
        )
        stack.push_async_callback(zep.aclose)
        knowledge, adapter = zep, "ZepKnowledge"
    elif settings.gemini_api_key is not None:
        from agents.knowledge.gemini import GeminiExtractor

        extractor = GeminiExtractor(
            api_key=settings.gemini_api_key.get_secret_value(),
            model=settings.gemini_model_knowledge or settings.gemini_model,
            timeout_s=settings.gemini_timeout_s,
        )
        stack.push_async_callback(extractor.aclose)
        knowledge, adapter = LocalKnowledge(pool, extractor=extractor), "LocalKnowledge + GeminiExtractor"
    else:
        knowledge, adapter = LocalKnowledge(pool, extractor=RuleExtractor()), "LocalKnowledge + RuleExtractor"
    learning = Learning(
        pool=pool,
        knowledge=knowledge,
        batch_max=settings.knowledge_batch_max,
        poll_s=settings.knowledge_poll_s,
        # Never beside a reply: a person is read once their turn has ended (Threads.on_idle).
        busy=threads.busy if threads is not None else (lambda _person_id: False),
    )
    if threads is not None:
        threads.on_idle(learning.turn_ended)
    return KnowledgeParts(knowledge=knowledge, learning=learning, adapter=adapter)


async def start_learning(parts: KnowledgeParts, hub: EventHub, stack: contextlib.AsyncExitStack) -> None:
    """The ingestion worker, woken through the hub (the process's one LISTEN connection),
    stopped (mid-batch if need be: the cursor keeps the backlog) on close."""
    stack.push_async_callback(parts.learning.stop)
    await parts.learning.start(hub)


def build_toolbox(
    *, specialists: Specialists, knowledge: Knowledge | None = None, reminders: Reminders | None = None
) -> Toolbox:
    """Which tools each agent gets in this deployment: the one place capabilities plug in."""
    toolbox = Toolbox()

    def handoffs(context: RunContext) -> list[Tool]:
        assert context.delegate is not None, "only the lead hands on"
        return handoff_tools(context.delegate)

    toolbox.register("ava", handoffs)
    if knowledge is not None:
        memory = knowledge
        toolbox.register(
            "ava", lambda context: recall_tools(memory, person_id=context.person_id, person_name=context.person_name)
        )
    if reminders is not None:
        # Only Ava keeps wake notes: specialists act in the present (docs/agents.md).
        toolbox.register("ava", lambda context: wake_tools(reminders, context))
    specialists.register_tools(toolbox)
    return toolbox


# --- reminders (wake notes) ---------------------------------------------------------------


@dataclass
class ReminderParts:
    """The reminders domain as this process runs it: built before the turns (Ava's tools
    need `reminders`), started after them (delivery runs turns), closed before the pool."""

    notes: Notes
    reminders: Reminders
    queue: Queue
    push: Push
    gate: CallbackGate
    limits: DeliveryLimits
    adapters: dict[str, str]
    delivery: Delivery | None = None
    task: asyncio.Task[None] | None = None

    async def close(self, *, timeout_s: float = 30.0) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.task = None
        if isinstance(self.queue, EmbeddedQueue):
            await self.queue.drain(timeout_s=timeout_s)


def _callback_secret(settings: Settings) -> bytes:
    if settings.reminders_callback_secret is not None:
        return settings.reminders_callback_secret.get_secret_value().encode()
    return hmac.new(session_secret(settings), b"reminders-callback", hashlib.sha256).hexdigest().encode()


def build_reminders(
    settings: Settings, *, pool: asyncpg.Pool, listener: Listener, clock: Callable[[], datetime] | None = None
) -> ReminderParts:
    """Choose the queue, push and callback verifier for wake notes (embedded by default)."""
    notes = Notes(pool)
    queue: Queue
    id_tokens: IdTokenVerifier | None = None
    audience = (settings.public_base_url or "").rstrip("/")
    if settings.cloud_tasks_queue:
        assert settings.public_base_url, "CLOUD_TASKS_QUEUE needs PUBLIC_BASE_URL"
        assert settings.cloud_tasks_service_account, "CLOUD_TASKS_QUEUE needs CLOUD_TASKS_SERVICE_ACCOUNT"
        from google.cloud import tasks_v2

        from reminders.cloudtasks import CloudTasksQueue
        from reminders.oidc import GoogleIdTokens

        queue = CloudTasksQueue(
            notes=notes,
            api=tasks_v2.CloudTasksAsyncClient(),
            queue_path=settings.cloud_tasks_queue,
            target_base_url=settings.public_base_url,
            service_account=settings.cloud_tasks_service_account,
            audience=audience,
        )
        id_tokens = GoogleIdTokens()
    else:
        queue = EmbeddedQueue(notes=notes, listener=listener, concurrent_max=settings.reminders_concurrent_max)
    push: Push
    if settings.fcm_credentials is not None:
        from reminders.fcm import FcmPush

        push = FcmPush(credentials_path=str(settings.fcm_credentials))
    else:
        push = LocalPush()
    gate = CallbackGate(
        signer=CallbackSigner(_callback_secret(settings)),
        id_tokens=id_tokens,
        audience=audience,
        service_account=settings.cloud_tasks_service_account,
    )
    return ReminderParts(
        notes=notes,
        reminders=Reminders(notes=notes, queue=queue, clock=clock),
        queue=queue,
        push=push,
        gate=gate,
        limits=DeliveryLimits(lease_s=settings.reminders_lease_s, attempts_max=settings.reminders_attempts_max),
        adapters={"reminder_queue": type(queue).__name__, "push": type(push).__name__},
    )


def wake_on_turns(turns: Turns, people: People, *, live_call: Callable[[str], Call | None] | None = None) -> Wake:
    """Delivery's way to run Ava on a note: a turn of her own in the person's thread. If the
    person is on a call in this process, she runs on the call's channel (voice layer) and says
    it there at once; otherwise it is a text turn, announced and pushed by delivery."""

    async def wake(*, note: Note) -> Woken:
        person = await people.get(note.person_id)
        if person is None:
            return Woken(run_id=None, reply="", outcome="silent")  # the person is gone
        try:
            zone = ZoneInfo(person.time_zone)
        except (ValueError, KeyError):
            zone = ZoneInfo(note.time_zone)
        call = live_call(person.id) if live_call is not None else None
        channel: Channel = "text"
        if call is not None:
            channel = "phone" if call.channel == "phone" else "voice"
        # Detached: shutdown waits for a wake in progress instead of cutting its run short.
        woken = await run_detached(turns.wake(person, note_id=note.id, text=note.text, zone=zone, channel=channel))
        if call is not None and call.speak is not None and woken.outcome == "ran":
            try:
                await call.speak(parse_spoken(woken.raw or woken.reply))
            except Exception:  # the call ended meanwhile: the thread has the reply anyway
                log.warning("could not say note %s on the call", note.id)
        return woken

    return wake


def start_reminders(
    parts: ReminderParts,
    *,
    turns: Turns,
    people: People,
    pool: asyncpg.Pool,
    live_call: Callable[[str], Call | None] | None = None,
) -> None:
    """Wire delivery to the turns and start the queue's background work in this process."""

    async def announce(note: Note) -> None:
        await publish_reminder_delivered(pool, note.person_id, note.as_json())

    parts.delivery = Delivery(
        notes=parts.notes,
        wake=wake_on_turns(turns, people, live_call=live_call),
        push=parts.push,
        announce=announce,
        limits=parts.limits,
    )
    parts.task = asyncio.create_task(parts.queue.serve(delivery=parts.delivery), name="reminders")


@dataclass
class Services:
    """Everything one process runs, built once and closed once (by unwinding `stack`)."""

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
    voice: VoiceDoors
    toolbox: Toolbox
    knowledge: KnowledgeParts
    reminders: ReminderParts | None = None
    embedded: EmbeddedPostgres | None = None
    adapters: dict[str, str] = field(default_factory=dict)
    specialists: Specialists | None = None
    stack: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    # The thread loading the offline speech models at startup, if one was started.
    preload: threading.Thread | None = None

    async def end_calls(self) -> None:
        """Hang up every live call (the first step of shutdown, before connections close)."""
        await end_calls(self.voice)

    async def close(self) -> None:
        await self.stack.aclose()


async def build_database(settings: Settings, stack: contextlib.AsyncExitStack) -> tuple[str, EmbeddedPostgres | None]:
    """DATABASE_URL, or an embedded server under AVAGENC_HOME that is stopped on close."""
    if settings.database_url:
        return settings.database_url, None
    embedded = EmbeddedPostgres(settings.avagenc_home / "pg", log_path=settings.avagenc_home / "pg.log")
    # Registered first: a start that fails half-way (initdb done, pg_ctl timed out) is
    # still let go of, and `stop` does nothing if there is nothing to stop.
    stack.callback(embedded.stop)
    return await asyncio.to_thread(embedded.start), embedded


async def build_pool(dsn: str, stack: contextlib.AsyncExitStack, *, size_max: int) -> asyncpg.Pool:
    pool = await create_pool(dsn, size_max=size_max)
    stack.push_async_callback(pool.close)
    return pool


async def build_migrations(pool: asyncpg.Pool) -> list[str]:
    """Every domain's migrations, and those of the installed specialist packages that have
    tables of their own (after the agents', before the chat's)."""
    async with pool.acquire() as conn:
        return await apply_migrations(conn, sources=migration_sources(specialist_packages()))


def build_model(settings: Settings, stack: contextlib.AsyncExitStack, model: Model | None) -> Model:
    """The model given (a test's, which its owner closes), or the configured one, closed here."""
    if model is not None:
        return model
    chosen = choose_model(settings)
    aclose: Callable[[], Awaitable[None]] | None = getattr(chosen, "aclose", None)
    if aclose is not None:
        stack.push_async_callback(aclose)
    return chosen


def build_ledger(settings: Settings, pool: asyncpg.Pool, runs: Runs) -> tuple[PostgresLedger, Wallet]:
    ledger = PostgresLedger(pool)
    wallet = Wallet(
        ledger=ledger,
        prices=PriceBook(pool),
        voice_prices=VoicePriceBook(pool),
        runs=runs,
        events=PostgresEvents(pool),
        signup_grant_micros=settings.signup_grant_micros,
    )
    return ledger, wallet


def build_turns(
    settings: Settings,
    *,
    threads: Threads,
    runs: Runs,
    wallet: Wallet,
    model: Model,
    toolbox: Toolbox,
    knowledge: KnowledgeParts,
    clock: Callable[[], datetime] | None = None,
    apart: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
) -> Turns:
    return Turns(
        threads=threads,
        runs=runs,
        wallet=wallet,
        model=model,
        model_name=settings.model_for if not isinstance(model, OfflineModel) else (lambda _: "offline-1"),
        toolbox=toolbox,
        history_tokens_max=settings.history_tokens_max,
        thread_wait_s=settings.thread_wait_s,
        facts=knowledge.facts,
        # A turn's charges and tool records are written on a connection of their own.
        apart=apart,
        # The agents' "now"; a scenario run (avagenc eval) sets its own.
        clock=clock or (lambda: datetime.now(UTC)),
    )


async def build_listener(dsn: str, stack: contextlib.AsyncExitStack) -> Listener:
    """The process's one LISTEN connection: the live events and the wake-note dispatcher
    both hear their notifications on it."""
    listener = Listener(dsn)
    stack.push_async_callback(listener.stop)  # before start: a start that times out leaves its task
    await listener.start()
    return listener


def build_event_hub(listener: Listener) -> EventHub:
    return EventHub(listener)


async def fail_abandoned_runs(threads: Threads, runs: Runs, pool: asyncpg.Pool) -> int:
    """Runs left `running` by a crash are failed, but only where no live turn holds the
    thread: another server process sharing the database may be running them right now."""
    failed = 0
    async with pool.acquire() as conn:
        for person_id in await runs.people_with_running():
            if await threads.is_idle(conn, person_id):
                try:
                    failed += len(await runs.abandon(conn, person_id))
                finally:
                    await threads.release(conn, person_id)
    return failed


async def build_sweep(threads: Threads, runs: Runs, wallet: Wallet, pool: asyncpg.Pool) -> None:
    """What a crash left behind: runs still `running`, model calls never charged. Only a
    server does this at startup; a read-only verb never does."""
    abandoned = await fail_abandoned_runs(threads, runs, pool)
    if abandoned:
        log.warning("marked %d abandoned runs as failed", abandoned)
    settled = await wallet.settle_uncharged()
    if settled:
        log.warning("charged %d model calls a crash had left uncharged", settled)


def build_voice(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    dsn: str,
    people: People,
    local_tokens: LocalTokens,
    turns: Turns,
    wallet: Wallet,
) -> tuple[VoiceDoors, str, threading.Thread | None]:
    """The call doors, their engines' description and the thread loading the offline models
    (None when none was started); live calls are hung up first when the stack unwinds."""
    from voice import CallLimits, CallSlots, TurnTiming, VoiceDoors

    engines, speech, preload = choose_engines(settings, stack)
    voice = VoiceDoors(
        people=people,
        verifier=local_tokens,
        turns=turns,
        engines=engines,
        guard=lambda person: wallet.guard(person.id),
        bill=lambda call, slice_index, usage: wallet.charge_voice(
            person_id=call.person.id, call_id=call.id, slice_index=slice_index, channel=call.channel, usage=usage
        ),
        limits=CallLimits(
            duration_max_s=settings.call_duration_max_s,
            idle_s=settings.call_idle_s,
            per_process_max=settings.calls_per_process_max,
        ),
        timing=TurnTiming(
            vad_stop_s=settings.voice_vad_stop_s,
            speech_timeout_s=settings.voice_speech_timeout_s,
            finished_timeout_s=settings.voice_finished_timeout_s,
            vad_start_s=settings.voice_vad_start_s,
            pause_s=settings.voice_pause_s,
        ),
    )
    voice.registry.slots = CallSlots.for_url(dsn)  # one call per person across every instance
    stack.push_async_callback(end_calls, voice)
    return voice, speech, preload


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
    gc.collect()
    gc.freeze()
    if services.preload is not None:
        await asyncio.to_thread(services.preload.join, _PRELOAD_JOIN_S)
        gc.collect()
        gc.freeze()


async def end_calls(voice: VoiceDoors) -> None:
    """Every live call hears Ava's goodbye and gets `hangup` (reason `shutdown`); what has
    not ended within _CALLS_END_S is cut. A browser pipeline still running after that is
    cancelled, since one left to the loop's final cancel-all never finishes."""
    from voice import end_webrtc_calls

    await voice.end_all_calls(reason="shutdown", timeout_s=_CALLS_END_S)
    await end_webrtc_calls()


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
) -> Services:
    """Build the whole server on `stack`; if any step raises, the caller's stack closes the rest."""
    # The room first: everything after reads the specialists from it; the previous room
    # comes back when the stack closes (a test's toy specialist leaves no trace).
    stack.enter_context(installed_roster(settings.agent_packages))
    check_models(settings)
    dsn, embedded = await build_database(settings, stack)
    pool = await build_pool(dsn, stack, size_max=settings.database_pool_max)
    lock_pool = await build_pool(dsn, stack, size_max=settings.turns_concurrent_max)
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
    memory = build_knowledge(settings, stack, pool=pool, threads=threads, chosen=knowledge)
    # Stopped after the detached turns below have finished, so their events are still heard.
    listener = await build_listener(dsn, stack)
    reminder_parts = build_reminders(settings, pool=pool, listener=listener, clock=clock)
    toolbox = build_toolbox(specialists=specialists, knowledge=memory.knowledge, reminders=reminder_parts.reminders)
    ledger, wallet = build_ledger(settings, turn_pool, runs)
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
    await build_sweep(threads, runs, wallet, pool)
    await start_learning(memory, hub, stack)
    people = People(pool, default_time_zone=settings.default_time_zone)
    local_tokens = LocalTokens(session_secret(settings), ttl_s=settings.session_ttl_s)
    voice, speech, preload = build_voice(
        settings, stack, dsn=dsn, people=people, local_tokens=local_tokens, turns=turns, wallet=wallet
    )
    # Started last, stopped first: deliveries in flight finish before calls end and pools close.
    # A scenario run (avagenc eval) keeps its notes pending: its clock is not the wall's,
    # so a note due in the scenario's future may already be due by the wall.
    if deliver_wakes:
        start_reminders(reminder_parts, turns=turns, people=people, pool=pool, live_call=voice.registry.live_for)
    stack.push_async_callback(reminder_parts.close, timeout_s=settings.shutdown_grace_s)
    adapters = {
        "database": "embedded PostgreSQL" if embedded else "DATABASE_URL",
        "model": type(chosen).__name__,
        # The sandbox always; "+ the live adapter" where the vendor's credentials are set.
        **specialists.adapters(),
        "identity": "LocalTokens",
        "speech": speech,
        "knowledge": memory.adapter,
        **reminder_parts.adapters,
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
        voice=voice,
        toolbox=toolbox,
        knowledge=memory,
        reminders=reminder_parts,
        embedded=embedded,
        adapters=adapters,
        specialists=specialists,
        stack=stack,
        preload=preload,
    )


@dataclass
class Records:
    """The database alone, with the domains that only read and write it: what the CLI's
    verbs need (no model, no voice engines, no live events, no startup sweep)."""

    pool: asyncpg.Pool
    people: People
    ledger: PostgresLedger
    wallet: Wallet


@contextlib.asynccontextmanager
async def records(settings: Settings, *, migrate_first: bool) -> AsyncIterator[Records]:
    """Open the database for one command; closed (and an embedded server stopped) after."""
    async with contextlib.AsyncExitStack() as stack:
        dsn, _ = await build_database(settings, stack)
        pool = await build_pool(dsn, stack, size_max=2)
        if migrate_first:
            await build_migrations(pool)
        ledger, wallet = build_ledger(settings, pool, Runs(pool))
        yield Records(
            pool=pool,
            people=People(pool, default_time_zone=settings.default_time_zone),
            ledger=ledger,
            wallet=wallet,
        )


async def start_services(
    settings: Settings,
    *,
    model: Model | None = None,
    migrate_first: bool = True,
    vendor_transport: httpx.AsyncBaseTransport | None = None,
    knowledge: Knowledge | None = None,
) -> Services:
    """The whole server, on a stack of its own that `Services.close` unwinds."""
    stack = contextlib.AsyncExitStack()
    try:
        return await bootstrap(
            settings,
            stack,
            model=model,
            migrate_first=migrate_first,
            vendor_transport=vendor_transport,
            knowledge=knowledge,
        )
    except BaseException:
        await stack.aclose()
        raise


def build_knowledge_routes(services: Services, api: ChatApi) -> APIRouter:
    """GET /v1/knowledge and forget me (DELETE), which also settles and cancels what it must."""
    forgetting = Forgetting(
        pool=services.pool,
        threads=services.threads,
        learning=services.knowledge.learning,
        knowledge=services.knowledge.knowledge,
        cancel_wakes=services.reminders.reminders.cancel_pending if services.reminders is not None else no_wakes,
        settle=services.wallet.settle_uncharged,
        wait_s=services.settings.thread_wait_s,
        timeout_s=services.settings.knowledge_timeout_s,
    )
    return build_knowledge_router(
        api,
        knowledge=services.knowledge.knowledge,
        forgetting=forgetting,
        timeout_s=services.settings.knowledge_timeout_s,
    )


def build_app(services: Services) -> FastAPI:
    from voice import VoiceError, build_voice_router, build_webrtc_router

    settings = services.settings
    app = FastAPI(
        title="Avagenc Chat",
        version="0.1.0",
        description="A group chat where the person is the only human and every other member is an AI agent.",
    )
    api = ChatApi(
        people=services.people,
        verifier=services.local_tokens,
        local_tokens=services.local_tokens,
        turns=services.turns,
        threads=services.threads,
        event_log=EventLog(services.pool),
        hub=services.hub,
        sse_streams_per_person_max=settings.sse_streams_per_person_max,
        sse_keepalive_s=settings.sse_keepalive_s,
        on_signup=lambda person: services.wallet.grant_signup(person.id),
    )
    app.include_router(build_router(api))
    admin_key = settings.admin_api_key.get_secret_value() if settings.admin_api_key else None
    app.include_router(build_wallet_router(api, services.wallet, admin_api_key=admin_key))
    app.include_router(build_knowledge_routes(services, api))
    parts = services.reminders
    if parts is not None and parts.delivery is not None:
        app.include_router(build_reminders_router(api, parts.reminders))
        app.include_router(build_callback_router(parts.reminders, parts.delivery, parts.gate))
    app.include_router(build_voice_router(services.voice))
    app.include_router(build_webrtc_router(services.voice))
    if services.specialists is not None:
        app.include_router(build_integrations_router(api, services.specialists.connections))
    app.add_exception_handler(ChatError, on_chat_error)
    app.add_exception_handler(LedgerError, on_ledger_error)
    app.add_exception_handler(VoiceError, on_domain_error)
    app.add_exception_handler(LinkError, on_domain_error)
    app.add_exception_handler(ReminderError, on_domain_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(HTTPException, on_http_error)
    for gone in DATABASE_GONE:
        app.add_exception_handler(gone, on_database_gone)
    app.add_exception_handler(Exception, on_unexpected)
    app.add_middleware(BodyLimit)

    @app.get("/healthz", tags=["operations"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"], response_model=None, responses=problem_responses(503))
    async def readyz() -> Any:
        try:
            async with asyncio.timeout(2):
                await services.pool.fetchval("SELECT 1")
        except (TimeoutError, OSError, asyncpg.PostgresError):
            return problem(503, "not_ready", "The database is not reachable")
        return {"status": "ready"}

    return app


@contextlib.asynccontextmanager
async def running(
    settings: Settings,
    *,
    model: Model | None = None,
    vendor_transport: httpx.AsyncBaseTransport | None = None,
    clock: Callable[[], datetime] | None = None,
    knowledge: Knowledge | None = None,
    deliver_wakes: bool = True,
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
        )
        yield services, build_app(services)


@dataclass(frozen=True, slots=True)
class EvalProduct:
    """The product as a scenario run drives it (scenarios.Product)."""

    turns: Turns
    people: People
    threads: Threads
    runs: Runs
    wallet: Wallet
    home: SandboxHome
    model: RecordingModel
    clock: ScenarioClock
    team: dict[str, tuple[ToolSpec, ...]]  # what every agent can do in this deployment
    reminders: Reminders | None  # the wake notes the turns scheduled (the `wake` rule reads them)


@contextlib.asynccontextmanager
async def eval_product(settings: Settings, *, model: Model | None = None) -> AsyncIterator[EvalProduct]:
    """The whole product on the configured model (or the one given), with a clock each
    scenario sets and a recorder that keeps the raw replies the thread never stores."""
    clock = ScenarioClock()
    async with contextlib.AsyncExitStack() as stack:
        recording = RecordingModel(build_model(settings, stack, model))
        quiet = settings.model_copy(update={"voice_preload": False})  # no call is placed
        async with running(quiet, model=recording, clock=clock.now, deliver_wakes=False) as (services, _):
            yield EvalProduct(
                services.turns,
                services.people,
                services.threads,
                services.runs,
                services.wallet,
                SandboxHome(services.pool),
                recording,
                clock,
                services.toolbox.team(),
                services.reminders.reminders if services.reminders is not None else None,
            )
