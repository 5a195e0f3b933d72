"""`avagenc chat`: the group chat in a terminal, through the same HTTP API as the web app
(docs/http.md#terminal-client).

It exists so the product can be used and checked without a browser, and so the text API has a
second client that keeps it honest: this module speaks only HTTP, so what it shows is what any
client would get. From the rest of the code it borrows just the agents' names and the server's
own time-zone rule (restated here), so the client never sends a zone the server would refuse.
It imports nothing of the server (the team comes from `GET /v1/agents`), so it starts at once.
At a terminal, lines are read with prompt_toolkit: arrow keys edit and recall, history is kept
across runs (`$XDG_STATE_HOME/avagenc/chat_history`), Tab completes an `@` name or a command,
and the bottom line shows the wallet and whether live events flow (cli/status.py). `/call`
talks to Ava through the speaker door (cli/call.py). The session is remembered per server
(`$XDG_CONFIG_HOME/avagenc/sessions.json`, owner-only), so a start signs in only when the
server refuses it; the prompt comes up before the history and the wallet, which follow.

What is written elsewhere appears as it is written: the client follows `GET /v1/events`
and prints each new message of the thread (a line sent from the web app, a call's words,
a wake note, the group's answers to them, and this terminal's own answers as they come). A
line that arrives while the person is typing is printed above the line being edited, which
is drawn again as it was. Each message is printed once: by its id, and the person's own
line (which the terminal already shows as they typed it) by its text.

Guarantees: each line the person sends is one turn even when the connection drops — a retry
reuses the line's `client_id`, which the server makes idempotent; the person's own line is not
echoed back; a problem response is shown as one line and the conversation goes on; the exit code
is 0 after `/quit` or end of input and 1 when the session could not start.

It sits beside the command line (`cli/`), not in the chat domain: it is a client of the HTTP
edge, run only by `avagenc chat`, and nothing on the server side ever imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import getpass
import json
import os
import ssl
import sys
import threading
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import httpx

from cli.status import Status

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession

HUMAN = "human"
HISTORY_LIMIT = 20
# Lines of typed history kept across runs.
TYPED_HISTORY_MAX = 1000
# A turn runs to its end before the response comes back (the lead, any specialist, their tool
# calls), so reading waits far longer than connecting does.
TIMEOUT = httpx.Timeout(10.0, read=300.0)
PROMPT = "you> "
LOCALTIME = Path("/etc/localtime")
PROBLEM_TYPE = "application/problem+json"
# How long the live events wait before opening their stream again after losing it.
RECONNECT_S = 2.0
# The stream is quiet between events, with a keep-alive comment every SSE_KEEPALIVE_S (15 s).
EVENTS_TIMEOUT = httpx.Timeout(10.0, read=120.0)
# How long the first prompt waits for the live events to open (they follow on regardless).
EVENTS_OPEN_WAIT_S = 1.0
# Messages remembered as shown, so none is printed twice (older ones never come again).
SHOWN_MAX = 1000
# Servers whose session is remembered (cli/terminal.py RememberedSessions).
SESSIONS_MAX = 20
# Leaving the chat during a call: how long the call gets to hang up.
CALL_END_S = 3.0


COMMANDS = {
    "/help": "show this",
    "/call": "talk with Ava through this machine's microphone and speaker",
    "/hangup": "end the call",
    "/quit": "leave (Ctrl-D and Ctrl-C do the same)",
}


def help_text(team: Mapping[str, str]) -> str:
    """The commands, and the specialists a person can tag (the room's roster, from the server)."""
    tags = ", ".join(f"@{name}" for name in team if name != "ava") or "@name"
    commands = "".join(f"  {command:<8}{what}\n" for command, what in COMMANDS.items())
    return (
        f"Commands:\n{commands}"
        f"Anything else goes to the group: Ava answers, or {tags} to ask one of them directly (Tab completes)."
    )


async def run_terminal(
    *,
    url: str,
    name: str | None,
    time_zone: str | None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> int:
    """Sign in, show the recent thread, then send each line the person types until `/quit` or EOF."""
    source = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else sys.stdout
    zone = time_zone if time_zone is not None else local_time_zone()
    if zone is not None and _zone_key(zone) is None:
        _say(out, f"! Unknown time zone: {zone!r} is not an IANA time zone name (e.g. Asia/Jakarta).")
        return 1
    headers = {"time-zone": zone} if zone is not None else {}
    editing = source is sys.stdin and source.isatty()
    if editing:
        # prompt_toolkit is the largest import of the client: it loads on a thread while the
        # server signs the person in, so the prompt does not wait for both one after the other.
        threading.Thread(target=_load_line_editing, name="avagenc-load", daemon=True).start()
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=TIMEOUT, transport=transport, verify=_tls(url)
    ) as client:
        opened = await _open_session(client, url=url, name=name or _login_name(), out=out)
        if opened is None:
            return 1
        token, team = opened
        status = Status()
        with _line_editing(source, team, status) as session:
            screen = Screen(out, team, session=session)
            # Live events open before the history is read, so nothing written in between is
            # missed (a message in both is shown once); the history waits a moment for them.
            events_open = asyncio.Event()
            following = asyncio.create_task(_follow(client, screen, events_open, status), name="avagenc-events")
            calls = Calls(client, screen, status, token=token, time_zone=zone)
            catching_up = asyncio.create_task(_catch_up(client, screen, status, events_open), name="avagenc-catch-up")
            try:
                if session is None:  # a pipe's lines are answered after the history, in order
                    await catching_up
                # At a terminal the prompt is up at once: the history and the wallet are
                # printed above it and filled into the status line as they arrive.
                return await _converse(client, source, screen, status, calls)
            finally:
                await calls.end()
                for task in (catching_up, following):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task


async def _catch_up(client: httpx.AsyncClient, screen: Screen, status: Status, events_open: asyncio.Event) -> None:
    """The recent thread, once the live events are open (or have had a moment), then the wallet."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(events_open.wait(), EVENTS_OPEN_WAIT_S)
    await _show_history(client, screen)
    await _read_wallet(client, status)


def _tls(url: str) -> ssl.SSLContext | bool:
    """Certificates are checked for an https server as httpx always does. For an http one
    (the usual `avagenc chat` against a server on this machine) no certificate is ever read,
    and loading the trusted ones costs more than the rest of the start on a slow machine
    (BENCHMARKS.md, the terminal client's start): a context that trusts nobody is given
    instead, so a request that somehow reached TLS would fail rather than go unchecked."""
    if url.lower().startswith("https:"):
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def local_time_zone(*, environ: Mapping[str, str] | None = None, localtime: Path = LOCALTIME) -> str | None:
    """This machine's IANA zone when it can be told cheaply, else None (the server keeps its own idea).

    TZ wins when set, as it does for every program; if it is not an IANA name (a POSIX rule such
    as "JST-9") we send nothing rather than guess from /etc/localtime, which TZ overrides.
    """
    environ = os.environ if environ is None else environ
    configured = environ.get("TZ", "").removeprefix(":")
    if configured:
        return _zone_key(configured)
    try:
        target = str(localtime.resolve()) if localtime.is_symlink() else ""
    except OSError:
        return None
    return _zone_key(target) if target else None


def _zone_key(text: str) -> str | None:
    """The IANA key in a zone name or a zoneinfo path, checked by the server's own rule."""
    _, found, key = text.rpartition("zoneinfo/")
    key = key if found else text
    # Some systems link to the posix/ or right/ copies of the database.
    key = key.removeprefix("posix/").removeprefix("right/")
    # The server's rule (chat/zones.py): only names tzdata lists, never a folder or a path.
    if len(key) > 64 or key not in _zone_names():
        return None
    try:
        return ZoneInfo(key).key
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


@functools.cache
def _zone_names() -> frozenset[str]:
    """tzdata's names, read once: the listing walks the zone files, and the start asks twice."""
    return frozenset(available_timezones())


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container user with no passwd entry has no login name
        return "me"


async def _open_session(
    client: httpx.AsyncClient, *, url: str, name: str, out: TextIO
) -> tuple[str, dict[str, str]] | None:
    """(the session token, the team) with the session this machine remembers for `url` and
    `name` when the server still takes it, else a new sign-in (then remembered); None, said
    in one line, when there is no session to be had. Sets the client's Authorization."""
    sessions = RememberedSessions(sessions_file())
    remembered = sessions.get(url, name)
    if remembered is not None:
        token, user = remembered
        client.headers["Authorization"] = f"Bearer {token}"
        try:
            response = await client.get("/v1/agents")
        except httpx.TransportError as exc:
            _say(out, _transport_line(client, exc))
            return None
        if response.status_code != httpx.codes.UNAUTHORIZED:
            _say(out, f"Signed in as {user}. /help for commands.")
            return token, _team_of(response)
        sessions.forget(url)  # expired, revoked, or another server's secret: sign in again
        del client.headers["Authorization"]
    signed = await _sign_in(client, name=name, out=out)
    if signed is None:
        return None
    token, user = signed
    sessions.remember(url, name, token=token, user=user)
    client.headers["Authorization"] = f"Bearer {token}"
    return token, await _team(client)


async def _sign_in(client: httpx.AsyncClient, *, name: str, out: TextIO) -> tuple[str, str] | None:
    """(token, the person's name as the server has it), or None said in one line."""
    try:
        response = await client.post("/v1/auth/local", json={"name": name})
    except httpx.TransportError as exc:
        _say(out, _transport_line(client, exc))
        return None
    if response.is_error:
        _say(out, _problem_line(response))
        return None
    body = response.json()
    user = str(body["user"]["name"])
    _say(out, f"Signed in as {user}. /help for commands.")
    return str(body["token"]), user


async def _team(client: httpx.AsyncClient) -> dict[str, str]:
    """The room's members by handle, with their display names ({} if the server will not say)."""
    try:
        response = await client.get("/v1/agents")
    except httpx.TransportError:
        return {}
    return _team_of(response)


def _team_of(response: httpx.Response) -> dict[str, str]:
    if response.is_error:
        return {}
    with contextlib.suppress(ValueError, KeyError, TypeError):
        return {str(a["name"]): str(a["display_name"]) for a in response.json()["agents"]}
    return {}


def sessions_file(environ: Mapping[str, str] | None = None) -> Path:
    """Where sessions are remembered between runs (the XDG config folder, as gh and gcloud keep theirs)."""
    environ = os.environ if environ is None else environ
    config = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "avagenc" / "sessions.json"


class RememberedSessions:
    """The session token of each server this machine has chatted with, so a start does not
    sign in again (docs/http.md#terminal-client): one per server address, for the name it was
    signed in with, the newest SESSIONS_MAX servers. The file is readable by its owner only
    (0600, in a 0700 folder), as the token is as good as the person's sign-in; it is written
    whole to a new file and renamed over the old one, so a crash never leaves half of it. A
    file that cannot be read or written only means signing in again."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, url: str, name: str) -> tuple[str, str] | None:
        """(token, the person's name as the server has it) remembered for `url` and `name`."""
        entry = self._load().get(_server_key(url))
        if not isinstance(entry, dict) or entry.get("name") != name:
            return None
        token, user = entry.get("token"), entry.get("user")
        return (token, user) if isinstance(token, str) and isinstance(user, str) and token else None

    def remember(self, url: str, name: str, *, token: str, user: str) -> None:
        sessions = self._load()
        sessions.pop(_server_key(url), None)
        sessions[_server_key(url)] = {"name": name, "user": user, "token": token}  # newest last
        while len(sessions) > SESSIONS_MAX:
            del sessions[next(iter(sessions))]
        self._save(sessions)

    def forget(self, url: str) -> None:
        sessions = self._load()
        if sessions.pop(_server_key(url), None) is not None:
            self._save(sessions)

    def _load(self) -> dict[str, Any]:
        try:
            sessions = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return sessions if isinstance(sessions, dict) else {}

    def _save(self, sessions: Mapping[str, Any]) -> None:
        fresh = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(sessions, file, indent=1)
            os.replace(fresh, self.path)


def _server_key(url: str) -> str:
    return url.rstrip("/").lower()


def history_file(environ: Mapping[str, str] | None = None) -> Path:
    """Where typed lines are kept between runs (the XDG state folder)."""
    environ = os.environ if environ is None else environ
    state = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "avagenc" / "chat_history"


class TypedHistory:
    """The lines typed at the prompt, one per line of a file (the format GNU readline kept, so
    an older client's history carries over), the newest TYPED_HISTORY_MAX of them: the file is
    cut back to that whenever it has grown to twice as many."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[str]:
        """Oldest first."""
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        lines = [line for line in lines if line.strip()]
        if len(lines) > 2 * TYPED_HISTORY_MAX:
            lines = lines[-TYPED_HISTORY_MAX:]
            with contextlib.suppress(OSError):
                self.path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        return lines[-TYPED_HISTORY_MAX:]

    def add(self, line: str) -> None:
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as file:
                file.write(line.replace("\n", " ") + "\n")


def _load_line_editing() -> None:
    with contextlib.suppress(ImportError):  # then the prompt's own import says what is missing
        import prompt_toolkit.shortcuts  # noqa: F401


@contextlib.contextmanager
def _line_editing(source: TextIO, team: Mapping[str, str], status: Status) -> Iterator[PromptSession[str] | None]:
    """A prompt_toolkit prompt on a terminal's standard input (editing, history, completion,
    the status line); None for a pipe or a file, which are read line by line."""
    if source is not sys.stdin or not source.isatty():
        yield None
        return
    # Imported here: a pipe never pays for it, and the first prompt does not wait on the server.
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.document import Document
    from prompt_toolkit.history import History

    typed = TypedHistory(history_file())

    class Lines(History):
        def load_history_strings(self) -> Iterable[str]:
            return reversed(typed.load())  # newest first, as prompt_toolkit reads them

        def store_string(self, string: str) -> None:
            typed.add(string)

    class Names(Completer):
        """`@` names of the team anywhere in the line; commands at its start."""

        def get_completions(self, document: Document, complete_event: object) -> Iterator[Completion]:
            word = document.get_word_before_cursor(WORD=True)
            if word.startswith("@"):
                for name, display in team.items():
                    if name.startswith(word[1:].lower()):
                        yield Completion(f"@{name} ", -len(word), display=f"@{name}", display_meta=display)
            elif word.startswith("/") and document.text_before_cursor == word:
                for command, what in COMMANDS.items():
                    if command.startswith(word.lower()):
                        yield Completion(command, -len(word), display_meta=what)

    session: PromptSession[str] = PromptSession(
        PROMPT, history=Lines(), completer=Names(), complete_while_typing=False, bottom_toolbar=status.line
    )
    # The bottom line is drawn again when what it says changes (a wallet event), not on a timer.
    status.changed = session.app.invalidate
    yield session


async def _show_history(client: httpx.AsyncClient, screen: Screen) -> None:
    try:
        response = await client.get("/v1/messages", params={"limit": HISTORY_LIMIT})
    except httpx.TransportError as exc:
        screen.say(_transport_line(client, exc))
        return
    if response.is_error:
        screen.say(_problem_line(response))
        return
    page = response.json()
    lines = ["(earlier messages are in the web app)"] if page["has_more"] else []
    lines += [line for message in page["messages"] if (line := screen.line(message)) is not None]
    if lines:  # at once: above a prompt that is up, each print draws the prompt again
        screen.say("\n".join(lines))


class Screen:
    """Where the chat's lines go, printed once each, and never through the line being typed."""

    def __init__(self, out: TextIO, team: Mapping[str, str], *, session: PromptSession[str] | None = None) -> None:
        self.out = out
        self.team = team
        self.session = session
        self._shown: dict[str, None] = {}  # message ids, oldest first
        self._own: Counter[str] = Counter()  # lines sent from here whose message has not come back

    def say(self, text: str) -> None:
        if self.session is None:
            _say(self.out, text)
            return
        from prompt_toolkit import print_formatted_text

        # Above the prompt while one is up (prompt_toolkit draws it again, with what was typed).
        print_formatted_text(text, output=self.session.output)

    def sent(self, text: str) -> None:
        """A line the person typed here: its message is on the screen already."""
        self._own[text] += 1

    def message(self, message: Mapping[str, Any]) -> None:
        """Show a message of the thread unless it has been shown (or typed here)."""
        if (line := self.line(message)) is not None:
            self.say(line)

    def line(self, message: Mapping[str, Any]) -> str | None:
        """The line to show for a message of the thread, counted as shown; None when it has
        been shown (or typed here)."""
        message_id = str(message.get("id"))
        if message_id in self._shown:
            return None
        self._shown[message_id] = None
        if len(self._shown) > SHOWN_MAX:
            del self._shown[next(iter(self._shown))]
        if message.get("author") == HUMAN and self._own[text := str(message.get("text"))] > 0:
            self._own[text] -= 1
            return None
        return _message_line(message, self.team)


async def _converse(client: httpx.AsyncClient, source: TextIO, screen: Screen, status: Status, calls: Calls) -> int:
    # A terminal that is not this process's own standard input (a test's) gets a plain prompt.
    prompt = PROMPT if screen.session is None and source.isatty() else ""
    while True:
        if prompt:
            screen.out.write(prompt)
            screen.out.flush()
        line = await _read_line(source, screen.session)
        if not line:  # end of input
            return 0
        text = line.strip()
        if not text:
            continue
        if text == "/quit":
            return 0
        if text == "/help":
            screen.say(help_text(screen.team))
        elif text == "/call":
            calls.start()
        elif text == "/hangup":
            calls.hang_up()
        else:
            await _send(client, text, screen)
            if status.live is not True:  # the charge's event may not come: read the balance
                await _read_wallet(client, status)


class Calls:
    """The person's one call from this terminal (cli/call.py), held beside the chat: lines can
    still be typed while it runs, and its words reach the screen as the thread's messages."""

    def __init__(
        self, client: httpx.AsyncClient, screen: Screen, status: Status, *, token: str, time_zone: str | None
    ) -> None:
        self.client = client
        self.screen = screen
        self.status = status
        self.token = token
        self.time_zone = time_zone
        self._task: asyncio.Task[None] | None = None
        self._hang_up = asyncio.Event()

    def start(self) -> None:
        from cli.sound import NoSound, open_sound

        if self._task is not None and not self._task.done():
            self.screen.say("(a call is on already: /hangup ends it)")
            return
        try:
            sound = open_sound(os.environ)
        except NoSound as exc:
            self.screen.say(f"! {exc}")
            return
        self._hang_up = asyncio.Event()
        self._task = asyncio.create_task(self._hold(sound), name="avagenc-call")

    def hang_up(self) -> None:
        if self._task is None or self._task.done():
            self.screen.say("(no call is on: /call starts one)")
            return
        self._hang_up.set()

    async def end(self) -> None:
        """Leaving the chat hangs up a call that is on."""
        if self._task is not None and not self._task.done():
            self._hang_up.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait({self._task}, timeout=CALL_END_S)
            self._task.cancel()

    async def _hold(self, sound: Any) -> None:
        from cli.call import call

        self.status.calling(True)
        try:
            await call(
                url=str(self.client.base_url),
                token=self.token,
                time_zone=self.time_zone,
                sound=sound,
                say=self.screen.say,
                hang_up=self._hang_up,
            )
        finally:
            self.status.calling(False)
        await _read_wallet(self.client, self.status)  # the call's speech is charged as it ends


def _wallet_event(data: Any) -> int | None:
    if isinstance(data, dict) and isinstance(data.get("balance_micros"), int):
        return int(data["balance_micros"])
    return None


async def _read_wallet(client: httpx.AsyncClient, status: Status) -> None:
    """The balance for the status line (`GET /v1/wallet`); a server that will not say leaves it."""
    with contextlib.suppress(httpx.TransportError, ValueError):
        response = await client.get("/v1/wallet")
        balance = _wallet_event(response.json()) if response.is_success else None
        if balance is not None:
            status.balance(balance)


async def _follow(client: httpx.AsyncClient, screen: Screen, opened: asyncio.Event, status: Status) -> None:
    """Show each message written to the thread from now on, wherever it was written, and each
    new balance, until cancelled; a lost stream is opened again where it left off (the status
    line says "offline" meanwhile). A refusal (too many streams) is said once and ends following
    (a server without live events, silently): the chat goes on without it."""
    last_id: str | None = None
    while True:
        headers = {"Last-Event-ID": last_id} if last_id is not None else {}
        try:
            async with client.stream("GET", "/v1/events", headers=headers, timeout=EVENTS_TIMEOUT) as response:
                opened.set()
                if response.is_error:
                    await response.aread()
                    status.streaming(None)
                    if response.status_code != 404:  # a server with no live events: nothing to say
                        screen.say(f"{_problem_line(response)} (messages from elsewhere will not show here)")
                    return
                status.streaming(True)
                async for event_id, kind, data in _server_events(response):
                    last_id = event_id or last_id
                    if kind == "message" and isinstance(data, dict):
                        screen.message(data)
                    elif kind == "wallet.changed" and (balance := _wallet_event(data)) is not None:
                        status.balance(balance)
        except httpx.TransportError:
            opened.set()  # no server to wait for
        status.streaming(False)
        await asyncio.sleep(RECONNECT_S)


async def _server_events(response: httpx.Response) -> AsyncIterator[tuple[str | None, str, Any]]:
    """(id, type, JSON data) of each event in a text/event-stream; comments are skipped."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line:
            if not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
            continue
        if "data" in fields:
            with contextlib.suppress(ValueError):
                yield fields.get("id"), fields.get("event", "message"), json.loads(fields["data"])
        fields = {}


async def _read_line(source: TextIO, session: PromptSession[str] | None) -> str:
    """The next line with its newline; "" at the end of input (Ctrl-D, Ctrl-C at a terminal)."""
    if session is not None:
        try:
            return await session.prompt_async() + "\n"
        except (EOFError, KeyboardInterrupt):
            return ""
    return await _next_line(source)


async def _next_line(source: TextIO) -> str:
    """A line of a pipe or file, read on a daemon thread so the event loop is not blocked.

    Not `asyncio.to_thread`: at exit, asyncio.run waits for its executor's threads, and a
    thread stuck reading would hold the process open until more input came.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def deliver(line: str) -> None:
        if not future.done():
            future.set_result(line)

    def read() -> None:
        line = source.readline()
        with contextlib.suppress(RuntimeError):  # the loop closed while we waited
            loop.call_soon_threadsafe(deliver, line)

    threading.Thread(target=read, name="avagenc-stdin", daemon=True).start()
    return await future


async def _send(client: httpx.AsyncClient, text: str, screen: Screen) -> None:
    """Post one line as one turn and show what the group wrote back (what the live events
    have not shown already)."""
    screen.sent(text)
    try:
        response = await _post_turn(client, {"text": text, "client_id": str(uuid.uuid4())})
    except httpx.TransportError as exc:
        screen.say(_transport_line(client, exc))
        return
    if response.is_error:
        screen.say(_problem_line(response))
        return
    turn = response.json()
    for message in turn["messages"]:
        screen.message(message)
    for line in _failed_runs(turn, screen.team):
        screen.say(line)


async def _post_turn(client: httpx.AsyncClient, body: Mapping[str, str]) -> httpx.Response:
    try:
        return await client.post("/v1/messages", json=body)
    except httpx.TransportError:
        # Once more with the same body: the same client_id returns the first attempt's turn if
        # it got through, so the retry can never make the group answer twice.
        return await client.post("/v1/messages", json=body)


def _failed_runs(turn: Mapping[str, Any], team: Mapping[str, str]) -> list[str]:
    """A line for each run of a turn that could not finish (silence is a valid answer and prints nothing)."""
    lines: list[str] = []
    for run in turn["runs"]:
        if run["status"] == "failed":
            error = run.get("error") or {}
            detail = error.get("detail") or error.get("type") or "unknown error"
            lines.append(f"({_display_name(run['agent'], team)} could not finish: {detail})")
    return lines


def _message_line(message: Mapping[str, Any], team: Mapping[str, str]) -> str:
    author = message["author"]
    text = str(message["text"])
    if author == "ava" and (handoff := _handoff(text, team)) is not None:
        return handoff
    who = "you" if author == HUMAN else _display_name(author, team)
    return f"{who}> {text}"


def _handoff(text: str, team: Mapping[str, str]) -> str | None:
    """Ava's handoff ("@zee", maybe with a short phrase: docs/agents.md#handoff) as "Ava → Zee",
    or None when the message is not one."""
    tag, _, rest = text.partition(" ")
    name = tag.removeprefix("@").lower()
    if not tag.startswith("@") or name == "ava" or (team and name not in team):
        return None
    who = _display_name(name, team)
    return f"Ava → {who}: {rest.strip()}" if rest.strip() else f"Ava → {who}"


def _display_name(author: str, team: Mapping[str, str]) -> str:
    return team.get(author) or author.capitalize()


def _problem_line(response: httpx.Response) -> str:
    """One line for an error response: the problem's title and detail, or the bare status."""
    if response.headers.get("content-type", "").startswith(PROBLEM_TYPE):
        with contextlib.suppress(ValueError):
            problem = response.json()
            title = problem.get("title") or f"HTTP {response.status_code}"
            detail = problem.get("detail")
            return f"! {title}: {detail}" if detail else f"! {title}"
    return f"! HTTP {response.status_code} {response.reason_phrase}".rstrip()


def _transport_line(client: httpx.AsyncClient, exc: httpx.TransportError) -> str:
    server = str(client.base_url).rstrip("/")
    if isinstance(exc, httpx.ConnectError):
        return f"! cannot reach the server at {server} — is `make run` running?"
    if isinstance(exc, httpx.TimeoutException):
        return f"! the server at {server} did not answer in time; try again."
    return f"! lost the server at {server}: {exc or type(exc).__name__}"


def _say(out: TextIO, text: str) -> None:
    print(text, file=out, flush=True)
