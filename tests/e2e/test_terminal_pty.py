"""`avagenc chat` in a pseudo-terminal against a real server: the prompt comes up, a line
gets the group's answer, the up arrow recalls the last line (not `^[[A`), history is kept
across runs, no library log line appears between chat lines, and Ctrl-D leaves cleanly; and
what another client writes appears as it is written, above the line being typed."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.conftest import App
from tests.fakes.servers import serve_in_process

ROOT = Path(__file__).resolve().parents[2]
UP = "\x1b[A"


def _control_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A child process on a pseudo-terminal: type into it, read its screen's text."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            args,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=ROOT,
            # Its own session with this pty as its controlling terminal, so Ctrl-C is a SIGINT
            # to it, as in a real terminal.
            start_new_session=True,
            preexec_fn=_control_terminal,
        )
        os.close(slave)
        self.screen = ""

    async def read_until(self, wanted: str, *, times: int = 1, timeout_s: float = 60) -> str:
        """The screen once `wanted` has appeared on it `times` times."""
        deadline = time.monotonic() + timeout_s
        while self.screen.count(wanted) < times:
            assert time.monotonic() < deadline, f"never saw {wanted!r} in {self.screen!r}"
            ready, _, _ = await asyncio.to_thread(select.select, [self.master], [], [], 0.2)
            if ready:
                try:
                    self.screen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the child closed the terminal
                    break
        return self.screen

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    async def wait(self, *, timeout_s: float = 30) -> int:
        code = await asyncio.to_thread(self.process.wait, timeout_s)
        os.close(self.master)
        return code


async def test_the_terminal_client_edits_recalls_and_leaves_cleanly(app: App, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm", "TZ": "Asia/Jakarta"}
    async with serve_in_process(app.app) as url:
        args = [sys.executable, "-m", "cli", "chat", "--url", url, "--name", "Budi"]
        first = Terminal(args, env)
        await first.read_until("you> ")
        first.type("turn on the bedroom light\r")
        await first.read_until("Zee> ")
        await first.read_until("you> ", times=2)
        first.type("/help\r")
        await first.read_until("you> ", times=3)
        first.type(UP + "\r")  # the last line again: /help
        await first.read_until("Commands:", times=2)
        await first.read_until("you> ", times=4)
        first.type("\x04")  # Ctrl-D at an empty prompt
        assert await first.wait() == 0
        screen = first.screen
        assert screen.count("Commands:") == 2, screen
        assert "^[[A" not in screen
        # Nothing but the chat: no log line of any library or of the client itself.
        assert not any(level in screen for level in ("INFO", "WARNING", "DEBUG", "Traceback")), screen

        history = tmp_path / "state" / "avagenc" / "chat_history"
        assert "turn on the bedroom light" in history.read_text()

        second = Terminal(args, env)
        await second.read_until("you> ")
        second.type(UP + UP)  # the line before /help, from the last run
        await second.read_until("turn on the bedroom light")
        second.type("\x03")  # Ctrl-C leaves too
        assert await second.wait() == 0


async def test_messages_written_elsewhere_appear_while_a_line_is_half_typed(app: App, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm", "TZ": "Asia/Jakarta"}
    async with serve_in_process(app.app) as url:
        terminal = Terminal([sys.executable, "-m", "cli", "chat", "--url", url, "--name", "Budi"], env)
        await terminal.read_until("you> ")
        terminal.type("turn on")  # half a line: nobody presses Enter while the other door talks
        await terminal.read_until("you> turn on")

        # The same person on another client (the web app, say) asks something.
        elsewhere = await app.sign_in("Budi")
        posted = await app.say(elsewhere, "hello there")
        assert posted.status_code == 200
        replies = [m["text"] for m in posted.json()["messages"] if m["author"] != "human"]
        assert replies
        await terminal.read_until("you> hello there")
        for reply in replies:
            await terminal.read_until(reply.splitlines()[0])
        # The half-typed line is drawn again below them, and typing goes on where it was.
        await terminal.read_until("you> turn on", times=2)
        tail = terminal.screen[terminal.screen.rindex(replies[-1].splitlines()[0]) :]
        assert "you> turn on" in tail
        terminal.type(" the bedroom light\r")
        await terminal.read_until("Zee> ")
        await terminal.read_until("you> ", times=terminal.screen.count("you> ") + 1)
        terminal.type("\x04")
        assert await terminal.wait() == 0

    screen = terminal.screen
    # Each message once: the other door's line and its answers, and this terminal's own turn.
    assert screen.count("you> hello there") == 1, screen
    assert screen.count("Zee> ") == 1, screen
    thread = await app.client.get("/v1/messages", params={"limit": 20}, headers=elsewhere)
    humans = [m["text"] for m in thread.json()["messages"] if m["author"] == "human"]
    assert humans == ["hello there", "turn on the bedroom light"], "the half-typed line was sent whole"
