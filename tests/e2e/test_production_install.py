"""The production lock is enough to serve, speak and hear, proven by installing it.

No Docker engine runs on these machines, so the image's build steps run here instead
(docs/operations.md#the-image): a clean virtualenv, the production lock installed with
`--require-hashes` as the Dockerfile installs it, the project copied the way the
Dockerfile's `COPY` lines copy it and installed without dependencies, the multilingual
Whisper joined. Then `avagenc serve` starts from that virtualenv alone (outside the
repository, with no path into it) and a person gets `/readyz`, a typed answer and a speaker
call that hears a spoken request and speaks the reply, and the image's HEALTHCHECK command
passes. tests/unit/test_image.py checks the same inputs statically; this test proves they work.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from settings import Settings
from tests.e2e.test_speaker import START, say
from tests.fakes.servers import serve_subprocess
from tests.fakes.speech import Heard, listen, rms, wait_for, wait_quiet

ROOT = Path(__file__).resolve().parents[2]
# The installer the project pins (scripts/install, Dockerfile), from the development venv.
UV = Path(sys.executable).parent / "uv"
# Each step's bound; with uv's cache warm the whole install takes seconds.
STEP_TIMEOUT_S = 300
# About 30 s on a quiet machine, over a minute on a busy one: run by `make test` and CI
# with the other whole-process tests, skipped locally with -m 'not slow_fault'.
pytestmark = [pytest.mark.timeout(420), pytest.mark.slow_fault]


def _copied_sources() -> list[str]:
    """What the Dockerfile's build stage copies into /src (after the lock): its `COPY` lines."""
    build_stage = (ROOT / "Dockerfile").read_text().split("\nFROM ")[1]
    sources: list[str] = []
    for line in build_stage.splitlines():
        copied = re.match(r"^COPY (?!--)(.+) \S+$", line)
        if copied:
            sources += copied.group(1).split()
    assert "pyproject.toml" in sources and "voice" in sources, sources
    return [s for s in sources if s != "requirements-prod.lock"]


def _health_check() -> list[str]:
    """The image's HEALTHCHECK command (its exec form), as Docker would run it."""
    dockerfile = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    found = re.search(r"^HEALTHCHECK .*?CMD (\[.*\])$", dockerfile, re.MULTILINE)
    assert found, "the Dockerfile has a HEALTHCHECK in exec form"
    command: list[str] = json.loads(found.group(1))
    return command


def _run(*args: str | Path, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        [str(a) for a in args], env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, f"{args[:3]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


def _without_repository() -> dict[str, str]:
    """This process's environment minus anything that would lead Python back into the
    repository or the development venv (PYTHONPATH=. runs the tests from a worktree)."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    env["PYTHONSAFEPATH"] = "1"
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, float]]:
    """A virtualenv built as the image's build stage builds /opt/venv; yields its bin folder
    and how long the install took."""
    folder = tmp_path_factory.mktemp("image")
    venv, src, home = folder / "venv", folder / "src", folder / "home"
    python = venv / "bin" / "python"
    started = time.monotonic()
    _run(UV, "venv", "-q", venv, "--python", sys.executable)
    # uv's cache is reused (the image sets UV_NO_CACHE; a test would download everything).
    _run(UV, "pip", "install", "-q", "--python", python, "--require-hashes", "-r", ROOT / "requirements-prod.lock")
    src.mkdir()
    for source in _copied_sources():
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, src / source, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / source, src / source)
    _run(UV, "pip", "install", "-q", "--python", python, "--no-deps", src)
    shutil.rmtree(src)  # nothing left to import from but the venv
    joined = (
        "from pathlib import Path; from voice.engines.whisper_base import joined_whisper_base; "
        f"joined_whisper_base(Path({str(home / 'models')!r}))"
    )
    _run(python, "-c", joined, env={**_without_repository(), "AVAGENC_HOME": str(home)})
    took_s = time.monotonic() - started
    # Everything the server imports of its own comes from the venv, not from this checkout.
    where = subprocess.run(
        [python, "-c", "import voice, chat, settings; print(voice.__file__, chat.__file__, settings.__file__)"],
        env=_without_repository(),
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert where and all(path.startswith(str(venv)) for path in where), where
    yield venv / "bin", took_s
    shutil.rmtree(folder, ignore_errors=True)


async def test_the_production_lock_alone_serves_answers_hears_and_speaks(
    installed: tuple[Path, float], settings: Settings
) -> None:
    bin_folder, install_s = installed
    assert settings.database_url and settings.session_secret
    env = {
        **_without_repository(),
        "PATH": f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}",
        "DATABASE_URL": settings.database_url,
        "SESSION_SECRET": settings.session_secret.get_secret_value(),
        "AVAGENC_HOME": str(settings.avagenc_home),
        # As the image runs it (Dockerfile), on loopback here.
        "LOG_FORMAT": "json",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    started = time.monotonic()
    with serve_subprocess(
        env, command=[str(bin_folder / "avagenc")], cwd=settings.avagenc_home.parent, ready_s=120
    ) as base_url:
        ready_s = time.monotonic() - started
        # The image's own health check passes against it (its `python` is the venv's).
        program, *arguments = _health_check()
        port = base_url.rsplit(":", 1)[1]
        health_env = {**env, "PORT": port}
        checking = await asyncio.create_subprocess_exec(str(bin_folder / program), *arguments, env=health_env)
        async with asyncio.timeout(10):
            assert await checking.wait() == 0, "HEALTHCHECK failed"
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            assert (await client.get("/readyz")).status_code == 200
            signed_in = await client.post("/v1/auth/local", json={"name": "Budi"})
            assert signed_in.status_code == 200, signed_in.text
            token = signed_in.json()["token"]
            headers = {"Authorization": f"Bearer {token}", "time-zone": "Asia/Jakarta"}
            typed = await client.post("/v1/messages", json={"text": "hello Ava"}, headers=headers)
            assert typed.status_code == 200, typed.text
            messages = [(m["author"], m["text"]) for m in typed.json()["messages"]]
            assert messages[0] == ("human", "hello Ava") and messages[1][0] == "ava" and messages[1][1], messages

        url = base_url.replace("http://", "ws://") + "/v1/voice/speaker"
        # The call doors are built after /readyz and the handshake waits for them (web/doors.py).
        async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=90) as ws:
            await ws.send(json.dumps(START))
            ready = json.loads(await ws.recv())
            assert ready["type"] == "ready", ready
            heard = Heard()
            listener = asyncio.create_task(listen(ws, heard))
            await say(ws, "turn on the bedroom light")
            await wait_for(
                heard,
                lambda h: any("light" in c["text"].lower() for c in h.of("transcript", "assistant")),
                timeout_s=90,
            )
            await wait_quiet(heard)
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await listener
    heard_said = heard.of("transcript", "user")
    assert heard_said and "bedroom" in heard_said[0]["text"].lower(), heard_said
    assert rms(heard.audio) > 300, "the reply is audible speech, not silence"
    print(f"production install {install_s:.1f} s, serve to /readyz {ready_s:.1f} s")
