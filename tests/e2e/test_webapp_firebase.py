"""Firebase sign-in in the web app, in a real browser with no internet: the server is
configured with a Firebase project whose REST services (and certificates) are an offline
twin (tests.fakes.firebase_auth), so the page signs in exactly as it would against
Google's, and the server verifies the tokens with firebase-admin, unchanged.

A person makes an account with email and password, is answered by the team, signs out and
back in to the same thread; a wrong password is said plainly; Google sign-in goes through
the redirect round trip and lands signed in; a token near its expiry is renewed before it
is used, the live stream included. The sign-in page passes the accessibility scan.

How the page follows the server's settings (GET /v1/auth/methods), each on a server of its
own beside the module's: a project without its web API key says why there is no form (and
the server still takes Firebase tokens from other clients); one provider alone is the
only way offered.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from axe_playwright_python.async_playwright import Axe
from playwright.async_api import Page

from tests.conftest import App
from tests.fakes.browser import WebApp, another_server, webapp
from tests.fakes.firebase_auth import Account, FirebaseAuthTwin, firebase_auth_twin

pytestmark = pytest.mark.asyncio(loop_scope="module")
PROJECT = "avagenc-webapp"
API_KEY = "web-api-key-offline"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def twin() -> AsyncIterator[tuple[FirebaseAuthTwin, str]]:
    async with firebase_auth_twin(PROJECT, API_KEY) as served:
        yield served


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def web(
    pg_admin_url: str, tmp_path_factory: pytest.TempPathFactory, twin: tuple[FirebaseAuthTwin, str]
) -> AsyncIterator[WebApp]:
    overrides = firebase_settings(twin[1])
    async with webapp(pg_admin_url, tmp_path_factory.mktemp("webapp-firebase"), overrides=overrides) as harness:
        yield harness


def firebase_settings(url: str, **changes: Any) -> dict[str, Any]:
    """The server's Firebase settings, its services the twin at `url`."""
    return {
        "firebase_project_id": PROJECT,
        "firebase_api_key": API_KEY,
        "firebase_auth_url": url,
        "firebase_token_url": url,
        "firebase_certs_url": f"{url}/certs",
    } | changes


@contextlib.asynccontextmanager
async def configured_as(
    web: WebApp, pg_admin_url: str, folder: Path, overrides: dict[str, Any]
) -> AsyncIterator[tuple[App, Page]]:
    """Another server with these settings, its page open in the module's browser."""
    async with another_server(pg_admin_url, folder, overrides=overrides) as (app, url):
        page = await web.browser.new_page()
        try:
            await page.goto(url + "/")
            await page.wait_for_selector("#firebase-signin:not([hidden])")
            yield app, page
        finally:
            await page.close()


async def scanned(page: Page) -> None:
    results = await Axe().run(page)
    serious = [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not serious, "; ".join(f"{v['id']}: {v['help']}" for v in serious)


async def signed_out(web: WebApp) -> None:
    await web.page.goto(web.url + "/")
    await web.page.evaluate("localStorage.clear(); sessionStorage.clear()")
    await web.page.reload()
    await web.page.wait_for_selector("#firebase-signin:not([hidden])")


async def make_account(web: WebApp, name: str, email: str, password: str) -> None:
    await signed_out(web)
    await web.page.click("#signup summary")
    await web.page.fill("#signup-name", name)
    await web.page.fill("#signup-email", email)
    await web.page.fill("#signup-password", password)
    await web.page.press("#signup-password", "Enter")
    await web.page.wait_for_selector("body[data-ready='true']", timeout=15_000)


async def test_the_page_offers_firebase_not_a_typed_name_and_passes_the_scan(
    web: WebApp, twin: tuple[FirebaseAuthTwin, str]
) -> None:
    await signed_out(web)
    assert await web.page.is_hidden("#signin-form"), "local sign-in is off where Firebase signs people in"
    policy = (await web.app.client.get("/")).headers["content-security-policy"]
    assert policy.endswith(f"connect-src 'self' {twin[1]}"), "the page may reach Firebase's services, no more"
    assert await web.page.is_visible("#email") and await web.page.is_visible("#google")
    results = await Axe().run(web.page)
    serious = [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not serious, "; ".join(f"{v['id']}: {v['help']}" for v in serious)
    await web.screenshot("sign-in-firebase")


async def test_an_account_made_with_a_password_chats_signs_out_and_comes_back_to_its_thread(web: WebApp) -> None:
    await make_account(web, "Budi", "budi@example.com", "rendang-1")
    page = web.page
    assert "Budi" in (await page.text_content("#me") or "")
    await page.fill("#text", "turn on the bedroom light")
    await page.press("#text", "Enter")
    await page.wait_for_selector("#thread li[data-author='zee']", timeout=30_000)

    token = await page.evaluate("localStorage.getItem('avagenc.token')")
    assert (await web.app.client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})).status_code == 200
    await page.click("#signout")
    await page.wait_for_selector("#firebase-signin:not([hidden])")
    signed_out_at = int(time.time())
    assert await page.evaluate("localStorage.length") == 0, "no token or refresh token is kept"
    signed_out_token = await web.app.client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert signed_out_token.status_code == 401, "signing out ended the session on the server too"
    await page.fill("#email", "budi@example.com")
    await page.fill("#password", "wrong-password")
    await page.press("#password", "Enter")
    await page.wait_for_selector("#notices li:has-text('do not match an account')")

    # A session is its token: a token Firebase mints for the same person in the same second
    # as the signed-out one is that token, and stays signed out (docs/webapp.md#firebase-sign-in).
    # A person takes longer than a second to sign in again; the test waits for the next one.
    while int(time.time()) <= signed_out_at:
        await asyncio.sleep(0.05)
    await page.fill("#password", "rendang-1")
    await page.press("#password", "Enter")
    await page.wait_for_selector("body[data-ready='true']", timeout=15_000)
    await page.wait_for_selector("#thread li[data-author='zee']")
    texts = await page.locator("#thread li.msg .text").all_text_contents()
    assert texts[0] == "turn on the bedroom light", "the same person, the same thread"


async def test_an_email_taken_already_is_said_plainly(web: WebApp) -> None:
    await make_account(web, "Citra", "citra@example.com", "soto-ayam")
    await signed_out(web)
    await web.page.click("#signup summary")
    await web.page.fill("#signup-name", "Someone else")
    await web.page.fill("#signup-email", "citra@example.com")
    await web.page.fill("#signup-password", "another-one")
    await web.page.press("#signup-password", "Enter")
    await web.page.wait_for_selector("#notices li:has-text('exists already')")


async def test_google_sign_in_goes_round_the_redirect_and_lands_signed_in(
    web: WebApp, twin: tuple[FirebaseAuthTwin, str]
) -> None:
    await signed_out(web)
    await web.page.click("#google")
    await web.page.wait_for_selector("body[data-ready='true']", timeout=15_000)
    assert twin[0].google_name in (await web.page.text_content("#me") or "")
    assert web.page.url == web.url + "/", "the callback's code and state are gone from the address"


async def test_google_sign_in_cancelled_on_googles_page_says_so(
    web: WebApp, twin: tuple[FirebaseAuthTwin, str]
) -> None:
    twin[0].google_declines = True
    try:
        await signed_out(web)
        await web.page.click("#google")
        await web.page.wait_for_selector("#notices li:has-text('Signing in with Google was cancelled')")
        assert await web.page.is_visible("#google"), "the person can try again"
        assert web.page.url == web.url + "/"
    finally:
        twin[0].google_declines = False


async def test_a_token_near_its_expiry_is_renewed_before_use_and_the_stream_stays_live(
    web: WebApp, twin: tuple[FirebaseAuthTwin, str]
) -> None:
    auth, _ = twin
    auth.token_lifetime_s = 120  # inside the app's five-minute margin: every use renews it
    try:
        await make_account(web, "Dewi", "dewi@example.com", "gado-gado")
        renewed = auth.refreshes
        assert renewed >= 1, "the token was renewed before the app used it"
        await web.page.goto(web.url + "/#/wallet")
        await web.page.wait_for_selector("#view-wallet:not([hidden]) #entries li")
        assert auth.refreshes > renewed
        account = next(a for a in auth.accounts.values() if a.email == "dewi@example.com")
        headers = {"Authorization": f"Bearer {auth.id_token(account)}"}  # the same person, elsewhere
        response = await web.app.say(headers, "hello from my phone", client_id="phone-1")
        assert response.status_code == 200, response.text
        await web.page.goto(web.url + "/#/chat")
        first = response.json()["messages"][0]["id"]
        await web.page.wait_for_selector(f"#thread li[data-id='{first}']", timeout=15_000)
        assert not await web.page.locator("#notices li:has-text('sign in again')").count()
    finally:
        auth.token_lifetime_s = 3600


async def test_without_the_web_api_key_the_page_says_why_it_offers_no_form(
    web: WebApp, pg_admin_url: str, tmp_path: Path, twin: tuple[FirebaseAuthTwin, str]
) -> None:
    auth, url = twin
    async with configured_as(web, pg_admin_url, tmp_path, firebase_settings(url, firebase_api_key=None)) as (app, page):
        methods = (await app.client.get("/v1/auth/methods")).json()
        assert methods["local"] is False and methods["firebase"]["api_key"] is None
        await page.wait_for_selector("#firebase-unavailable:not([hidden])")
        said = " ".join((await page.text_content("#firebase-unavailable") or "").split())
        assert "not possible yet" in said and "FIREBASE_API_KEY" in said, said
        for form in ("#signin-form", "#email", "#signup", "#google"):
            assert await page.is_hidden(form), f"{form} would only fail: Firebase needs the key"
        assert await page.locator("#notices li").count() == 0, "not an error the person made"
        await scanned(page)
        # The server itself still signs people in with Firebase tokens from other clients.
        account = Account(uid="uid-elsewhere", email="eko@example.com", password=None, name="Eko", provider="password")
        auth.accounts[account.uid] = account
        me = await app.client.get("/v1/me", headers={"Authorization": f"Bearer {auth.id_token(account)}"})
        assert me.status_code == 200 and me.json()["name"] == "Eko"


async def test_a_server_offering_passwords_alone_shows_no_google_button(
    web: WebApp, pg_admin_url: str, tmp_path: Path, twin: tuple[FirebaseAuthTwin, str]
) -> None:
    overrides = firebase_settings(twin[1], firebase_providers=["password"])
    async with configured_as(web, pg_admin_url, tmp_path, overrides) as (_, page):
        assert await page.is_hidden("#google")
        assert await page.is_visible("#email") and await page.is_visible("#signup summary")
        await page.click("#signup summary")
        await page.fill("#signup-name", "Fitri")
        await page.fill("#signup-email", "fitri@example.com")
        await page.fill("#signup-password", "pempek-1")
        await page.press("#signup-password", "Enter")
        await page.wait_for_selector("body[data-ready='true']", timeout=15_000)
        assert "Fitri" in (await page.text_content("#me") or "")


async def test_a_server_offering_google_alone_makes_it_the_one_main_button(
    web: WebApp, pg_admin_url: str, tmp_path: Path, twin: tuple[FirebaseAuthTwin, str]
) -> None:
    overrides = firebase_settings(twin[1], firebase_providers=["google.com"])
    async with configured_as(web, pg_admin_url, tmp_path, overrides) as (_, page):
        assert await page.is_hidden("#firebase-password"), "no email and password forms"
        assert await page.is_visible("#google")
        assert "quiet" not in (await page.get_attribute("#google", "class") or ""), "the main button, not a quiet one"
        await scanned(page)
        await page.click("#google")
        await page.wait_for_selector("body[data-ready='true']", timeout=15_000)
        assert twin[0].google_name in (await page.text_content("#me") or "")
