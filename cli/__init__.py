"""The `avagenc` command line: each verb builds only what it needs from the roots in `app`.

`serve` builds the whole server; `migrate`, `users token` and `wallet topup|verify` open the
database alone (no model, voice engines, Whisper preload, LISTEN connection or startup
sweep), so they start fast, exit with a stable code and never change what they only read;
`chat` is an HTTP client and opens nothing at all. `eval` builds the whole product (no voice
preload) on a throwaway embedded PostgreSQL unless DATABASE_URL is set, and plays the
scenario suites through it (docs/eval.md).

`serve` stops the same way on SIGTERM (Docker, Kubernetes, systemd) as on Ctrl-C: it stops
accepting, hangs up live calls with a goodbye, lets turns in flight and their charges
finish (up to SHUTDOWN_GRACE_S), then closes everything it opened, the embedded
PostgreSQL last. A second signal stops at once.

A package rather than one module so that the terminal client (`cli.terminal`), which
only `chat` runs, lives beside the verb that runs it and outside the server's domains.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import secrets
import signal
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Each verb imports what it builds when it runs: `avagenc chat`, a plain HTTP client,
    # starts in a fraction of a second instead of loading the server (docs/http.md#terminal-client).
    from agents import Model
    from scenarios import SuiteResult
    from settings import Settings
    from telemetry import LogFormat

log = logging.getLogger("avagenc")

# After turns have drained, how long open connections (live event streams) get to close.
_CONNECTIONS_CLOSE_S = 3
# Libraries whose INFO lines are not the product's to show.
_QUIET_LOGGERS = ("httpx", "httpcore", "asyncio", "aioice", "aiortc", "websockets")


def _server_class() -> type[Any]:
    import uvicorn

    class GracefulServer(uvicorn.Server):
        """uvicorn, stopped by `serve`'s own signal handlers. (uvicorn's re-raise the
        signal once it has shut down, and a re-raised SIGTERM kills the process before
        anything it opened is closed.) Calls are hung up and turns drained before the
        connections carrying them are closed."""

        def __init__(
            self,
            config: Any,
            *,
            grace_s: float,
            end_calls: Callable[[], Awaitable[None]],
            listening: Callable[[], None] = lambda: None,
        ) -> None:
            super().__init__(config)
            self._grace_s = grace_s
            self._end_calls = end_calls
            self._listening = listening

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                self._listening()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            from chat import cancel_detached, drain_detached

            for server in self.servers:
                server.close()  # stop accepting before anything else
            log.info("stopping: hanging up calls, waiting up to %.0f s for turns in flight", self._grace_s)
            await self._unless_forced(self._end_calls())
            for connection in list(self.server_state.connections):
                connection.shutdown()  # no new request on a kept-alive connection
            await self._unless_forced(drain_detached(timeout_s=self._grace_s))
            if self.force_exit:
                cancel_detached()
            await super().shutdown(sockets)

        async def _unless_forced(self, work: Awaitable[None]) -> None:
            """Wait for `work`, but stop waiting the moment a second signal forces the stop."""
            task = asyncio.ensure_future(work)
            while not task.done() and not self.force_exit:
                await asyncio.wait({task}, timeout=0.1)
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    return GracefulServer


class _Stop:
    """SIGTERM and SIGINT alike: the first asks the server for a graceful stop, the second
    forces it. Installed for the whole of `serve`, startup and close included, so a signal
    while the embedded PostgreSQL starts or stops never leaves it running without an owner."""

    def __init__(self) -> None:
        self.requested = False
        self.forced = False
        self.server: Any = None

    def __call__(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.requested:
            log.warning("second %s: stopping now", name)
            self.forced = True
            if self.server is not None:
                self.server.force_exit = True
            return
        log.info("%s received: shutting down", name)
        self.requested = True
        if self.server is not None:
            self.server.should_exit = True

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self, signum)
        try:
            yield
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)


def without_httpx_command_line() -> None:
    """httpx's own command line (`httpx._main`) imports rich, pygments and click whenever
    they are installed, on every `import httpx`: about a tenth of a server's imports
    (docs/scaling.md#cold-start), for a command no verb runs. Marked missing before httpx
    is first imported, it is skipped: httpx keeps a stub `main` of its own."""
    if "httpx" not in sys.modules:
        sys.modules["httpx._main"] = None  # type: ignore[assignment]


def without_http2() -> None:
    """httpcore imports the HTTP/2 library (h2, hpack) whenever it is installed, on every
    `import httpx`, though httpx speaks HTTP/2 only when a client asks for it: a third of
    the terminal client's imports before its prompt (BENCHMARKS.md, the terminal client's
    start). Only `chat` marks it missing, as it never asks; httpcore then keeps a stub that
    refuses HTTP/2. The server leaves it alone: a vendor's client library in it may ask."""
    if "httpcore" not in sys.modules:
        sys.modules["h2"] = None  # type: ignore[assignment]


async def serve(settings: Settings, *, model: Model | None = None) -> None:
    """Run the server until SIGTERM or SIGINT, then shut down gracefully (see module doc).
    `model` is for tests that need a model of their own behind the real command."""
    without_httpx_command_line()
    import uvicorn

    from app.server import freeze_startup_heap, running
    from chat import cancel_detached

    stop = _Stop()
    with stop.installed():
        async with running(settings, model=model, voice_in_background=not settings.voice_at_start) as (services, app):
            log.info("ports: %s", ", ".join(f"{k}={v}" for k, v in services.adapters.items()))
            frozen = asyncio.create_task(freeze_startup_heap(services), name="freeze-startup-heap")
            config = uvicorn.Config(
                app,
                host=settings.host,
                port=settings.port,
                log_level="info",
                # uvicorn's own lines go through the process's handler, in its format (LOG_FORMAT).
                log_config=None,
                lifespan="off",
                timeout_graceful_shutdown=_CONNECTIONS_CLOSE_S,
            )
            stop.server = _server_class()(
                config, grace_s=settings.shutdown_grace_s, end_calls=services.end_calls, listening=services.listening
            )
            if not stop.requested:  # a signal during startup skips serving
                await stop.server.serve()
            frozen.cancel()  # a stop before the models loaded: nothing left to freeze for
            if stop.forced:
                cancel_detached()  # nothing more is waited for; the next startup's sweep settles it
            log.info("closing: turns, charges, event hub, database")


async def _migrate(settings: Settings) -> int:
    from app.database import build_migrations
    from app.records import records

    async with records(settings, migrate_first=False) as db:
        applied = await build_migrations(db.pool)
    print("applied: " + ", ".join(applied) if applied else "the database is up to date")
    return 0


async def _user_token(settings: Settings, name: str) -> int:
    from app.keys import session_secret
    from app.records import records
    from chat import LocalTokens

    async with records(settings, migrate_first=True) as db:
        person, created = await db.people.sign_in_local(name)
        if created:
            await db.wallet.grant_signup(person.id)
        print(LocalTokens(session_secret(settings), ttl_s=settings.session_ttl_s).issue(person.id))
    return 0


async def _wallet_topup(settings: Settings, who: str, amount: str, ref: str | None) -> int:
    from app.records import records
    from ledger import MICROS_PER_RUPIAH, LedgerError, format_rupiah

    if not amount.isdigit() or int(amount) <= 0:
        print(f"error: AMOUNT must be a whole number of rupiah above zero, not {amount!r}", file=sys.stderr)
        return 2
    async with records(settings, migrate_first=True) as db:
        person = await db.people.get(who) or await db.people.find_local(who)
        if person is None:
            print(f"error: no person {who!r} (give an id like usr_… or a local sign-in name)", file=sys.stderr)
            return 2
        try:
            transaction = await db.wallet.top_up(
                person.id,
                amount_micros=int(amount) * MICROS_PER_RUPIAH,
                ref=ref or f"cli:{secrets.token_hex(8)}",
                source="cli",
            )
        except LedgerError as exc:
            print(f"error: {exc} ({exc.type})", file=sys.stderr)
            return 2
        balance = await db.wallet.balance_micros(person.id)
    state = "already applied" if transaction.replayed else "applied"
    print(f"top-up {state} for {person.name} ({person.id}); balance {format_rupiah(balance)}")
    return 0


async def _wallet_verify(settings: Settings) -> int:
    """Read-only: no migrations, no sweep; 0 when every invariant holds, 1 when any is broken."""
    import asyncpg

    from app.records import records

    if not settings.database_url and not (settings.avagenc_home / "pg" / "PG_VERSION").exists():
        print(f"error: there is no database in {settings.avagenc_home} yet (run `avagenc migrate`)", file=sys.stderr)
        return 2
    async with records(settings, migrate_first=False) as db:
        try:
            report = await db.ledger.verify()
        except asyncpg.UndefinedTableError:
            print("error: this database has no ledger yet (run `avagenc migrate`)", file=sys.stderr)
            return 2
    print(f"checked {report.transactions} transactions, {report.entries} entries, {report.accounts} accounts")
    for problem in report.problems:
        print(f"PROBLEM {problem.kind} {problem.subject}: {problem.detail}")
    print("ledger OK" if report.ok else f"ledger BROKEN: {len(report.problems)} problems")
    return 0 if report.ok else 1


async def _eval(settings: Settings, paths: Sequence[str], only: Sequence[str], transcripts: bool) -> int:
    """Exit 0 when every suite meets its threshold, 1 below it, 2 for a file that cannot be read."""
    from app.evaluation import eval_product
    from scenarios import ScenarioError, agent_coverage, bundled_suites, load_suite, render, render_coverage, run_suite

    try:
        suites = [load_suite(Path(p)) for p in paths] if paths else [load_suite(p) for p in bundled_suites()]
    except (ScenarioError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="avagenc-eval-") as scratch:
        if settings.database_url is None:  # a throwaway embedded database, not the person's own
            settings = settings.model_copy(update={"avagenc_home": Path(scratch)})
        results: list[SuiteResult] = []
        async with eval_product(settings) as product:
            for suite in suites:
                results.append(await run_suite(product, suite, only=only))
            model = type(product.model.inner).__name__
            table = agent_coverage(results, product.team)
    label = model if settings.gemini_api_key is None else f"{model} {settings.gemini_model}"
    print(render(results, model=label, transcripts=transcripts))
    print(render_coverage(table))
    return 0 if all(r.ok for r in results) else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="avagenc", description="Avagenc Chat")
    verbs = parser.add_subparsers(dest="verb", required=True)
    serve_ = verbs.add_parser("serve", help="serve the API and web app (SIGTERM or Ctrl-C stops it gracefully)")
    serve_.add_argument("--host")
    serve_.add_argument("--port", type=int)
    verbs.add_parser("migrate", help="apply database migrations")
    users = verbs.add_parser("users", help="people").add_subparsers(dest="users_verb", required=True)
    token = users.add_parser("token", help="print a session token for NAME (created if new)")
    token.add_argument("name")
    wallet = verbs.add_parser("wallet", help="the ledger").add_subparsers(dest="wallet_verb", required=True)
    topup = wallet.add_parser("topup", help="add AMOUNT whole rupiah to USER's wallet (id or local name)")
    topup.add_argument("user")
    topup.add_argument("amount")
    topup.add_argument("--ref", help="idempotency key: the same ref tops up once (default: a new one)")
    wallet.add_parser("verify", help="check every ledger invariant (read-only); exit 1 if any is broken")
    chat = verbs.add_parser("chat", help="chat in the terminal through the HTTP API")
    chat.add_argument("--url", help="server address (default http://HOST:PORT)")
    chat.add_argument("--name", help="sign in locally with this name (default: your login name)")
    chat.add_argument("--time-zone", help="IANA zone to send (default: the server's idea of you)")
    evaluate = verbs.add_parser("eval", help="run conversation scenarios against the configured model")
    evaluate.add_argument("suites", nargs="*", help="suite files (default: the bundled scenarios/suites/*.yaml)")
    evaluate.add_argument("--only", action="append", default=[], help="run scenarios whose name contains this")
    evaluate.add_argument("--transcripts", action="store_true", help="print every scenario's messages")
    return parser


def _configure_logging(verb: str, form: LogFormat = "plain") -> None:
    """The server narrates at INFO; every other verb prints its own result and only warnings.
    Lines are plain text with their fields, or one JSON object each (LOG_FORMAT=json)."""
    # Imported here: `avagenc chat --url` starts without the metrics and traces packages.
    from telemetry import configure_logging

    # The command owns the process: its choice, whatever configured logging before.
    configure_logging(level=logging.INFO if verb == "serve" else logging.WARNING, form=form, quiet=_QUIET_LOGGERS)


def _chat(url: str, args: argparse.Namespace) -> int:
    # Neither httpx's command line nor HTTP/2 is ever used by the client, and loading them
    # was two thirds of its imports (docs/http.md#terminal-client).
    without_httpx_command_line()
    without_http2()
    from cli.terminal import run_terminal

    try:
        return asyncio.run(run_terminal(url=url, name=args.name, time_zone=args.time_zone))
    except KeyboardInterrupt:
        return 0  # Ctrl-C at the prompt is a normal way to leave a chat


def _settings(overrides: dict[str, Any]) -> Settings:
    """The settings, or exit 2 with one line per bad setting, named as the operator wrote it
    (an environment variable), instead of a traceback."""
    from pydantic import ValidationError

    from settings import Settings

    try:
        return Settings(**overrides)
    except ValidationError as exc:
        for error in exc.errors():
            names = [str(part).upper() for part in error["loc"]]
            where = f"{', '.join(names)}: " if names else ""
            message = str(error["msg"]).removeprefix("Value error, ")  # a validator's own sentence
            print(f"error: setting {where}{message}", file=sys.stderr)
        sys.exit(2)


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.verb == "chat" and args.url:
        # A client given its server reads no setting: it starts without loading pydantic, and
        # shows warnings and worse only, without loading telemetry's metrics and traces.
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", force=True)
        sys.exit(_chat(args.url, args))
    _configure_logging(args.verb)
    overrides: dict[str, Any] = {}
    if getattr(args, "host", None):
        overrides["host"] = args.host
    if getattr(args, "port", None):
        overrides["port"] = args.port
    settings = _settings(overrides)
    _configure_logging(args.verb, settings.log_format)
    if args.verb == "serve":
        unsafe = settings.public_local_sign_in()
        if unsafe is not None:
            print(f"error: setting {unsafe}", file=sys.stderr)
            sys.exit(2)
        asyncio.run(serve(settings))
        sys.exit(0)
    if args.verb == "chat":
        sys.exit(_chat(f"http://{settings.host}:{settings.port}", args))
    if args.verb == "migrate":
        code = asyncio.run(_migrate(settings))
    elif args.verb == "users":
        code = asyncio.run(_user_token(settings, args.name))
    elif args.verb == "eval":
        code = asyncio.run(_eval(settings, args.suites, args.only, args.transcripts))
    elif args.wallet_verb == "topup":
        code = asyncio.run(_wallet_topup(settings, args.user, args.amount, args.ref))
    else:
        code = asyncio.run(_wallet_verify(settings))
    sys.exit(code)
