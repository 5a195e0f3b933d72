"""Linking through the HTTP API (docs/agents.md#linking): each integration's state, the OAuth flow with
a signed, expiring, person-bound state, sealed refresh tokens, disconnect with upstream
revocation, Tuya by account id, and the agents switching to the live adapter once linked
(against in-process fakes of Google, Spotify and Tuya)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from pydantic import SecretStr

from agents import FunctionCall, ModelRequest, ModelResponse, ScriptedModel
from agents.integrations.linking import StateSigner
from app.keys import session_secret
from app.server import running
from settings import Settings
from tests.conftest import App
from tests.fakes.vendors import FakeTuya, Vendors


@pytest.fixture
def vendors() -> Iterator[Vendors]:
    v = Vendors()
    yield v
    # Every call the server made, and every answer, as the vendors' references have them.
    assert v.google.violations + v.spotify.violations + v.tuya.violations == []


@pytest.fixture
def linked_settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=database_url,
        avagenc_home=tmp_path / "state",
        session_secret=SecretStr("test-secret-" + "x" * 40),
        gemini_api_key=None,
        specialist_settings={
            "rafal": {"google_client_id": "google-client", "google_client_secret": SecretStr("google-secret")},
            "yori": {"spotify_client_id": "spotify-client", "spotify_client_secret": SecretStr("spotify-secret")},
            "zee": {"tuya_access_id": FakeTuya.CLIENT_ID, "tuya_access_secret": SecretStr(FakeTuya.SECRET)},
        },
    )


@pytest.fixture
async def live(linked_settings: Settings, vendors: Vendors) -> AsyncIterator[App]:
    async with running(linked_settings, vendor_transport=httpx.MockTransport(vendors.route)) as (services, app):
        harness = App(services, app)
        try:
            yield harness
        finally:
            await harness.client.aclose()


async def states(app: App, headers: dict[str, str]) -> dict[str, dict[str, Any]]:
    response = await app.client.get("/v1/integrations", headers=headers)
    assert response.status_code == 200, response.text
    return {i["name"]: i for i in response.json()["integrations"]}


async def auth_state(app: App, headers: dict[str, str], name: str) -> tuple[str, dict[str, list[str]]]:
    response = await app.client.get(f"/v1/integrations/{name}/auth-url", headers=headers)
    assert response.status_code == 200, response.text
    query = parse_qs(urlsplit(response.json()["url"]).query)
    return query["state"][0], query


async def link_google(app: App, vendors: Vendors, headers: dict[str, str]) -> httpx.Response:
    state, _ = await auth_state(app, headers, "google")
    code = vendors.google.oauth.grant_code("acct-google")
    return await app.client.post(
        "/v1/integrations/google/connection", json={"code": code, "state": state}, headers=headers
    )


async def test_without_credentials_everything_is_sandbox_and_cannot_link(app: App) -> None:
    headers = await app.sign_in()
    found = await states(app, headers)
    assert set(found) == {"google", "spotify", "tuya"}
    assert all(s["status"] == "sandbox" and not s["linked"] and not s["can_link"] for s in found.values())
    response = await app.client.get("/v1/integrations/google/auth-url", headers=headers)
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == "linking_unavailable"


async def test_unknown_integrations_are_404(app: App) -> None:
    headers = await app.sign_in()
    for method, path in (
        ("GET", "/v1/integrations/dropbox/auth-url"),
        ("DELETE", "/v1/integrations/dropbox/connection"),
    ):
        response = await app.client.request(method, path, headers=headers)
        assert response.status_code == 404
        assert response.json()["type"] == "integration_unknown"
    assert (await app.client.get("/v1/integrations")).status_code == 401


async def test_the_consent_url_asks_for_offline_access_with_a_bound_state(live: App) -> None:
    headers = await live.sign_in()
    state, query = await auth_state(live, headers, "google")
    assert query["access_type"] == ["offline"] and query["prompt"] == ["consent"]
    assert query["redirect_uri"] == ["http://127.0.0.1:8000/link/google/callback"]
    assert "https://www.googleapis.com/auth/gmail.send" in query["scope"][0].split()
    assert state.startswith("google.")
    _, spotify = await auth_state(live, headers, "spotify")
    assert "user-modify-playback-state" in spotify["scope"][0].split()


async def test_linking_google_stores_a_sealed_token_and_goes_live(live: App, vendors: Vendors) -> None:
    headers = await live.sign_in()
    response = await link_google(live, vendors, headers)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "live"
    assert (await states(live, headers))["google"]["status"] == "live"
    (refresh,) = vendors.google.oauth.refresh
    row = await live.services.pool.fetchrow("SELECT refresh_token_sealed, account_id FROM integration_links")
    assert row is not None
    sealed = bytes(row["refresh_token_sealed"])
    assert refresh.encode() not in sealed, "the refresh token is never stored in plaintext"
    dump = await live.services.pool.fetchval("SELECT string_agg(integration_links::text, '') FROM integration_links")
    assert refresh not in dump


@pytest.mark.parametrize("tamper", ["forged", "other_person", "other_integration", "expired", "garbage"])
async def test_a_forged_or_expired_state_is_refused(
    live: App, vendors: Vendors, linked_settings: Settings, tamper: str
) -> None:
    headers = await live.sign_in("Budi")
    me = (await live.client.get("/v1/me", headers=headers)).json()["id"]
    state, _ = await auth_state(live, headers, "google")
    signer = StateSigner(hmac.new(session_secret(linked_settings), b"oauth-state", hashlib.sha256).digest())
    if tamper == "forged":
        state = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
    elif tamper == "other_person":
        other = await live.sign_in("Sari")
        state, _ = await auth_state(live, other, "google")
    elif tamper == "other_integration":
        state, _ = await auth_state(live, headers, "spotify")
    elif tamper == "expired":
        state = signer.issue(person_id=me, integration="google", now=datetime.now(UTC) - timedelta(minutes=16))
    else:
        state = "google.not-a-state"
    code = vendors.google.oauth.grant_code("acct-google")
    response = await live.client.post(
        "/v1/integrations/google/connection", json={"code": code, "state": state}, headers=headers
    )
    assert response.status_code == 400, response.text
    assert response.json()["type"] == "link_state_invalid"
    assert code in vendors.google.oauth.codes, "a refused state never reaches the provider"
    assert (await states(live, headers))["google"]["status"] == "sandbox"


async def test_a_code_the_provider_refuses_is_a_clear_400(live: App) -> None:
    headers = await live.sign_in()
    state, _ = await auth_state(live, headers, "google")
    response = await live.client.post(
        "/v1/integrations/google/connection", json={"code": "made-up", "state": state}, headers=headers
    )
    assert response.status_code == 400
    assert response.json()["type"] == "link_rejected"


async def test_disconnect_revokes_google_upstream_and_forgets(live: App, vendors: Vendors) -> None:
    headers = await live.sign_in()
    await link_google(live, vendors, headers)
    (refresh,) = vendors.google.oauth.refresh
    response = await live.client.delete("/v1/integrations/google/connection", headers=headers)
    assert response.json() == {"name": "google", "was_linked": True, "revoked_upstream": True}
    assert vendors.google.oauth.revoked == [refresh]
    assert (await states(live, headers))["google"]["status"] == "sandbox"
    assert await live.services.pool.fetchval("SELECT count(*) FROM integration_links") == 0


async def test_rafal_reads_the_real_mailbox_once_linked(live: App, vendors: Vendors) -> None:
    headers = await live.sign_in()
    before = (await live.say(headers, "@rafal any email today?")).json()
    assert "sandbox" in before["messages"][-1]["text"]
    await link_google(live, vendors, headers)
    body = (await live.say(headers, "@rafal any email today?")).json()
    reply = body["messages"][-1]["text"]
    assert "Dinner this week?" in reply and "sandbox" not in reply
    assert "Slides for Monday" not in reply, "the sandbox's mail is not in the real mailbox"


async def test_yori_plays_on_spotify_once_linked(live: App, vendors: Vendors) -> None:
    headers = await live.sign_in()
    state, _ = await auth_state(live, headers, "spotify")
    code = vendors.spotify.oauth.grant_code("acct-spotify")
    response = await live.client.post(
        "/v1/integrations/spotify/connection", json={"code": code, "state": state}, headers=headers
    )
    assert response.status_code == 200, response.text
    body = (await live.say(headers, "@yori play some jazz")).json()
    assert "Take Five" in body["messages"][-1]["text"]
    assert vendors.spotify.players["acct-spotify"].playing
    response = await live.client.delete("/v1/integrations/spotify/connection", headers=headers)
    assert response.json()["revoked_upstream"] is False, "Spotify offers no revocation; the link is forgotten"


async def test_spotify_asking_to_wait_is_said_with_its_own_wait(live: App, vendors: Vendors) -> None:
    headers = await live.sign_in()
    state, _ = await auth_state(live, headers, "spotify")
    code = vendors.spotify.oauth.grant_code("acct-spotify")
    await live.client.post("/v1/integrations/spotify/connection", json={"code": code, "state": state}, headers=headers)
    vendors.spotify.busy, vendors.spotify.retry_after_s = True, 150
    reply = (await live.say(headers, "@yori play some jazz")).json()["messages"][-1]["text"]
    assert "in 3 minutes" in reply, reply


async def test_tuya_links_by_account_id_and_zee_goes_live(live: App, vendors: Vendors) -> None:
    headers = await live.sign_in()
    vendors.tuya.user("tuyauid42")
    bad = await live.client.post("/v1/integrations/tuya/connection", json={"account_id": "not valid!"}, headers=headers)
    assert bad.status_code == 400
    response = await live.client.post(
        "/v1/integrations/tuya/connection", json={"account_id": "tuyauid42"}, headers=headers
    )
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "live"
    await live.say(headers, "@zee turn on the lamp")
    lamp = vendors.tuya.devices["tuyauid42"][0]
    assert {s["code"]: s["value"] for s in lamp["status"]}["switch_led"] is True
    assert vendors.tuya.bad_signatures == 0


async def test_a_revoked_link_becomes_a_sentence_not_a_crash(live: App, vendors: Vendors) -> None:
    headers = await live.sign_in()
    await link_google(live, vendors, headers)
    vendors.google.oauth.refresh.clear()  # the person removed our access in their Google account
    response = await live.say(headers, "@rafal any email today?")
    assert response.status_code == 200
    body = response.json()
    assert body["runs"][0]["status"] == "succeeded"
    assert "link" in body["messages"][-1]["text"].lower()


async def test_a_link_this_server_cannot_use_is_unavailable_and_the_sandbox_serves(
    live: App, vendors: Vendors, settings: Settings
) -> None:
    headers = await live.sign_in("Budi")
    await link_google(live, vendors, headers)
    # The same database, served by a deployment without Google credentials.
    async with running(settings) as (services, fastapi_app):
        other = App(services, fastapi_app)
        try:
            again = await other.sign_in("Budi")
            assert (await states(other, again))["google"]["status"] == "unavailable"
            reply = (await other.say(again, "@rafal any email today?")).json()["messages"][-1]["text"]
            assert "sandbox" in reply
        finally:
            await other.client.aclose()


async def test_unlocking_a_real_door_waits_for_the_persons_yes(
    linked_settings: Settings, vendors: Vendors, scripted: ScriptedModel
) -> None:
    """Zee on a scripted model that would unlock at once: the command is only proposed, a
    confirmation in the same turn is refused, and the person's own yes carries it out."""
    door = {"device_id": "tuyauid7door", "commands": [{"code": "lock_motor_state", "value": False}]}
    seen: list[dict[str, Any]] = []

    def remember(reply: str) -> Any:
        def answer(request: ModelRequest) -> ModelResponse:
            seen.append(dict(request.contents[-1].results[0].response))
            return ModelResponse(reply)

        return answer

    def confirm_first(request: ModelRequest) -> ModelResponse:
        pending = request.contents[-1].results[0].response["pending"]
        return ModelResponse("", (FunctionCall("c2", "confirm_action", {"action_id": pending[0]["action_id"]}),))

    vendors.tuya.user("tuyauid7")
    transport = httpx.MockTransport(vendors.route)
    async with running(linked_settings, model=scripted, vendor_transport=transport) as (services, fastapi_app):
        app = App(services, fastapi_app)
        try:
            headers = await app.sign_in()
            await app.client.post("/v1/integrations/tuya/connection", json={"account_id": "tuyauid7"}, headers=headers)
            scripted.extend(
                [
                    ModelResponse("", (FunctionCall("c1", "send_commands", door),)),
                    ModelResponse("", (FunctionCall("c2", "pending_actions", {}),)),
                    confirm_first,
                    remember("Shall I unlock the front door?"),
                ]
            )
            await app.say(headers, "@zee unlock the front door")
            assert "not answered" in seen[0]["error"]
            lock = next(d for d in vendors.tuya.devices["tuyauid7"] if d["category"] == "ms")
            assert lock["status"][0]["value"] is True, "still locked"

            scripted.extend(
                [
                    ModelResponse("", (FunctionCall("c3", "pending_actions", {}),)),
                    confirm_first,
                    remember("Unlocked."),
                ]
            )
            await app.say(headers, "@zee yes")
            assert seen[1]["done"] == "device_commands"
            assert lock["status"][0]["value"] is False
        finally:
            await app.client.aclose()
