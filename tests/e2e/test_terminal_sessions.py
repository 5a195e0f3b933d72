"""`avagenc chat` remembers its session between runs (docs/http.md#terminal-client), against
the real server over real HTTP: the second start uses the remembered token and signs in no
more; a token the server has since refused (the person signed out) is forgotten, and the
start signs in again and goes on; the file holding the tokens is its owner's only."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import httpx
import pytest

from cli.terminal import run_terminal, sessions_file
from tests.conftest import App
from tests.fakes.servers import serve_in_process


class Counted(httpx.AsyncHTTPTransport):
    """Real HTTP, with the sign-ins counted."""

    def __init__(self) -> None:
        super().__init__()
        self.sign_ins = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/auth/local":
            self.sign_ins += 1
        return await super().handle_async_request(request)


async def _chat(url: str, typed: str, transport: Counted) -> str:
    out = io.StringIO()
    code = await run_terminal(
        url=url, name="Budi", time_zone="Asia/Jakarta", stdin=io.StringIO(typed), stdout=out, transport=transport
    )
    assert code == 0, out.getvalue()
    return out.getvalue()


def _remembered(url: str) -> str:
    return str(json.loads(sessions_file().read_text())[url]["token"])


async def test_a_remembered_session_is_used_and_a_signed_out_one_signs_in_again(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    transport = Counted()
    async with serve_in_process(app.app) as url:
        first = await _chat(url, "", transport)
        assert first.startswith("Signed in as Budi.")
        assert transport.sign_ins == 1
        token = _remembered(url)
        assert stat.S_IMODE(sessions_file().stat().st_mode) == 0o600

        second = await _chat(url, "turn on the bedroom light\n", transport)
        assert second.startswith("Signed in as Budi.")
        assert "Zee> " in second, second
        assert transport.sign_ins == 1, "the second start signed in with the remembered session"
        assert _remembered(url) == token

        signed_out = await app.client.post("/v1/auth/sign-out", headers={"Authorization": f"Bearer {token}"})
        assert signed_out.status_code == 204

        third = await _chat(url, "turn off the bedroom light\n", transport)
        assert third.startswith("Signed in as Budi.")
        assert "Zee> " in third, third
        assert transport.sign_ins == 2, "the refused session was replaced by a new sign-in"
        assert _remembered(url) != token
    await transport.aclose()
