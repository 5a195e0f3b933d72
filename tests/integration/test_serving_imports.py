"""What a serving process has imported when it can answer `/readyz`: nothing of voice.

A cold start's wait is mostly imports (docs/scaling.md#cold-start). `avagenc serve` builds
the call doors after it listens (app.voice.VoiceLater), so Pipecat, the speech engines,
NumPy, WebRTC and their dependencies must not be pulled in by the path to `/readyz`;
neither httpx's command line (rich, pygments). A module-level import added anywhere on
that path would bring them back silently, so a fresh interpreter builds the whole server
(database, pools, sweeps, routes) as `avagenc serve` does and lists what it imported; then
it says it listens and the doors load.

Listening is not enough: while a request is being answered the doors wait (loaded beside
a woken instance's first text turn, they slowed it several times over), and begin once the
server has been quiet for a spell, or at once when a call door is reached (app.voice.VoiceLater).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Top-level packages only a call needs (or nothing the server runs needs).
VOICE_ONLY = ("voice", "pipecat", "numpy", "onnxruntime", "aiortc", "av", "PIL", "num2words", "faster_whisper",
              "ctranslate2", "aiohttp", "dns", "loguru", "scenarios", "yaml", "rich", "pygments")  # fmt: skip

_SERVE = """
import asyncio, json, sys
import cli  # the command line, as `avagenc serve` starts
cli.without_httpx_command_line()
from app.server import running
from settings import Settings

async def main():
    settings = Settings(_env_file=None, database_url=sys.argv[1], avagenc_home=sys.argv[2],
                        session_secret="imports-" + "x" * 40, gemini_api_key=None, voice_preload=False)
    async with running(settings, voice_in_background=True) as (services, app):
        await asyncio.sleep(0.2)  # the loop runs a while: nothing loads before the server listens
        at_ready = sorted({name.split(".")[0] for name in sys.modules})
        services.listening()
        await asyncio.wait_for(services.voice_later.ready.wait(), 120)
        built = services.voice_later.doors is not None
        print(json.dumps({"at_ready": at_ready, "doors": built, "voice": "pipecat" in sys.modules}))

asyncio.run(main())
"""


def _in_a_fresh_interpreter(script: str, *args: str) -> dict[str, Any]:
    """Runs `script` in a fresh interpreter with no cloud credentials and returns what its
    last line printed (JSON)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "FIREBASE_"))}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def test_a_server_ready_to_serve_text_has_imported_nothing_only_calls_need(database_url: str, tmp_path: Path) -> None:
    seen = _in_a_fresh_interpreter(_SERVE, database_url, str(tmp_path / "state"))
    early = sorted(set(VOICE_ONLY) & set(seen["at_ready"]))
    assert not early, f"imported on the path to /readyz: {early}"
    assert seen["doors"] and seen["voice"], "once the server listens, the call doors load"


_BUSY = """
import asyncio, json, sys
import httpx
import cli
cli.without_httpx_command_line()
from app.server import running
from settings import Settings

async def main(trigger):
    settings = Settings(_env_file=None, database_url=sys.argv[1], avagenc_home=sys.argv[2],
                        session_secret="imports-" + "x" * 40, gemini_api_key=None, voice_preload=False)
    async with running(settings, voice_in_background=True) as (services, app):
        later = services.voice_later
        gate = asyncio.Event()

        async def held():
            await gate.wait()
            return {}

        app.add_api_route("/v1/held", held)  # a text request the test answers when it chooses
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://server") as client:
            request = asyncio.create_task(client.get("/v1/held"))
            await asyncio.sleep(0.05)
            services.listening()
            await asyncio.sleep(1.0)  # well past the quiet spell (0.3 s), well within the longest wait (10 s)
            held_back = "pipecat" not in sys.modules and not later.ready.is_set()
            if trigger == "call":
                call = asyncio.create_task(client.post("/v1/voice/webrtc/offer", json={}))
                await asyncio.wait_for(later.ready.wait(), 120)
                in_flight = not request.done()
                gate.set()
                await request
                await call
            else:
                gate.set()
                await request
                await asyncio.wait_for(later.ready.wait(), 120)
                in_flight = False
        print(json.dumps({"held_back": held_back, "in_flight": in_flight, "doors": later.doors is not None,
                          "voice": "pipecat" in sys.modules}))

asyncio.run(main(sys.argv[3]))
"""


@pytest.mark.parametrize("trigger", ["quiet", "call"])
def test_the_doors_wait_for_a_request_in_flight_then_a_quiet_spell_or_a_call(
    database_url: str, tmp_path: Path, trigger: str
) -> None:
    seen = _in_a_fresh_interpreter(_BUSY, database_url, str(tmp_path / "state"), trigger)
    assert seen["held_back"], "a request in flight keeps the doors from loading"
    assert seen["doors"] and seen["voice"], "then they load"
    if trigger == "call":
        assert seen["in_flight"], "a call begins the loading though a request is still answered"
