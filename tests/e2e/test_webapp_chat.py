"""The web app's group chat in a real browser (headless Debian Chromium, Playwright): sign
in, write with `@` autocomplete, watch the team answer live, see messages posted from
elsewhere, and lose no message across a dropped connection.

One server and one browser serve the whole module (tests.fakes.browser); each test signs
in as its own person.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from axe_playwright_python.async_playwright import Axe

from tests.fakes.browser import ARTEFACTS, MODEL_DOWN, WebApp, webapp

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def web(pg_admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[WebApp]:
    async with webapp(pg_admin_url, tmp_path_factory.mktemp("webapp-chat")) as harness:
        yield harness


async def accessible(web: WebApp, view: str) -> None:
    """No serious or critical axe-core violation on the view as shown."""
    results = await Axe().run(web.page)
    serious = [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not serious, f"{view}: " + "; ".join(f"{v['id']}: {v['help']}" for v in serious)


async def thread_texts(web: WebApp) -> list[tuple[str, str]]:
    items = web.page.locator("#thread li.msg")
    authors = await items.evaluate_all("nodes => nodes.map(n => n.dataset.author || 'pending')")
    texts = await web.page.locator("#thread li.msg .text").all_text_contents()
    return list(zip(authors, texts, strict=True))


async def test_signed_in_the_person_writes_with_autocomplete_and_sees_ava_hand_over_to_zee_live(
    web: WebApp,
) -> None:
    await web.sign_in("Budi")
    page = web.page
    await page.focus("#text")
    await page.keyboard.type("@z")
    await page.wait_for_selector("#mentions li[data-name='zee']")
    await page.keyboard.press("Enter")  # chooses the name; does not send
    assert await page.input_value("#text") == "@zee "
    await page.fill("#text", "")

    await page.keyboard.type("turn on the bedroom light")
    await page.keyboard.press("Enter")  # keyboard only
    await page.wait_for_selector("#thread li[data-author='ava'] .mention", timeout=30_000)
    await page.wait_for_selector("#thread li[data-author='zee']", timeout=30_000)
    await page.wait_for_selector("#thread li.pending", state="detached")
    await web.screenshot("chat")

    shown = await thread_texts(web)
    assert shown[0] == ("human", "turn on the bedroom light")
    assert [a for a, _ in shown].count("human") == 1, "sent once, shown once"
    ava = next(text for author, text in shown if author == "ava")
    assert "@zee" in ava.lower()
    assert all("#" not in text for _, text in shown), "no emotion tag is shown as text"
    headers = await web.app.sign_in("Budi")
    stored = (await web.app.client.get("/v1/messages", headers=headers)).json()["messages"]
    assert [m["author"] for m in stored].count("human") == 1, "the server holds it once"
    assert len(stored) == len(shown), "every message the turn wrote is on the page"
    assert await page.text_content("#working") == "", "nobody is still working"


async def test_a_message_written_elsewhere_appears_live(web: WebApp) -> None:
    await web.sign_in("Sari")
    headers = await web.app.sign_in("Sari")  # the terminal, another tab: the same person
    response = await web.app.say(headers, "hello Ava, from the terminal", client_id="term-1")
    assert response.status_code == 200
    written = response.json()["messages"]
    for message in written:
        await web.page.wait_for_selector(f"#thread li[data-id='{message['id']}']", timeout=15_000)
    shown = await thread_texts(web)
    assert shown[0] == ("human", "hello Ava, from the terminal")
    assert len(shown) == len(written)


async def test_a_dropped_connection_comes_back_and_loses_no_message(web: WebApp) -> None:
    await web.sign_in("Dewi")
    headers = await web.app.sign_in("Dewi")
    web.proxy.drop()  # the network goes: the live stream breaks, reconnects are refused
    await web.page.wait_for_selector("#notices li[data-notice='connection'].warning", timeout=15_000)
    await web.screenshot("connection-lost")
    await accessible(web, "chat with the connection lost")
    response = await web.app.say(headers, "written while the browser was offline", client_id="term-2")
    written = response.json()["messages"]
    web.proxy.restore()
    await web.page.wait_for_selector("#notices li[data-notice='connection'].ok", timeout=20_000)
    for message in written:
        await web.page.wait_for_selector(f"#thread li[data-id='{message['id']}']", timeout=15_000)
    ids = await web.page.locator("#thread li.msg").evaluate_all("nodes => nodes.map(n => n.dataset.id)")
    assert ids == [m["id"] for m in written], "each message once, in order"
    assert not [line for line in web.console if line.startswith("pageerror")], web.console


async def test_a_stream_the_server_refused_is_reopened_after_the_last_event(web: WebApp) -> None:
    await web.sign_in("Joko")
    headers = await web.app.sign_in("Joko")
    web.proxy.drop(answer_status=503)  # the browser's EventSource gives up on a refusal
    await web.page.wait_for_selector("#notices li[data-notice='connection'].warning", timeout=15_000)
    response = await web.app.say(headers, "written while the server refused", client_id="term-3")
    written = response.json()["messages"]
    web.proxy.restore()
    await web.page.wait_for_selector("#notices li[data-notice='connection'].ok", timeout=30_000)
    for message in written:
        await web.page.wait_for_selector(f"#thread li[data-id='{message['id']}']", timeout=15_000)
    ids = await web.page.locator("#thread li.msg").evaluate_all("nodes => nodes.map(n => n.dataset.id)")
    assert ids == [m["id"] for m in written], "each message once, in order"


async def test_a_message_sent_while_offline_is_retried_under_its_id_and_kept_once(web: WebApp) -> None:
    await web.sign_in("Fajar")
    web.proxy.drop()
    await web.page.fill("#text", "sent while the network was down")
    await web.page.press("#text", "Enter")
    await web.page.wait_for_selector("#thread li.pending .meta:text('Not confirmed yet')", timeout=15_000)
    client_id = await web.page.get_attribute("#thread li.pending", "data-client-id")
    web.proxy.restore()
    await web.page.wait_for_selector("#thread li.pending", state="detached", timeout=30_000)
    await web.page.wait_for_selector("#thread li[data-author='ava']", timeout=30_000)
    headers = await web.app.sign_in("Fajar")
    stored = (await web.app.client.get("/v1/messages", headers=headers)).json()["messages"]
    mine = [m for m in stored if m["author"] == "human"]
    assert [m["text"] for m in mine] == ["sent while the network was down"], "kept once"
    again = await web.app.say(headers, "sent while the network was down", client_id=client_id)
    assert again.json()["messages"][0]["id"] == mine[0]["id"], "the page used that client id"
    assert await web.page.locator("#thread li[data-author='human']").count() == 1


async def test_a_failed_run_is_announced_and_the_message_kept(web: WebApp) -> None:
    await web.sign_in("Gita")
    await web.page.fill("#text", f"hello {MODEL_DOWN}")
    await web.page.press("#text", "Enter")
    await web.page.wait_for_selector("#notices li.error[data-notice^='run-']", timeout=30_000)
    shown = await web.page.text_content("#notices li.error[data-notice^='run-']") or ""
    assert "Ava could not finish" in shown and "Your message is kept" in shown
    await web.page.wait_for_selector("#thread li.pending", state="detached")
    assert await web.page.locator("#thread li[data-author='human']").count() == 1
    assert await web.page.text_content("#working") == "", "nobody is left working"
    await web.screenshot("run-failed")
    await accessible(web, "chat with a failed run")


async def test_older_messages_page_in_with_the_keyboard(web: WebApp) -> None:
    headers = await web.app.sign_in("Hana")
    for n in range(26):  # each turn writes the person's words and Ava's answer: 52 messages
        assert (await web.app.say(headers, f"hello number {n}", client_id=f"older-{n}")).status_code == 200
    stored = (await web.app.client.get("/v1/messages?limit=200", headers=headers)).json()["messages"]
    await web.sign_in("Hana")
    assert await web.page.locator("#thread li.msg").count() == 50, "one page first"
    await web.page.focus("#older")
    await web.page.keyboard.press("Enter")
    await web.page.wait_for_selector(f"#thread li[data-id='{stored[0]['id']}']")
    ids = await web.page.locator("#thread li.msg").evaluate_all("nodes => nodes.map(n => n.dataset.id)")
    assert ids == [m["id"] for m in stored], "every message once, in order"
    assert await web.page.is_hidden("#older"), "nothing older is left"


async def test_the_api_docs_render_with_no_internet(web: WebApp) -> None:
    await web.page.goto(web.url + "/docs")
    await web.page.wait_for_selector(".swagger-ui .info .title", timeout=20_000)
    assert "Avagenc Chat" in (await web.page.text_content(".swagger-ui .info .title") or "")
    await web.screenshot("docs")


async def test_signing_out_ends_the_session_on_the_server(web: WebApp) -> None:
    await web.sign_in("Gita")
    token = await web.page.evaluate("localStorage.getItem('avagenc.token')")
    headers = {"Authorization": f"Bearer {token}"}
    assert (await web.app.client.get("/v1/me", headers=headers)).status_code == 200
    await web.page.click("#signout")
    await web.page.wait_for_selector("#signin-form:not([hidden])")
    assert await web.page.evaluate("localStorage.getItem('avagenc.token')") is None
    assert (await web.app.client.get("/v1/me", headers=headers)).status_code == 401, "not just forgotten: ended"


async def test_the_sign_in_and_call_views_pass_the_scan(web: WebApp) -> None:
    await web.page.goto(web.url + "/")
    await web.page.evaluate("localStorage.clear()")
    await web.page.reload()
    await web.page.wait_for_selector("#signin-form:not([hidden])")
    await accessible(web, "sign-in")
    await web.screenshot("sign-in")
    await web.sign_in("Citra")
    await web.page.goto(web.url + "/#/call")
    await web.page.wait_for_selector("#view-call:not([hidden]) #call")
    await accessible(web, "call")
    await web.page.focus("[data-nav='chat']")
    await web.page.keyboard.press("Tab")  # the keyboard moves on to the next view's link
    outline = await web.page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none", "visible focus"


async def test_first_load_weight_and_time_from_a_cold_cache(web: WebApp) -> None:
    """Figures for BENCHMARKS.md (written to .state/artefacts/webapp-speed.json): the bytes
    of script and style the first load of / carries compressed (budget 250 KB), when it
    became interactive, and how soon a sent message is shown after the server's answer."""
    context = await web.browser.new_context()  # a cold cache
    page = await context.new_page()
    try:
        await page.goto(web.url + "/")
        await page.wait_for_selector("#signin-form:not([hidden])")
        load = await page.evaluate(FIRST_LOAD)
        await page.fill("#name", "Eka")
        await page.press("#name", "Enter")
        await page.wait_for_selector("body[data-ready='true']", timeout=15_000)
        await page.fill("#text", "turn on the bedroom light")
        await page.press("#text", "Enter")
        await page.wait_for_selector("#thread li[data-author='zee']", timeout=30_000)
        await page.wait_for_selector("#thread li.pending", state="detached")
        # A resource's timing entry is written once its body is read; wait for the POST's.
        await page.wait_for_function(POSTED)
        send = await page.evaluate(SEND)
    finally:
        await context.close()
    figures = {**load, **send}
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    (ARTEFACTS / "webapp-speed.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures))
    assert load["modules"] >= 5, "the page loaded its modules"
    assert load["script_style_bytes"] < 250_000, "the first load's budget"
    assert send["confirmed_after_answer_ms"] >= 0


FIRST_LOAD = """() => {
  const assets = performance.getEntriesByType("resource")
    .filter((e) => /\\/assets\\/.*\\.(js|css)$/.test(e.name));
  const nav = performance.getEntriesByType("navigation")[0];
  return {
    modules: assets.filter((e) => e.name.endsWith(".js")).length,
    script_style_bytes: assets.reduce((sum, e) => sum + e.transferSize, 0),
    script_style_uncompressed_bytes: assets.reduce((sum, e) => sum + e.decodedBodySize, 0),
    page_bytes: nav.transferSize,
    dom_interactive_ms: Math.round(nav.domInteractive),
    dom_content_loaded_ms: Math.round(nav.domContentLoadedEventEnd),
    sign_in_ready_ms: Math.round(performance.getEntriesByName("avagenc:signin-ready")[0].startTime),
  };
}"""

POSTED = """() => performance.getEntriesByType("resource")
  .some((e) => e.name.endsWith("/v1/messages") && e.initiatorType === "fetch")"""

SEND = """() => {
  const post = performance.getEntriesByType("resource")
    .filter((e) => e.name.endsWith("/v1/messages") && e.initiatorType === "fetch").at(-1);
  const confirmed = performance.getEntriesByName("avagenc:confirmed").at(-1);
  const shown = performance.getEntriesByName("avagenc:shown");
  return {
    turn_answer_ms: Math.round(post.responseEnd - post.startTime),
    confirmed_after_answer_ms: Math.round((confirmed.startTime - post.responseEnd) * 10) / 10,
    replies_shown_before_answer: shown.filter((m) => m.startTime < post.responseEnd).length,
  };
}"""
