"""The web app's views in a real browser (headless Debian Chromium, Playwright): cancelling
a note by keyboard, the wallet's usage by agent and its empty-wallet notice (and its
notices gone after a top-up), the knowledge graph marking a replaced favourite as no
longer true, linked accounts, forget me, a phone-sized screen, a person who uses only the
keyboard (Tab, Enter, Space, with the focus visible), and an accessibility scan (axe-core)
of each view with no serious violation, with notices shown and without. Screenshots of
each view go to `.state/artefacts/`.

One server and one browser serve the whole module (tests.fakes.browser); each test signs
in as its own person.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import pytest_asyncio
from axe_playwright_python.async_playwright import Axe
from playwright.async_api import Route
from pydantic import SecretStr

from chat import Devices
from ledger import Posting, TransactionSpec, user_account
from tests.fakes.browser import MODEL_DOWN, WebApp, focused_visibly, tab_to, webapp
from tests.fakes.vendors import Vendors

pytestmark = pytest.mark.asyncio(loop_scope="module")
SERIOUS = ("serious", "critical")
LEARN_WAIT_S = 15.0
ADMIN = "webapp-admin-key"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def vendors() -> Vendors:
    return Vendors()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def web(pg_admin_url: str, tmp_path_factory: pytest.TempPathFactory, vendors: Vendors) -> AsyncIterator[WebApp]:
    # Vendor credentials and in-process fake vendors, so an account can be linked.
    credentials: dict[str, dict[str, Any]] = {
        "rafal": {"google_client_id": "google-client", "google_client_secret": SecretStr("google-secret")},
        "yori": {"spotify_client_id": None},
        "zee": {"tuya_access_id": None},
    }
    async with webapp(
        pg_admin_url,
        tmp_path_factory.mktemp("webapp-views"),
        specialist_settings=credentials,
        vendor_transport=httpx.MockTransport(vendors.route),
        overrides={"admin_api_key": SecretStr(ADMIN)},
    ) as harness:
        yield harness


async def open_view(web: WebApp, view: str, ready: str) -> None:
    await web.page.goto(f"{web.url}/#/chat")
    await web.page.goto(f"{web.url}/#/{view}")
    await web.page.wait_for_selector(ready, timeout=15_000)


async def accessible(web: WebApp, view: str, impacts: tuple[str, ...] = SERIOUS) -> None:
    """No axe-core violation of the given impacts (serious or critical unless told) on the
    view as shown."""
    results = await Axe().run(web.page)
    serious = [v for v in results.response["violations"] if v["impact"] in impacts]
    assert not serious, f"{view}: " + "; ".join(
        f"{v['id']}: {v['help']} at {[n['target'] for n in v['nodes']]}" for v in serious
    )


async def person_id(web: WebApp, headers: dict[str, str]) -> str:
    me: dict[str, Any] = (await web.app.client.get("/v1/me", headers=headers)).json()
    return str(me["id"])


async def leave_in_wallet(web: WebApp, headers: dict[str, str], micros: int) -> str:
    """Take all but `micros` out of the person's wallet; returns the person's id."""
    who = await person_id(web, headers)
    balance = (await web.app.client.get("/v1/wallet", headers=headers)).json()["balance_micros"]
    await web.services.ledger.transact(
        spec=TransactionSpec(
            type="adjustment",
            ref=f"test:drain-web-{who}",
            postings=(Posting(user_account(who), micros - balance), Posting("revenue:IDR", balance - micros)),
        )
    )
    return who


async def graph_with(web: WebApp, headers: dict[str, str], name: str, *, valid: bool) -> None:
    """Wait for the background learner: an edge to `name` with the given validity."""
    async with asyncio.timeout(LEARN_WAIT_S):
        while True:
            graph = (await web.app.client.get("/v1/knowledge", headers=headers)).json()
            names = {n["id"]: n["name"] for n in graph["nodes"]}
            if any(names.get(e["target"]) == name and e["valid"] is valid for e in graph["edges"]):
                return
            await asyncio.sleep(0.05)


async def test_a_note_is_cancelled_with_the_keyboard(web: WebApp) -> None:
    await web.sign_in("Nadia")
    headers = await web.app.sign_in("Nadia")
    reminders = web.services.reminders
    assert reminders is not None
    soon = datetime.now(UTC) + timedelta(hours=1)
    who = await person_id(web, headers)
    first = await reminders.reminders.schedule_at(person_id=who, text="stretch", due_at=soon, time_zone="Asia/Jakarta")
    await reminders.reminders.schedule_at(
        person_id=who, text="call mum", due_at=soon + timedelta(hours=1), time_zone="Asia/Jakarta"
    )
    await open_view(web, "notes", f"#notes-upcoming li[data-note='{first.id}'] button")
    await web.screenshot("notes")
    await accessible(web, "notes")

    await web.page.focus(f"#notes-upcoming li[data-note='{first.id}'] button")
    await web.page.keyboard.press("Enter")
    await web.page.wait_for_selector(f"#notes-upcoming li[data-note='{first.id}']", state="detached")
    await web.page.wait_for_selector("#notices li[data-notice='notes'].ok")
    upcoming = (await web.app.client.get("/v1/reminders", headers=headers)).json()["upcoming"]
    assert [n["text"] for n in upcoming] == ["call mum"], "the server holds the cancellation"
    assert await web.page.locator("#notes-upcoming li").count() == 1


async def test_the_wallet_shows_usage_by_agent_and_says_how_to_top_up_when_empty(web: WebApp) -> None:
    await web.sign_in("Wulan")
    headers = await web.app.sign_in("Wulan")
    assert (await web.app.say(headers, "turn on the bedroom light")).status_code == 200
    await open_view(web, "wallet", "#usage tr[data-agent='zee']")
    assert await web.page.locator("#usage tr[data-agent='ava']").count() == 1
    assert await web.page.is_hidden("#wallet-empty")
    await accessible(web, "wallet")

    await leave_in_wallet(web, headers, 0)
    await open_view(web, "wallet", "#wallet-empty:not([hidden])")
    assert "Rp 0" in (await web.page.text_content("#balance") or "")
    assert "topup" in (await web.page.text_content("#wallet-empty") or ""), "it says how to top up"
    await web.screenshot("wallet-empty")

    await web.page.goto(f"{web.url}/#/chat")
    await web.page.fill("#text", "hello?")
    await web.page.press("#text", "Enter")
    await web.page.wait_for_selector("#notices li[data-notice='wallet']")
    await web.page.wait_for_selector("#thread li.failed")
    assert "wallet is empty" in (await web.page.text_content("#thread li.failed .meta") or "")


async def test_the_graph_marks_a_replaced_favourite_as_no_longer_true(web: WebApp) -> None:
    await web.sign_in("Rina")
    headers = await web.app.sign_in("Rina")
    await web.app.say(headers, "my favourite food is rendang")
    await graph_with(web, headers, "rendang", valid=True)
    await open_view(web, "memory", "#graph g.node[data-name='rendang']")
    assert await web.page.locator("#graph g.node.invalid").count() == 0
    await web.page.click("#graph g.node[data-name='rendang']")
    await web.page.wait_for_selector("#fact li[data-valid='true']")

    await web.app.say(headers, "I've switched to soto, actually")
    await graph_with(web, headers, "rendang", valid=False)
    await graph_with(web, headers, "soto", valid=True)
    await open_view(web, "memory", "#graph g.node[data-name='soto']")
    await web.page.focus("#graph g.node[data-name='rendang']")
    await web.page.keyboard.press("Enter")  # a node is chosen with the keyboard too
    await web.page.wait_for_selector("#fact li[data-valid='false'] .invalid-label")
    assert await web.page.get_attribute("#graph g.node[data-name='rendang']", "class") == "node invalid"
    assert await web.page.get_attribute("#graph g.node[data-name='soto']", "class") == "node"
    await web.screenshot("memory")
    await accessible(web, "memory")


async def test_an_account_is_linked_through_the_oauth_round_trip_and_unlinked(web: WebApp, vendors: Vendors) -> None:
    await web.sign_in("Tari")
    await open_view(web, "links", "#integrations li[data-integration='google'] button")
    statuses = await web.page.locator("#integrations li").evaluate_all("nodes => nodes.map(n => n.dataset.status)")
    assert statuses and set(statuses) == {"sandbox"}, "nothing is linked yet"
    await web.screenshot("links")
    await accessible(web, "links")

    async def consent(route: Route) -> None:
        # Google's consent page, agreed at once: back to the app with a code and the state.
        state = parse_qs(urlsplit(route.request.url).query)["state"][0]
        code = vendors.google.oauth.grant_code("acct-google")
        back = f"{web.url}/link/google/callback?code={code}&state={state}"
        await route.fulfill(status=302, headers={"Location": back})

    await web.page.route("https://accounts.google.com/**", consent)
    try:
        await web.page.click("#integrations li[data-integration='google'] button")
        await web.page.wait_for_selector("#notices li[data-notice='link'].ok", timeout=15_000)
        await web.page.wait_for_selector("#integrations li[data-integration='google'][data-status='live']")
    finally:
        await web.page.unroute("https://accounts.google.com/**")
    assert web.page.url.endswith("/#/links"), "the callback's address is not kept"
    await web.screenshot("links-live")

    await web.page.click("#integrations li[data-integration='google'] button")  # Unlink
    await web.page.wait_for_selector("#integrations li[data-integration='google'][data-status='sandbox']")
    headers = await web.app.sign_in("Tari")
    found = (await web.app.client.get("/v1/integrations", headers=headers)).json()["integrations"]
    assert {i["name"]: i["linked"] for i in found}["google"] is False


async def test_forget_me_asks_once_then_erases_the_thread(web: WebApp) -> None:
    await web.sign_in("Yanti")
    headers = await web.app.sign_in("Yanti")
    await web.app.say(headers, "my favourite food is rendang")
    await open_view(web, "forget", "#forget")
    await accessible(web, "forget")
    await web.page.click("#forget")
    await web.page.wait_for_selector("#forget-dialog[open]")
    await web.screenshot("forget")
    await web.page.click("#forget-confirm")
    await web.page.wait_for_selector("#notices li[data-notice='forget'].ok")
    assert (await web.app.client.get("/v1/messages", headers=headers)).json()["messages"] == []
    assert await web.page.locator("#thread li").count() == 0


async def test_the_chat_fits_a_phone_and_passes_the_scan(web: WebApp) -> None:
    await web.page.set_viewport_size({"width": 390, "height": 844})
    try:
        await web.sign_in("Putri")
        headers = await web.app.sign_in("Putri")
        await web.app.say(headers, "turn on the bedroom light")
        await web.page.wait_for_selector("#thread li[data-author='zee']", timeout=15_000)
        overflow = await web.page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= 390, "nothing is wider than the phone's screen"
        assert await web.page.is_visible("#send") and await web.page.is_visible("#text")
        await web.screenshot("chat-phone")
        await accessible(web, "chat")
        for view in ("call", "notes", "wallet", "memory", "links", "devices", "forget"):
            await open_view(web, view, f"#view-{view}:not([hidden]) h2")
            await web.page.wait_for_load_state("networkidle")
            width = await web.page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"the {view} view is wider than the phone's screen"
    finally:
        await web.page.set_viewport_size({"width": 1280, "height": 720})


# A background tab that allowed notifications, with Notification recorded instead of shown.
AWAY = """
window.notified = [];
Object.defineProperty(document, "visibilityState", { get: () => "hidden" });
window.Notification = class {
  static permission = "granted";
  static requestPermission() { return Promise.resolve("granted"); }
  constructor(title, options) { window.notified.push({ title, body: options.body }); }
};
"""


async def test_ava_writing_first_notifies_a_background_tab(web: WebApp) -> None:
    context = await web.browser.new_context()
    await context.add_init_script(AWAY)
    page = await context.new_page()
    try:
        await page.goto(web.url + "/")
        await page.fill("#name", "Intan")
        await page.press("#name", "Enter")
        await page.wait_for_selector("body[data-ready='true']", timeout=15_000)
        headers = await web.app.sign_in("Intan")
        reminders = web.services.reminders
        assert reminders is not None
        await reminders.reminders.schedule_at(
            person_id=await person_id(web, headers),
            text="drink water",
            due_at=datetime.now(UTC) + timedelta(seconds=2),
            time_zone="Asia/Jakarta",
        )
        await page.wait_for_function("() => window.notified.length > 0", timeout=30_000)
        notified = await page.evaluate("window.notified")
    finally:
        await context.close()
    assert notified[0]["title"] == "Ava" and notified[0]["body"], notified


async def test_a_speaker_is_paired_by_its_code_and_removed_with_the_keyboard(web: WebApp) -> None:
    await web.sign_in("Dewi")
    headers = await web.app.sign_in("Dewi")
    speaker = (await web.app.client.post("/v1/devices/pairing", json={"name": "Kitchen speaker"})).json()
    await open_view(web, "devices", "#devices-list li")
    await web.page.fill("#pair-code", speaker["code"].lower())
    await web.page.press("#pair-code", "Enter")
    await web.page.wait_for_selector("#devices-list li[data-device]")
    await web.page.wait_for_selector("#notices li[data-notice='devices'].ok")
    await accessible(web, "devices with a notice")
    polled = await web.app.client.post("/v1/devices/pairing/poll", json={"poll_secret": speaker["poll_secret"]})
    assert polled.json()["status"] == "paired"
    await web.page.goto(f"{web.url}/#/chat")
    await open_view(web, "devices", "#devices-list li[data-device]")
    assert "Kitchen speaker" in await web.page.inner_text("#devices-list")
    await web.screenshot("devices")
    await accessible(web, "devices")

    device_id = polled.json()["device"]["id"]
    await web.page.focus(f"#devices-list li[data-device='{device_id}'] button")
    await web.page.keyboard.press("Enter")
    await web.page.wait_for_selector(f"#devices-list li[data-device='{device_id}']", state="detached")
    assert (await web.app.client.get("/v1/devices", headers=headers)).json() == {"devices": []}
    # A code no speaker shows is refused in words.
    await web.page.fill("#pair-code", "ZZZZ-ZZZZ")
    await web.page.press("#pair-code", "Enter")
    await web.page.wait_for_selector("#notices li[data-notice='devices']:has-text('no speaker is waiting')")


VIEWS_READY = {
    "chat": "#view-chat:not([hidden]) #text",
    "call": "#view-call:not([hidden]) #call",
    "notes": "#notes-upcoming li",
    "wallet": "#entries li",
    "memory": "#view-memory:not([hidden]) #graph",
    "links": "#integrations li button",
    "devices": "#devices-list li",
    "forget": "#view-forget:not([hidden]) #forget",
}


async def test_every_view_passes_the_scan_while_notices_are_shown(web: WebApp) -> None:
    headers = await web.app.sign_in("Ratna")
    await leave_in_wallet(web, headers, 0)
    await web.sign_in("Ratna")
    await web.page.wait_for_selector("#notices-urgent li[data-notice='wallet'].warning")
    await open_view(web, "devices", "#devices-list li")
    await web.page.fill("#pair-code", "ZZZZ-ZZZZ")
    await web.page.press("#pair-code", "Enter")
    await web.page.wait_for_selector("#notices-urgent li[data-notice='devices'].error")
    for view, ready in VIEWS_READY.items():
        await open_view(web, view, ready)
        await web.page.wait_for_load_state("networkidle")
        assert await web.page.locator("#notices li").count() == 2, f"{view}: both notices are still shown"
        await accessible(web, f"{view} with notices shown")


async def test_a_keyboard_alone_sends_cancels_a_note_and_removes_a_speaker(web: WebApp) -> None:
    page = web.page
    await web.sign_in("Kartika")
    headers = await web.app.sign_in("Kartika")
    await tab_to(page, "#text")
    await page.keyboard.type("turn on the bedroom light")
    await tab_to(page, "#send")
    await page.keyboard.press("Space")
    await page.wait_for_selector("#thread li[data-author='zee']", timeout=30_000)
    assert await page.locator("#thread li[data-author='human']").count() == 1

    reminders = web.services.reminders
    assert reminders is not None
    soon = datetime.now(UTC) + timedelta(hours=1)
    who = await person_id(web, headers)
    first = await reminders.reminders.schedule_at(person_id=who, text="stretch", due_at=soon, time_zone="Asia/Jakarta")
    second = await reminders.reminders.schedule_at(
        person_id=who, text="call mum", due_at=soon + timedelta(hours=1), time_zone="Asia/Jakarta"
    )
    await tab_to(page, "[data-nav='notes']", backwards=True)
    await page.keyboard.press("Enter")
    await page.wait_for_selector(f"#notes-upcoming li[data-note='{second.id}'] button")
    await tab_to(page, f"#notes-upcoming li[data-note='{first.id}'] button")
    await page.keyboard.press("Enter")
    await page.wait_for_selector(f"#notes-upcoming li[data-note='{first.id}']", state="detached")
    assert await focused_visibly(page, f"#notes-upcoming li[data-note='{second.id}'] button"), (
        "the focus goes on to the next note's Cancel, where it can be seen"
    )
    upcoming = (await web.app.client.get("/v1/reminders", headers=headers)).json()["upcoming"]
    assert [n["text"] for n in upcoming] == ["call mum"]

    speaker = (await web.app.client.post("/v1/devices/pairing", json={"name": "Porch speaker"})).json()
    await tab_to(page, "[data-nav='devices']", backwards=True)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#view-devices:not([hidden]) #devices-list li")
    await tab_to(page, "#pair-code")
    await page.keyboard.type(speaker["code"])
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#devices-list li[data-device]")
    await tab_to(page, "#devices-list li[data-device] button")
    await page.keyboard.press("Space")
    await page.wait_for_selector("#devices-list li[data-device]", state="detached")
    assert await focused_visibly(page, "#devices-title"), "no device is left: the focus goes to the view's heading"
    assert (await web.app.client.get("/v1/devices", headers=headers)).json() == {"devices": []}


async def test_an_empty_wallets_notices_go_when_it_is_topped_up(web: WebApp) -> None:
    page = web.page
    await web.sign_in("Lestari")
    headers = await web.app.sign_in("Lestari")
    # Enough for Ava's first call only: the wallet is empty when she hands on to Zee.
    who = await leave_in_wallet(web, headers, 1)
    await page.fill("#text", "turn on the bedroom light")
    await page.press("#text", "Enter")
    await page.wait_for_selector("#notices li[data-notice='wallet'].warning", timeout=30_000)
    stopped = page.locator("#notices li.error[data-notice^='run-']")
    await stopped.wait_for(timeout=30_000)
    assert "wallet emptied" in (await stopped.text_content() or "")
    await open_view(web, "wallet", "#wallet-empty:not([hidden])")
    await web.screenshot("wallet-emptied-mid-turn")

    await web.services.wallet.top_up(who, amount_micros=5_000_000_000, ref=f"web-topup-{who}", source="operator")
    await page.wait_for_selector("#notices li[data-notice='wallet']", state="detached", timeout=15_000)
    await stopped.wait_for(state="detached")
    await page.wait_for_selector("#wallet-empty", state="hidden")  # the open view follows too

    # A run that failed for another reason (the model is down) keeps its notice through a top-up.
    await page.goto(f"{web.url}/#/chat")
    await page.fill("#text", f"hello {MODEL_DOWN}")
    await page.press("#text", "Enter")
    await stopped.wait_for(timeout=30_000)
    await open_view(web, "wallet", "#entries li")
    before = await page.text_content("#balance")
    await web.services.wallet.top_up(who, amount_micros=1_000_000_000, ref=f"web-topup-2-{who}", source="operator")
    await page.wait_for_function("(before) => document.getElementById('balance').textContent !== before", arg=before)
    assert await stopped.count() == 1, "a failure of another kind stays"


async def test_a_message_the_empty_wallet_stopped_is_sent_again_after_a_top_up(web: WebApp) -> None:
    """Refused for an empty wallet, the message stays in the thread as not sent, with a
    Send again button; after a top-up through the admin API the button is pressed with
    the keyboard, Ava answers, and the thread holds the message once: the same client id
    went both times."""
    page = web.page
    await web.sign_in("Yuliana")
    headers = await web.app.sign_in("Yuliana")
    who = await leave_in_wallet(web, headers, 0)
    await page.fill("#text", "turn on the bedroom light")
    await page.press("#text", "Enter")
    unsent = page.locator("#thread li.msg.failed")
    await unsent.locator(".meta:text('the wallet is empty')").wait_for(timeout=15_000)
    client_id = await unsent.get_attribute("data-client-id")
    again = unsent.locator("button.again")
    assert await again.get_attribute("aria-label") == "Send again: turn on the bedroom light"
    await page.wait_for_selector("#notices li[data-notice='wallet'].warning")
    await accessible(web, "chat with a message not sent", ("moderate", *SERIOUS))

    admin = {"Authorization": f"Bearer {ADMIN}"}
    topup = {"user_id": who, "amount_micros": 5_000_000_000, "ref": f"web-again-{who}"}
    assert (await web.app.client.post("/v1/admin/topups", json=topup, headers=admin)).status_code == 200
    await page.wait_for_selector("#notices li[data-notice='wallet']", state="detached", timeout=15_000)
    await unsent.locator(".meta:text('It has been topped up')").wait_for()
    assert "quiet" not in (await again.get_attribute("class") or ""), "offered as the main kind of button"
    await web.screenshot("chat-send-again")

    await tab_to(page, "#thread li.msg.failed button.again")
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#thread li[data-author='zee']", timeout=30_000)
    assert await page.locator("#thread li.failed, #thread li.pending").count() == 0
    assert await page.locator("#thread li[data-author='human']").count() == 1
    stored = (await web.app.client.get("/v1/messages", headers=headers)).json()["messages"]
    mine = [m for m in stored if m["author"] == "human"]
    assert [m["text"] for m in mine] == ["turn on the bedroom light"], "kept once"
    assert {m["author"] for m in stored} >= {"ava", "zee"}
    replay = await web.app.say(headers, "turn on the bedroom light", client_id=client_id)
    assert replay.json()["messages"][0]["id"] == mine[0]["id"], "sent again under its first client id"


def client_from(web: WebApp, address: str) -> httpx.AsyncClient:
    """A client of the module's server from another address, so the pairing limits per
    address (docs/http.md#devices) count it apart from the browser's."""
    transport = httpx.ASGITransport(app=web.app.app, client=(address, 40_000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def test_refused_pairing_codes_are_said_in_the_apps_own_words(web: WebApp) -> None:
    """A burnt code and an expired one each get a sentence that says what to do, never
    the server's wording or its error type."""
    page = web.page
    await web.sign_in("Melati")
    async with client_from(web, "198.51.100.7") as speaker:
        shown = (await speaker.post("/v1/devices/pairing", json={"name": "Hall speaker"})).json()
    plain = shown["code"].replace("-", "")
    alphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
    for n in range(5):  # PAIRING_WRONG_CODES_MAX wrong tails, each from another person and address
        guesser = await web.app.sign_in(f"Guesser {n}")
        wrong = plain[:4] + "".join(alphabet[(alphabet.index(c) + n + 1) % len(alphabet)] for c in plain[4:])
        async with client_from(web, f"198.51.100.{20 + n}") as elsewhere:
            answer = await elsewhere.post("/v1/devices/pair", json={"code": wrong}, headers=guesser)
        assert answer.json()["type"] == "pairing_code_invalid"
    await open_view(web, "devices", "#devices-list li")
    await page.fill("#pair-code", shown["code"])
    await page.press("#pair-code", "Enter")
    burnt = page.locator("#notices-urgent li[data-notice='devices']")
    await burnt.locator(":text('typed wrongly too many times')").wait_for()
    said = await burnt.text_content() or ""
    assert "Start pairing again on the speaker" in said and "pairing_code" not in said, said

    expired = await Devices(web.services.pool, pairing_ttl_s=0, devices_per_person_max=3).start_pairing("Old speaker")
    await page.fill("#pair-code", expired.code)
    await page.press("#pair-code", "Enter")
    await burnt.locator(":text('no speaker is waiting with that code')").wait_for()
    said = await burnt.text_content() or ""
    assert "lasts only a few minutes" in said and "start pairing again" in said, said
    assert (await web.app.client.get("/v1/devices", headers=await web.app.sign_in("Melati"))).json() == {"devices": []}
    await accessible(web, "devices with a refused code")


async def test_the_main_content_shows_the_focus_it_is_given(web: WebApp) -> None:
    """The skip link and a dismissed notice hand the focus to the main content, where a
    person can see it; the notices themselves sit in a landmark."""
    page = web.page
    await leave_in_wallet(web, await web.app.sign_in("Sekar"), 0)  # a notice to dismiss
    await web.sign_in("Sekar")
    await page.reload()  # signed in already: the page opens with the focus at its start
    await page.wait_for_selector("#notices li[data-notice='wallet']", timeout=15_000)
    await page.keyboard.press("Tab")
    assert await focused_visibly(page, "a.skip"), "the skip link comes first"
    await page.keyboard.press("Enter")
    assert await focused_visibly(page, "#main"), "the skip link lands on the main content, seen"

    await tab_to(page, "#notices li[data-notice='wallet'] button", backwards=True)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#notices li[data-notice='wallet']", state="detached")
    assert await focused_visibly(page, "#main"), "the dismissed notice hands the focus on, seen"
    landmark = await page.evaluate("document.getElementById('notices-urgent').closest('section[aria-label]')?.tagName")
    assert landmark == "SECTION"
