"""`avagenc chat` (cli/terminal.py) against a fake text API held in memory.

The fake keeps the server's state — the thread, the token it issued, the client_id of every
POST, the headers it saw — and answers as docs/http.md says, including problem+json and the
client_id replay. Tests assert on what the person would read and on that state, not on calls.
"""

from __future__ import annotations

import io
import json
import stat
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.status import rupiah
from cli.terminal import (
    SESSIONS_MAX,
    TYPED_HISTORY_MAX,
    RememberedSessions,
    TypedHistory,
    local_time_zone,
    run_terminal,
    sessions_file,
)

# A hung read must fail the test, not stall the run.
pytestmark = pytest.mark.timeout(10)


@pytest.fixture(autouse=True)
def config_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Each test's remembered sessions in its own folder, never the person's ~/.config."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config"


URL = "http://avagenc.test"
TEXT_CHARS_MAX = 4000
PROBLEM = "application/problem+json"


@dataclass
class Answer:
    """What the group writes back to one line: (author, text) messages and (agent, detail) failed runs."""

    messages: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class FakeServer:
    answers: dict[str, Answer] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    local_sign_in: bool = True
    responses_to_lose: int = 0  # handle the POST, then drop the connection before answering
    token: str = "token-1"
    names: list[str] = field(default_factory=list)
    client_ids: list[str] = field(default_factory=list)
    zones: list[str | None] = field(default_factory=list)
    unauthorized: int = 0
    _turns: dict[str, dict[str, Any]] = field(default_factory=dict)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.zones.append(request.headers.get("time-zone"))
        route = (request.method, request.url.path)
        if route == ("POST", "/v1/auth/local"):
            return self._sign_in(json.loads(request.content))
        if request.headers.get("authorization") != f"Bearer {self.token}":
            self.unauthorized += 1
            return _problem(401, "Sign in first", "Send Authorization: Bearer <token>.")
        if route == ("GET", "/v1/messages"):
            limit = int(request.url.params["limit"])
            return httpx.Response(
                200, json={"messages": self.messages[-limit:], "has_more": len(self.messages) > limit}
            )
        if route == ("POST", "/v1/messages"):
            response = self._post(json.loads(request.content))
            if self.responses_to_lose:
                self.responses_to_lose -= 1
                raise httpx.ReadError("connection reset", request=request)
            return response
        return _problem(404, "Not found")

    def human_lines(self) -> list[str]:
        return [m["text"] for m in self.messages if m["author"] == "human"]

    def _sign_in(self, body: dict[str, Any]) -> httpx.Response:
        if not self.local_sign_in:
            return _problem(404, "Local sign-in is not available", "This server signs people in with Firebase.")
        self.names.append(body["name"])
        return httpx.Response(200, json={"token": self.token, "user": {"id": "p1", "name": body["name"]}})

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        client_id = body["client_id"]
        self.client_ids.append(client_id)
        text = body["text"]
        if len(text) > TEXT_CHARS_MAX:
            detail = f"A message holds at most {TEXT_CHARS_MAX} characters; this one has {len(text)}."
            return _problem(422, "The message is too long", detail)
        if client_id not in self._turns:  # a repeated client_id replays the first turn
            self._turns[client_id] = self._run_turn(text)
        return httpx.Response(200, json=self._turns[client_id])

    def _run_turn(self, text: str) -> dict[str, Any]:
        answer = self.answers.get(text, Answer())
        written = [self._append("human", text)] + [self._append(a, t) for a, t in answer.messages]
        runs = [_run(agent, "succeeded", None) for agent, _ in answer.messages]
        runs += [_run(agent, "failed", detail) for agent, detail in answer.failed]
        return {"messages": written, "runs": runs}

    def _append(self, author: str, text: str) -> dict[str, Any]:
        seq = len(self.messages) + 1
        message = {
            "id": f"m{seq}",
            "seq": seq,
            "author": author,
            "text": text,
            "created_at": "2026-05-09T07:00:00+00:00",
            "channel": "text",
            "run_id": None if author == "human" else f"r{seq}",
            "emotions": [],
        }
        self.messages.append(message)
        return message


def _problem(status: int, title: str, detail: str | None = None) -> httpx.Response:
    body = {"type": "x", "title": title, "status": status, "detail": detail}
    return httpx.Response(status, json=body, headers={"content-type": PROBLEM})


def _run(agent: str, status: str, detail: str | None) -> dict[str, Any]:
    error = {"type": "model_unavailable", "detail": detail} if status == "failed" else None
    return {"id": f"run-{agent}", "agent": agent, "trigger": "human", "status": status, "error": error}


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


async def chat(
    server: FakeServer, typed: str, *, stdin: io.StringIO | None = None, time_zone: str | None = "Asia/Jakarta"
) -> tuple[int, str]:
    out = io.StringIO()
    code = await run_terminal(
        url=URL,
        name="Dita",
        time_zone=time_zone,
        stdin=stdin if stdin is not None else io.StringIO(typed),
        stdout=out,
        transport=server.transport(),
    )
    return code, out.getvalue()


async def test_agents_answer_and_the_persons_line_is_not_echoed() -> None:
    server = FakeServer(answers={"hello": Answer(messages=[("ava", "Hi Dita!")])})

    code, output = await chat(server, "hello\n/quit\n")

    assert code == 0
    assert output.splitlines()[1:] == ["Ava> Hi Dita!"]
    assert server.human_lines() == ["hello"]
    assert server.names == ["Dita"]
    assert server.unauthorized == 0


async def test_a_handoff_prints_every_agent_message_in_order() -> None:
    answer = Answer(messages=[("ava", "@zee"), ("zee", "The bedroom light is on.")])
    server = FakeServer(answers={"light please": answer})

    _, output = await chat(server, "light please\n")

    # Ava's bare handoff tag reads as who she handed to (docs/agents.md#handoff).
    assert output.splitlines()[1:] == ["Ava → Zee", "Zee> The bedroom light is on."]


async def test_a_handoff_with_a_phrase_keeps_it_and_a_mention_in_a_reply_is_not_one() -> None:
    answer = Answer(messages=[("ava", "@rafal only the unread ones"), ("ava", "Ask @zee, not me.")])
    server = FakeServer(answers={"mail": answer})

    _, output = await chat(server, "mail\n")

    assert output.splitlines()[1:] == ["Ava → Rafal: only the unread ones", "Ava> Ask @zee, not me."]


async def test_a_failed_run_shows_its_detail() -> None:
    answer = Answer(failed=[("zee", "The model did not answer in time; try again.")])
    server = FakeServer(answers={"@zee lights off": answer})

    _, output = await chat(server, "@zee lights off\n")

    assert "(Zee could not finish: The model did not answer in time; try again.)" in output


async def test_silence_prints_nothing() -> None:
    server = FakeServer()

    code, output = await chat(server, "thanks\n")

    assert code == 0
    assert output.splitlines()[1:] == []
    assert server.human_lines() == ["thanks"]


async def test_a_lost_response_is_retried_once_with_the_same_client_id() -> None:
    server = FakeServer(answers={"hello": Answer(messages=[("ava", "Hi!")])}, responses_to_lose=1)

    _, output = await chat(server, "hello\n")

    first, retry = server.client_ids
    assert first == retry
    assert server.human_lines() == ["hello"]  # one turn, not two
    assert output.count("Ava> Hi!") == 1


async def test_each_line_gets_its_own_client_id() -> None:
    server = FakeServer()

    await chat(server, "one\ntwo\n")

    assert len(set(server.client_ids)) == 2


async def test_a_second_transport_error_is_reported_and_the_loop_goes_on() -> None:
    server = FakeServer(answers={"again": Answer(messages=[("ava", "Here.")])}, responses_to_lose=2)

    code, output = await chat(server, "hello\nagain\n")

    assert code == 0
    assert f"! lost the server at {URL}" in output
    assert "Ava> Here." in output
    assert server.human_lines() == ["hello", "again"]


async def test_a_problem_response_is_shown_and_the_loop_goes_on() -> None:
    server = FakeServer(answers={"short": Answer(messages=[("ava", "Better.")])})

    code, output = await chat(server, "x" * 4001 + "\nshort\n")

    assert code == 0
    assert "! The message is too long: A message holds at most 4000 characters; this one has 4001." in output
    assert "Ava> Better." in output
    assert server.human_lines() == ["short"]


async def test_history_shows_the_last_twenty_messages_first() -> None:
    server = FakeServer()
    for n in range(25):
        server._append("human" if n % 2 else "yori", f"message {n}")

    _, output = await chat(server, "/quit\n")

    shown = [line for line in output.splitlines() if "message " in line]
    assert shown == [f"{'you' if n % 2 else 'Yori'}> message {n}" for n in range(5, 25)]


async def test_blank_lines_are_skipped_and_quit_ends_before_later_lines() -> None:
    server = FakeServer()

    code, _ = await chat(server, "\n   \n/quit\nnever sent\n")

    assert code == 0
    assert server.client_ids == []


async def test_end_of_input_exits_zero() -> None:
    code, _ = await chat(FakeServer(), "")

    assert code == 0


async def test_help_lists_the_commands_without_sending() -> None:
    server = FakeServer()

    _, output = await chat(server, "/help\n")

    assert all(command in output for command in ("/help", "/call", "/hangup", "/quit")), output
    assert server.client_ids == []


async def test_call_without_a_microphone_says_so_in_one_line_and_the_chat_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("AVAGENC_CALL_INPUT", raising=False)
    monkeypatch.setattr("cli.sound.SOUND_CARDS", tmp_path)  # a machine with no sound device
    server = FakeServer(answers={"hi": Answer(messages=[("ava", "Hello!")])})

    code, output = await chat(server, "/call\n/hangup\nhi\n")

    assert code == 0
    assert output.splitlines()[1:] == [
        "! no microphone here — /call needs a sound input device",
        "(no call is on: /call starts one)",
        "Ava> Hello!",
    ]
    assert server.human_lines() == ["hi"]


async def test_call_from_a_file_that_is_not_speech_pcm_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stereo = tmp_path / "stereo.wav"
    with wave.open(str(stereo), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(b"\x00" * 640)
    monkeypatch.setenv("AVAGENC_CALL_INPUT", str(stereo))

    _, output = await chat(FakeServer(), "/call\n")

    assert output.splitlines()[1:] == [f"! {stereo} must be 16-bit mono PCM at 8000, 16000, 24000, 48000 Hz"]


@pytest.mark.parametrize(
    ("micros", "shown"),
    [
        (0, "Rp 0"),
        (4_999_000_000, "Rp 4.999"),
        (12_345_678_900, "Rp 12.345,68"),
        (1_500_000, "Rp 1,5"),
        (1_004_999, "Rp 1"),
        (-2_500_000, "Rp -2,5"),
    ],
)
def test_the_status_line_writes_rupiah_as_the_web_app_does(micros: int, shown: str) -> None:
    assert rupiah(micros) == shown


async def test_the_prompt_shows_only_on_a_terminal() -> None:
    _, piped = await chat(FakeServer(), "hi\n")
    _, typed = await chat(FakeServer(), "", stdin=Tty("hi\n"))

    assert "you> " not in piped
    assert typed.count("you> ") == 2  # before "hi" and before end of input


async def test_every_request_carries_the_given_time_zone() -> None:
    server = FakeServer()

    await chat(server, "hi\n", time_zone="Asia/Jakarta")

    # Sign-in, the team, history, the line, and the live events (when they opened in time).
    assert len(server.zones) >= 4 and set(server.zones) == {"Asia/Jakarta"}


async def test_the_local_zone_is_sent_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Paris")
    server = FakeServer()

    await chat(server, "", time_zone=None)

    assert set(server.zones) == {"Europe/Paris"}


async def test_an_unknown_time_zone_stops_before_any_request() -> None:
    server = FakeServer()

    code, output = await chat(server, "hi\n", time_zone="Mars/Olympus")

    assert code == 1
    assert "Unknown time zone" in output
    assert server.zones == []


async def test_the_login_name_signs_in_when_no_name_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "dita")
    server = FakeServer()

    await run_terminal(
        url=URL, name=None, time_zone=None, stdin=io.StringIO(""), stdout=io.StringIO(), transport=server.transport()
    )

    assert server.names == ["dita"]


async def test_an_unreachable_server_returns_one() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    out = io.StringIO()
    code = await run_terminal(
        url=URL,
        name="Dita",
        time_zone=None,
        stdin=io.StringIO("hi\n"),
        stdout=out,
        transport=httpx.MockTransport(refuse),
    )

    assert code == 1
    assert out.getvalue() == f"! cannot reach the server at {URL} — is `make run` running?\n"


async def test_a_refused_sign_in_returns_one_with_the_problem() -> None:
    server = FakeServer(local_sign_in=False)

    code, output = await chat(server, "hi\n")

    assert code == 1
    assert output == "! Local sign-in is not available: This server signs people in with Firebase.\n"
    assert server.client_ids == []


def test_tz_names_the_local_zone() -> None:
    assert local_time_zone(environ={"TZ": ":Asia/Tokyo"}) == "Asia/Tokyo"
    assert local_time_zone(environ={"TZ": "/usr/share/zoneinfo/Asia/Jakarta"}) == "Asia/Jakarta"


def test_a_posix_tz_sends_no_zone_rather_than_a_guess(tmp_path: Path) -> None:
    link = _localtime_link(tmp_path, "Asia/Jakarta")

    assert local_time_zone(environ={"TZ": "JST-9"}, localtime=link) is None


def test_the_localtime_link_names_the_zone(tmp_path: Path) -> None:
    assert local_time_zone(environ={}, localtime=_localtime_link(tmp_path, "America/Sao_Paulo")) == "America/Sao_Paulo"
    assert local_time_zone(environ={}, localtime=_localtime_link(tmp_path, "posix/Europe/Oslo")) == "Europe/Oslo"


def test_no_tz_and_no_link_means_no_zone(tmp_path: Path) -> None:
    plain = tmp_path / "localtime"
    plain.write_bytes(b"TZif")

    assert local_time_zone(environ={}, localtime=plain) is None
    assert local_time_zone(environ={}, localtime=tmp_path / "missing") is None


def _localtime_link(root: Path, key: str) -> Path:
    target = root / "usr/share/zoneinfo" / key
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"TZif")
    link = root / f"localtime-{key.replace('/', '-')}"
    link.symlink_to(target)
    return link


def test_typed_history_keeps_the_newest_lines_and_cuts_the_file_back(tmp_path: Path) -> None:
    path = tmp_path / "avagenc" / "chat_history"
    typed = TypedHistory(path)
    for n in range(2 * TYPED_HISTORY_MAX + 1):
        typed.add(f"line {n}")

    lines = typed.load()

    assert len(lines) == TYPED_HISTORY_MAX
    assert lines[-1] == f"line {2 * TYPED_HISTORY_MAX}"  # oldest first, the newest last
    assert path.read_text().splitlines() == lines  # the file was cut back to them
    typed.add("two\nlines")  # a pasted newline never splits an entry
    assert typed.load()[-1] == "two lines"


async def test_the_next_start_uses_the_remembered_session_without_signing_in(config_folder: Path) -> None:
    server = FakeServer(answers={"hello": Answer(messages=[("ava", "Hi Dita!")])})
    await chat(server, "")

    code, output = await chat(server, "hello\n")

    assert code == 0
    assert server.names == ["Dita"], "signed in once, on the first start"
    assert output.startswith("Signed in as Dita.")
    assert "Ava> Hi Dita!" in output
    assert server.unauthorized == 0
    path = sessions_file()
    assert path.parent == config_folder / "avagenc"
    # Only its owner can read the token.
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


async def test_a_refused_remembered_session_is_forgotten_and_the_person_signs_in_again() -> None:
    server = FakeServer(answers={"hello": Answer(messages=[("ava", "Hi Dita!")])})
    await chat(server, "")
    server.token = "token-2"  # the first session expired or was signed out: 401 from now on

    code, output = await chat(server, "hello\n")

    assert code == 0
    assert server.names == ["Dita", "Dita"]
    assert server.unauthorized == 1, "one refused request, then the new session"
    assert output.startswith("Signed in as Dita.") and "Ava> Hi Dita!" in output
    assert RememberedSessions(sessions_file()).get(URL, "Dita") == ("token-2", "Dita")


async def test_another_name_signs_in_and_replaces_the_servers_session() -> None:
    server = FakeServer()
    await chat(server, "")

    await run_terminal(
        url=URL, name="Sari", time_zone=None, stdin=io.StringIO(""), stdout=io.StringIO(), transport=server.transport()
    )

    assert server.names == ["Dita", "Sari"]
    sessions = RememberedSessions(sessions_file())
    assert sessions.get(URL, "Sari") == ("token-1", "Sari")
    assert sessions.get(URL, "Dita") is None


def test_sessions_are_kept_per_server_for_the_newest_servers_only(tmp_path: Path) -> None:
    sessions = RememberedSessions(tmp_path / "avagenc" / "sessions.json")
    for n in range(SESSIONS_MAX + 1):
        sessions.remember(f"http://host-{n}:8000", "Dita", token=f"t{n}", user="Dita")

    assert sessions.get("http://host-0:8000", "Dita") is None, "the oldest server was let go"
    assert sessions.get(f"http://host-{SESSIONS_MAX}:8000/", "Dita") == (f"t{SESSIONS_MAX}", "Dita")
    assert len(json.loads(sessions.path.read_text())) == SESSIONS_MAX


def test_an_unreadable_sessions_file_means_signing_in(tmp_path: Path) -> None:
    path = tmp_path / "avagenc" / "sessions.json"
    path.parent.mkdir()
    path.write_text("{not json")

    assert RememberedSessions(path).get(URL, "Dita") is None
    RememberedSessions(path).remember(URL, "Dita", token="t", user="Dita")  # written anew
    assert RememberedSessions(path).get(URL, "Dita") == ("t", "Dita")


def test_sessions_live_in_the_xdg_config_folder(tmp_path: Path) -> None:
    assert sessions_file({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "avagenc" / "sessions.json"
    assert sessions_file({"HOME": "/ignored"}).parts[-3:] == (".config", "avagenc", "sessions.json")
