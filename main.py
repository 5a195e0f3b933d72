"""The composition root: Settings -> adapters -> domains -> the ASGI app and the CLI.

Nothing imports this module (the `avagenc` console script calls `cli`). It is the only
place that decides which adapter serves each port, and it says so in one log line at
startup, so an operator can see at a glance what a deployment is really talking to.
"""

from __future__ import annotations

import os

# Pipecat logs through loguru at DEBUG from the moment it is imported (below, through
# voice); the product's own logging is the standard library's. Unless asked otherwise,
# only Pipecat's warnings reach the console.
os.environ.setdefault("LOGURU_LEVEL", "WARNING")

import argparse
import asyncio
import contextlib
import logging
import secrets
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from fastapi import APIRouter, FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from agents import (
    Knowledge,
    LocalKnowledge,
    Model,
    OfflineModel,
    RuleExtractor,
    RunContext,
    SandboxHome,
    Tool,
    Toolbox,
    handoff_tools,
    recall_tools,
    session_facts,
    zee_tools,
)
from chat import (
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
    Person,
    Runs,
    Threads,
    Turns,
    Wallet,
    build_knowledge_router,
    build_router,
    build_wallet_router,
    drain_detached,
    no_wakes,
    on_chat_error,
    on_http_error,
    on_ledger_error,
    on_unexpected,
    on_validation_error,
    problem,
)
from database import EmbeddedPostgres, apply_migrations, create_pool
from ledger import MICROS_PER_RUPIAH, LedgerError, PostgresLedger, PriceBook, format_rupiah
from settings import Settings
from voice import (
    CallLimits,
    Engines,
    TurnTiming,
    VoiceDoors,
    build_voice_router,
    build_webrtc_router,
    end_webrtc_calls,
)

log = logging.getLogger("avagenc")


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


def choose_engines(settings: Settings) -> tuple[Engines, str]:
    """Speech engines for calls: Google Cloud with credentials, offline otherwise."""
    from voice.prosody import emotion_to_ssml, strip_stray_tags

    transforms = [("*", emotion_to_ssml), ("*", strip_stray_tags)]
    if settings.google_speech_credentials is not None:
        from voice.engines.google import SsmlGoogleHttpTTSService, google_stt

        path = str(settings.google_speech_credentials)
        return Engines(
            stt=lambda: google_stt(path, settings.google_stt_languages),
            tts=lambda: SsmlGoogleHttpTTSService(
                credentials_path=path, voice=settings.google_tts_voice, text_transforms=transforms
            ),
        ), "Google Cloud STT + TTS"
    from voice.engines.espeak import EspeakTTSService
    from voice.engines.whisper import WhisperSTTService, preload_whisper

    if settings.voice_preload:
        threading.Thread(target=preload_whisper, name="whisper-preload", daemon=True).start()
    return Engines(stt=WhisperSTTService, tts=lambda: EspeakTTSService(text_transforms=transforms)), (
        "Whisper tiny.en + espeak-ng"
    )


def choose_model(settings: Settings) -> Model:
    if settings.gemini_api_key is not None:
        from agents.gemini import GeminiModel  # the SDK loads only when it is used

        return GeminiModel(
            api_key=settings.gemini_api_key.get_secret_value(),
            timeout_s=settings.gemini_timeout_s,
            retries_max=settings.gemini_retries_max,
        )
    return OfflineModel()


@dataclass
class KnowledgeParts:
    """Semantic memory as this process runs it: the port, the ingestion worker, the session lookup."""

    knowledge: Knowledge
    learning: Learning
    adapter: str
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def facts(self) -> FactLookup:
        async def lookup(*, person_id: str, text: str) -> list[str]:
            return await session_facts(self.knowledge, person_id=person_id, text=text)

        return lookup

    async def close(self) -> None:
        await self.learning.stop()
        for close in self.closers:
            await close()


def build_knowledge(
    settings: Settings, *, pool: asyncpg.Pool, dsn: str, chosen: Knowledge | None = None
) -> KnowledgeParts:
    """Zep with a key; otherwise the local graph, read by Gemini with a key and by rules without.
    `chosen` (tests) serves the port instead."""
    closers: list[Callable[[], Awaitable[None]]] = []
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
        knowledge, adapter = zep, "ZepKnowledge"
        closers.append(zep.aclose)
    elif settings.gemini_api_key is not None:
        from agents.knowledge.gemini import GeminiExtractor

        extractor = GeminiExtractor(
            api_key=settings.gemini_api_key.get_secret_value(),
            model=settings.gemini_model_knowledge or settings.gemini_model,
            timeout_s=settings.gemini_timeout_s,
        )
        knowledge, adapter = LocalKnowledge(pool, extractor=extractor), "LocalKnowledge + GeminiExtractor"
        closers.append(extractor.aclose)
    else:
        knowledge, adapter = LocalKnowledge(pool, extractor=RuleExtractor()), "LocalKnowledge + RuleExtractor"
    learning = Learning(
        pool=pool,
        dsn=dsn,
        knowledge=knowledge,
        batch_max=settings.knowledge_batch_max,
        poll_s=settings.knowledge_poll_s,
    )
    return KnowledgeParts(knowledge=knowledge, learning=learning, adapter=adapter, closers=closers)


def build_toolbox(*, home: SandboxHome, knowledge: Knowledge | None = None) -> Toolbox:
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
    toolbox.register("zee", lambda context: zee_tools(home, person_id=context.person_id))
    return toolbox


@dataclass
class Services:
    """Everything one process runs, built once and closed once."""

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
    knowledge: KnowledgeParts
    embedded: EmbeddedPostgres | None = None
    adapters: dict[str, str] = field(default_factory=dict)

    async def close(self) -> None:
        # Live browser calls are ended first (a running pipeline does not stop on its own
        # when the loop cancels everything); then turns and charges that outlived their
        # requests finish before the pool closes.
        await end_webrtc_calls()
        await drain_detached(timeout_s=30)
        await self.knowledge.close()
        await self.hub.stop()
        await self.lock_pool.close()
        await self.pool.close()
        if self.embedded is not None:
            await asyncio.to_thread(self.embedded.stop)


async def database_url(settings: Settings) -> tuple[str, EmbeddedPostgres | None]:
    if settings.database_url:
        return settings.database_url, None
    embedded = EmbeddedPostgres(settings.avagenc_home / "pg")
    return await asyncio.to_thread(embedded.start), embedded


async def migrate(pool: asyncpg.Pool) -> list[str]:
    async with pool.acquire() as conn:
        return await apply_migrations(conn)


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


async def start_services(
    settings: Settings, *, model: Model | None = None, knowledge: Knowledge | None = None, migrate_first: bool = True
) -> Services:
    dsn, embedded = await database_url(settings)
    pool = await create_pool(dsn, size_max=settings.database_pool_max)
    lock_pool = await create_pool(dsn, size_max=settings.turns_concurrent_max)
    try:
        if migrate_first:
            await migrate(pool)
        threads, runs = Threads(pool, lock_pool=lock_pool), Runs(pool)
        chosen = model or choose_model(settings)
        home = SandboxHome(pool)
        memory = build_knowledge(settings, pool=pool, dsn=dsn, chosen=knowledge)
        ledger = PostgresLedger(pool)
        wallet = Wallet(
            ledger=ledger,
            prices=PriceBook(pool),
            runs=runs,
            pool=pool,
            signup_grant_micros=settings.signup_grant_micros,
        )
        turns = Turns(
            threads=threads,
            runs=runs,
            wallet=wallet,
            model=chosen,
            model_name=settings.model_for if not isinstance(chosen, OfflineModel) else (lambda _: "offline-1"),
            toolbox=build_toolbox(home=home, knowledge=memory.knowledge),
            history_tokens_max=settings.history_tokens_max,
            thread_wait_s=settings.thread_wait_s,
            facts=memory.facts,
        )
        hub = EventHub(dsn)
        await hub.start()
        abandoned = await fail_abandoned_runs(threads, runs, pool)
        if abandoned:
            log.warning("marked %d abandoned runs as failed", abandoned)
        settled = await wallet.settle_uncharged()
        if settled:
            log.warning("charged %d model calls a crash had left uncharged", settled)
    except BaseException:
        await lock_pool.close()
        await pool.close()
        if embedded is not None:
            embedded.stop()
        raise
    engines, speech = choose_engines(settings)
    adapters = {
        "database": "embedded PostgreSQL" if embedded else "DATABASE_URL",
        "model": type(chosen).__name__,
        "smart_home": type(home).__name__,
        "identity": "LocalTokens",
        "speech": speech,
        "knowledge": memory.adapter,
    }
    people = People(pool, default_time_zone=settings.default_time_zone)
    local_tokens = LocalTokens(session_secret(settings), ttl_s=settings.session_ttl_s)
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
        timing=TurnTiming(vad_stop_s=settings.voice_vad_stop_s, speech_timeout_s=settings.voice_speech_timeout_s),
    )
    services = Services(
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
        knowledge=memory,
        embedded=embedded,
        adapters=adapters,
    )
    await memory.learning.start()
    return services


def build_knowledge_routes(services: Services, api: ChatApi) -> APIRouter:
    """GET /v1/knowledge and forget me (DELETE), which also settles and cancels what it must."""
    forgetting = Forgetting(
        pool=services.pool,
        threads=services.threads,
        learning=services.knowledge.learning,
        knowledge=services.knowledge.knowledge,
        cancel_wakes=no_wakes,  # reminders' cancel_pending plugs in here when it lands
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
    app.include_router(build_voice_router(services.voice))
    app.include_router(build_webrtc_router(services.voice))
    app.add_exception_handler(ChatError, on_chat_error)
    app.add_exception_handler(LedgerError, on_ledger_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
    app.add_middleware(BodyLimit)

    @app.get("/healthz", tags=["operations"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"], response_model=None)
    async def readyz() -> Any:
        try:
            async with asyncio.timeout(2):
                await services.pool.fetchval("SELECT 1")
        except (TimeoutError, OSError, asyncpg.PostgresError):
            return problem(503, "not_ready", "The database is not reachable")
        return {"status": "ready"}

    return app


# --- command line -----------------------------------------------------------------------


async def _serve(settings: Settings) -> None:
    import uvicorn

    services = await start_services(settings)
    log.info("ports: %s", ", ".join(f"{k}={v}" for k, v in services.adapters.items()))
    try:
        config = uvicorn.Config(
            build_app(services), host=settings.host, port=settings.port, log_level="info", lifespan="off"
        )
        await uvicorn.Server(config).serve()
    finally:
        await services.close()


async def _migrate(settings: Settings) -> None:
    dsn, embedded = await database_url(settings)
    try:
        pool = await create_pool(dsn, size_max=2)
        try:
            applied = await migrate(pool)
        finally:
            await pool.close()
    finally:
        if embedded is not None:
            embedded.stop()
    print("applied: " + ", ".join(applied) if applied else "the database is up to date")


async def _user_token(settings: Settings, name: str) -> None:
    services = await start_services(settings)
    try:
        person, created = await services.people.sign_in_local(name)
        if created:
            await services.wallet.grant_signup(person.id)
        print(services.local_tokens.issue(person.id))
    finally:
        await services.close()


async def _find_person(services: Services, who: str) -> Person | None:
    """A person by id (`usr_…`), or else by their local sign-in name."""
    person = await services.people.get(who)
    return person or await services.people.find_local(who)


async def _wallet_topup(settings: Settings, who: str, amount: str, ref: str | None) -> int:
    if not amount.isdigit() or int(amount) <= 0:
        print(f"error: AMOUNT must be a whole number of rupiah above zero, not {amount!r}", file=sys.stderr)
        return 2
    services = await start_services(settings)
    try:
        person = await _find_person(services, who)
        if person is None:
            print(f"error: no person {who!r} (give an id like usr_… or a local sign-in name)", file=sys.stderr)
            return 2
        try:
            transaction = await services.wallet.top_up(
                person.id,
                amount_micros=int(amount) * MICROS_PER_RUPIAH,
                ref=ref or f"cli:{secrets.token_hex(8)}",
                source="cli",
            )
        except LedgerError as exc:
            print(f"error: {exc} ({getattr(exc, 'code', 'ledger_error')})", file=sys.stderr)
            return 2
        balance = await services.wallet.balance_micros(person.id)
        state = "already applied" if transaction.replayed else "applied"
        print(f"top-up {state} for {person.name} ({person.id}); balance {format_rupiah(balance)}")
        return 0
    finally:
        await services.close()


async def _wallet_verify(settings: Settings) -> int:
    services = await start_services(settings)
    try:
        report = await services.ledger.verify()
    finally:
        await services.close()
    print(f"checked {report.transactions} transactions, {report.entries} entries, {report.accounts} accounts")
    for problem_ in report.problems:
        print(f"PROBLEM {problem_.kind} {problem_.subject}: {problem_.detail}")
    print("ledger OK" if report.ok else f"ledger BROKEN: {len(report.problems)} problems")
    return 0 if report.ok else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="avagenc", description="Avagenc Chat")
    verbs = parser.add_subparsers(dest="verb", required=True)
    serve = verbs.add_parser("serve", help="serve the API and web app")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    verbs.add_parser("migrate", help="apply database migrations")
    users = verbs.add_parser("users", help="people").add_subparsers(dest="users_verb", required=True)
    token = users.add_parser("token", help="print a session token for NAME (created if new)")
    token.add_argument("name")
    wallet = verbs.add_parser("wallet", help="the ledger").add_subparsers(dest="wallet_verb", required=True)
    topup = wallet.add_parser("topup", help="add AMOUNT whole rupiah to USER's wallet (id or local name)")
    topup.add_argument("user")
    topup.add_argument("amount")
    topup.add_argument("--ref", help="idempotency key: the same ref tops up once (default: a new one)")
    wallet.add_parser("verify", help="check every ledger invariant; exit 1 if any is broken")
    chat = verbs.add_parser("chat", help="chat in the terminal through the HTTP API")
    chat.add_argument("--url", help="server address (default http://HOST:PORT)")
    chat.add_argument("--name", help="sign in locally with this name (default: your login name)")
    chat.add_argument("--time-zone", help="IANA zone to send (default: the server's idea of you)")
    return parser


def cli(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    overrides: dict[str, Any] = {}
    if getattr(args, "host", None):
        overrides["host"] = args.host
    if getattr(args, "port", None):
        overrides["port"] = args.port
    settings = Settings(**overrides)
    if args.verb == "serve":
        asyncio.run(_serve(settings))
    elif args.verb == "migrate":
        asyncio.run(_migrate(settings))
    elif args.verb == "users":
        asyncio.run(_user_token(settings, args.name))
    elif args.verb == "wallet" and args.wallet_verb == "topup":
        sys.exit(asyncio.run(_wallet_topup(settings, args.user, args.amount, args.ref)))
    elif args.verb == "wallet":
        sys.exit(asyncio.run(_wallet_verify(settings)))
    elif args.verb == "chat":
        from chat.terminal import run_terminal

        url = args.url or f"http://{settings.host}:{settings.port}"
        try:
            sys.exit(asyncio.run(run_terminal(url=url, name=args.name, time_zone=args.time_zone)))
        except KeyboardInterrupt:
            sys.exit(0)  # Ctrl-C at the prompt is a normal way to leave a chat


@contextlib.asynccontextmanager
async def running(
    settings: Settings, *, model: Model | None = None, knowledge: Knowledge | None = None
) -> AsyncIterator[tuple[Services, FastAPI]]:
    """Services and app for one process's lifetime (used by tests and benchmarks)."""
    services = await start_services(settings, model=model, knowledge=knowledge)
    try:
        yield services, build_app(services)
    finally:
        await services.close()


if __name__ == "__main__":
    cli()
