"""`avagenc chat` in a pseudo-terminal against a real server, read as a person reads it: the
child's output goes through a terminal emulator (pyte), which also answers its cursor-position
requests as a real terminal does. The prompt comes up (the time it took is printed, never
asserted), Tab completes an `@` name, Ava's handoff reads "Ava → Zee", the status line shows
the wallet as the web app does and follows its charges, top-ups and a lost event stream, the
up arrow recalls the last line (history is kept across runs), no library log line appears
between chat lines, Ctrl-D and Ctrl-C leave cleanly; what another client writes appears as it
is written, above the line being typed; and `/call` talks through the speaker door."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
import wave
from collections.abc import Callable
from pathlib import Path

import pyte

from cli.status import rupiah
from tests.conftest import App
from tests.fakes.proxy import proxy_to
from tests.fakes.servers import serve_in_process
from tests.fakes.speech import rms, silence, speech_pcm16

ROOT = Path(__file__).resolve().parents[2]
UP = "\x1b[A"
TAB = "\t"
# ALSA's capture devices (cli/sound.py): none on CI.
HAS_MICROPHONE = any(Path("/dev/snd").glob("pcmC*D*c"))
# Tall enough that nothing printed in a test scrolls off the emulated screen.
ROWS, COLUMNS = 200, 100


def _control_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Emulator(pyte.Screen):
    """A screen that answers the program's questions (where is the cursor?) on its terminal."""

    def __init__(self, answer: Callable[[str], None]) -> None:
        super().__init__(COLUMNS, ROWS)
        self._answer = answer

    def write_process_input(self, data: str) -> None:
        self._answer(data)


class Terminal:
    """A child process on a pseudo-terminal: type into it, read its screen."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.started = time.monotonic()
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
        self.emulator = Emulator(self.type)
        self.stream = pyte.ByteStream(self.emulator)
        self.raw = b""  # every byte the program wrote

    @property
    def screen(self) -> str:
        return "\n".join(line.rstrip() for line in self.emulator.display).rstrip()

    @property
    def status_line(self) -> str:
        """The bottom toolbar: the last line drawn that starts with " wallet"."""
        lines = [line.strip() for line in self.emulator.display if line.startswith(" wallet")]
        return lines[-1] if lines else ""

    async def until(self, wanted: str | Callable[[Terminal], bool], *, timeout_s: float = 60) -> str:
        """The screen once `wanted` is on it (or holds for the terminal)."""
        check = (lambda t: wanted in t.screen) if isinstance(wanted, str) else wanted
        deadline = time.monotonic() + timeout_s
        while not check(self):
            assert time.monotonic() < deadline, f"never saw {wanted!r} on\n{self.screen}"
            ready, _, _ = await asyncio.to_thread(select.select, [self.master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the child closed the terminal
                    break
                self.raw += chunk
                self.stream.feed(chunk)
        return self.screen

    async def prompt(self, typed: str = "") -> None:
        """Wait for the prompt, with `typed` on it, as the last thing above the status line."""
        await self.until(lambda t: _last_line(t) == f"you> {typed}".rstrip())

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    async def wait(self, *, timeout_s: float = 30) -> int:
        code = await asyncio.to_thread(self.process.wait, timeout_s)
        ready, _, _ = await asyncio.to_thread(select.select, [self.master], [], [], 0)
        if ready:
            try:
                chunk = os.read(self.master, 65536)
                self.raw += chunk
                self.stream.feed(chunk)
            except OSError:
                pass
        os.close(self.master)
        return code


def _last_line(terminal: Terminal) -> str:
    lines = [line.rstrip() for line in terminal.emulator.display if line.strip()]
    lines = [line for line in lines if not line.startswith(" wallet")]
    return lines[-1] if lines else ""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TERM": "xterm",
        "TZ": "Asia/Jakarta",
        **extra,
    }


async def _balance(app: App, headers: dict[str, str]) -> int:
    wallet = await app.client.get("/v1/wallet", headers=headers)
    return int(wallet.json()["balance_micros"])


async def test_the_terminal_client_completes_shows_the_wallet_recalls_and_leaves_cleanly(
    app: App, tmp_path: Path
) -> None:
    async with serve_in_process(app.app) as url:
        args = [sys.executable, "-m", "cli", "chat", "--url", url, "--name", "Budi"]
        first = Terminal(args, _env(tmp_path))
        await first.prompt()
        print(f"start to prompt: {time.monotonic() - first.started:.2f} s")
        budi = await app.sign_in("Budi")
        granted = await _balance(app, budi)
        await first.until(lambda t: t.status_line == f"wallet {rupiah(granted)} · live")

        first.type("@z" + TAB)  # the team's names complete
        await first.prompt("@zee")
        first.type("\x15turn on the bedroom light\r")  # Ctrl-U: the line is cleared; Ava will choose
        await first.until("Zee> ")
        await first.prompt()
        charged = await _balance(app, budi)
        assert charged < granted, "the turn was charged"
        # The turn's charge reached the status line by its live event.
        await first.until(lambda t: t.status_line == f"wallet {rupiah(charged)} · live")

        first.type("/he" + TAB)  # commands complete too
        await first.prompt("/help")
        first.type("\r")
        await first.until("/hangup")
        await first.prompt()
        first.type(UP + "\r")  # the last line again: /help
        await first.until(lambda t: t.screen.count("Commands:") == 2)
        await first.prompt()
        first.type("\x04")  # Ctrl-D at an empty prompt
        assert await first.wait() == 0
        screen = first.screen
        assert "you> turn on the bedroom light" in screen
        # Zee was handed the line: Ava's handoff reads as such, not as a bare tag.
        assert "Ava → Zee" in screen and "Ava> @zee" not in screen, screen
        assert screen.count("Zee> ") == 1, screen
        assert "^[[A" not in screen
        # Nothing but the chat: no log line of any library or of the client itself.
        assert not any(level in screen for level in ("INFO", "WARNING", "DEBUG", "Traceback")), screen

        history = tmp_path / "state" / "avagenc" / "chat_history"
        assert "turn on the bedroom light" in history.read_text()

        second = Terminal(args, _env(tmp_path))
        await second.prompt()
        second.type(UP + UP)  # the line before /help, from the last run
        await second.prompt("turn on the bedroom light")
        second.type("\x03")  # Ctrl-C leaves too
        assert await second.wait() == 0


async def test_messages_written_elsewhere_appear_while_a_line_is_half_typed(app: App, tmp_path: Path) -> None:
    async with serve_in_process(app.app) as server_url, proxy_to(server_url) as (url, proxy):
        terminal = Terminal([sys.executable, "-m", "cli", "chat", "--url", url, "--name", "Budi"], _env(tmp_path))
        await terminal.prompt()
        terminal.type("turn on")  # half a line: nobody presses Enter while the other door talks
        await terminal.prompt("turn on")

        # The same person on another client (the web app, say) asks something.
        elsewhere = await app.sign_in("Budi")
        posted = await app.say(elsewhere, "hello there")
        assert posted.status_code == 200
        replies = [m["text"] for m in posted.json()["messages"] if m["author"] != "human"]
        assert replies
        await terminal.until("you> hello there")
        for reply in replies:
            await terminal.until(reply.splitlines()[0][:60])  # its first screen line
        # The half-typed line is drawn again below them, and typing goes on where it was.
        await terminal.prompt("turn on")

        # A top-up made elsewhere shows in the status line at once (its live event).
        me = await app.services.people.find_local("Budi")
        assert me is not None
        await app.services.wallet.top_up(me.id, amount_micros=50_000_000_000, ref="pty-topup", source="test")
        topped = await _balance(app, elsewhere)
        await terminal.until(lambda t: t.status_line == f"wallet {rupiah(topped)} · live")

        # The network goes: the status line says so, and says it again when it is back.
        proxy.drop()
        await terminal.until(lambda t: "offline — reconnecting" in t.status_line)
        proxy.restore()
        await terminal.until(lambda t: t.status_line.endswith("· live"))
        await terminal.prompt("turn on")

        terminal.type(" the bedroom light\r")
        await terminal.until("Zee> ")
        await terminal.prompt()
        terminal.type("\x04")
        assert await terminal.wait() == 0

    screen = terminal.screen
    # Each message once: the other door's line and its answers, and this terminal's own turn.
    assert screen.count("you> hello there") == 1, screen
    assert screen.count("Zee> ") == 1, screen
    thread = await app.client.get("/v1/messages", params={"limit": 20}, headers=elsewhere)
    humans = [m["text"] for m in thread.json()["messages"] if m["author"] == "human"]
    assert humans == ["hello there", "turn on the bedroom light"], "the half-typed line was sent whole"


async def test_call_speaks_through_the_speaker_door_and_the_reply_is_heard(app: App, tmp_path: Path) -> None:
    said = tmp_path / "said.wav"
    heard = tmp_path / "heard.wav"
    with wave.open(str(said), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(silence(0.3) + await speech_pcm16("turn on the bedroom light"))

    async with serve_in_process(app.app) as url:
        args = [sys.executable, "-m", "cli", "chat", "--url", url, "--name", "Budi"]
        if not HAS_MICROPHONE:  # CI and this machine
            bare = Terminal(args, _env(tmp_path))
            await bare.prompt()
            bare.type("/call\r")
            await bare.until("! no microphone here — /call needs a sound input device")
            await bare.prompt()  # and the chat goes on
            bare.type("\x04")
            assert await bare.wait() == 0

        env = _env(tmp_path, AVAGENC_CALL_INPUT=str(said), AVAGENC_CALL_OUTPUT=str(heard))
        terminal = Terminal(args, env)
        await terminal.prompt()
        terminal.type("/call\r")
        await terminal.until("(on a call with Ava")
        await terminal.until(lambda t: "on a call" in t.status_line)
        # The call's words reach the chat as the thread's messages, like any other door's.
        await terminal.until("Zee> ", timeout_s=90)
        await terminal.until("(call ended:", timeout_s=90)
        await terminal.until(lambda t: "on a call" not in t.status_line)
        terminal.type("\x04")
        assert await terminal.wait() == 0

    screen = terminal.screen
    spoken = [line for line in screen.splitlines() if line.startswith("you> ") and "bedroom" in line.lower()]
    assert spoken, screen
    assert "Ava → Zee" in screen, screen
    with wave.open(str(heard), "rb") as wav:
        assert wav.getframerate() == 16000
        reply = wav.readframes(wav.getnframes())
    assert len(reply) > 32_000 and rms(reply) > 300, "Ava's reply was heard, as speech"
    me = await app.services.people.find_local("Budi")
    assert me is not None
    thread = await app.services.threads.page(me.id, before=None, after=None, limit=50)
    assert [(m.author, m.channel) for m in thread][:1] == [("human", "voice")]
