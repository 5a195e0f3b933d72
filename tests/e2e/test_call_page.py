"""The web app's call view in a real browser: headless Debian Chromium, driven by Playwright,
whose microphone is a WAV of espeak-ng saying "turn on the bedroom light". It opens the old
`/call` address (which lands on the app's call view), signs in, calls, and must show the
person's words and Ava's answer (with its emotion as a word) and play her voice.

How the network is set up, and why: ICE never pairs loopback candidates (Chromium does
not even gather them), so the browser and the server need real interfaces. The test makes
a network namespace joined to this one by a veth pair (`tests.fakes.netns`). The server
runs here, in-process under uvicorn, bound to the host end (10.200.N.1); Chromium runs
inside the namespace (10.200.N.2) because Playwright launches it through a one-line
wrapper, `ip netns exec NS /usr/bin/chromium "$@"`, given as `executable_path` —
Playwright talks to the browser over inherited pipes, which cross namespaces untouched,
so the test keeps driving it from here with the async API. Both ends of every ICE pair are
then the veth addresses. The page is not on localhost, so it would not be a secure
context and could not open the microphone; `--unsafely-treat-insecure-origin-as-secure`
names the test server's origin (a real deployment serves the page over HTTPS).

Needs root for `ip netns` (CI runs as root); without it the test fails and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import wave
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright
from playwright.async_api import Error as PlaywrightError

from agents import SandboxHome
from tests.conftest import App
from tests.fakes.browser import ARTEFACTS, focused_visibly, tab_to
from tests.fakes.netns import VethPair, veth_pair
from tests.fakes.servers import serve_in_process
from tests.fakes.speech import silence, speech_pcm16
from voice.webrtc import end_webrtc_calls

CHROMIUM = Path("/usr/bin/chromium")
WAV_RATE = 16_000
LOUD = 0.02  # RMS of full-scale float samples; espeak speech peaks well above, silence is 0


async def microphone_wav(path: Path, text: str) -> Path:
    """What the fake microphone says: 1 s of silence, the words, 2 s of silence."""
    pcm = silence(1.0, WAV_RATE) + await speech_pcm16(text, WAV_RATE) + silence(2.0, WAV_RATE)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(WAV_RATE)
        wav.writeframes(pcm)
    return path


def chromium_in(namespace: str, folder: Path) -> Path:
    """Chromium, started inside the namespace; Playwright launches this instead."""
    assert CHROMIUM.exists(), "the call page test needs Debian's chromium (apt-get install chromium)"
    wrapper = folder / "chromium-in-namespace"
    wrapper.write_text(f'#!/bin/sh\nexec ip netns exec {namespace} {CHROMIUM} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@contextlib.asynccontextmanager
async def browser_in(pair: VethPair, folder: Path, *, origin: str, wav: Path) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_in(pair.namespace, folder),
            args=[
                "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={wav}%noloop",
                f"--unsafely-treat-insecure-origin-as-secure={origin}",
                "--autoplay-policy=no-user-gesture-required",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            yield browser
        finally:
            await browser.close()


async def peak_level(page: Page) -> float:
    return float(await page.get_attribute("#level", "data-peak") or 0)


@contextlib.asynccontextmanager
async def call_page(app: App, folder: Path, *, words: str) -> AsyncIterator[Page]:
    """The call page, open in Chromium inside the namespace, whose microphone says `words`."""
    wav = await microphone_wav(folder / "microphone.wav", words)
    with veth_pair() as pair:
        try:
            async with (
                serve_in_process(app.app, pair.host_address) as url,
                browser_in(pair, folder, origin=url, wav=wav) as browser,
            ):
                page = await browser.new_page()
                await page.goto(f"{url}/call")
                yield page
        finally:
            # A failed test must not leave a pipeline running when the loop shuts down.
            await end_webrtc_calls()


async def sign_in_and_call(page: Page) -> list[str]:
    """Sign in as Budi and press Call, with the keyboard alone (Tab and Enter, the focus
    visible where it lands); returns the page's console, for failure messages."""
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    await page.wait_for_selector("#signin-form:not([hidden])")
    await tab_to(page, "#name")
    await page.keyboard.type("Budi")
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#call:not([disabled])", timeout=10_000)
    await tab_to(page, "#call")  # the call view puts the focus there itself
    await page.keyboard.press("Enter")
    return console


@contextlib.asynccontextmanager
async def explained(page: Page, console: list[str]) -> AsyncIterator[None]:
    """Turn a wait that runs out into a failure that shows the page's status and console."""
    try:
        yield
    except (TimeoutError, PlaywrightError):
        status = await page.text_content("#status")
        pytest.fail(f"the call did not go as expected; status {status!r}; console {console[-20:]}")


async def heard_aloud(page: Page) -> None:
    async with asyncio.timeout(20):  # polled from here: the page's CSP forbids eval
        while await peak_level(page) <= LOUD:
            await asyncio.sleep(0.1)


async def slot_freed(app: App) -> None:
    async with asyncio.timeout(10):  # the server saw the call end and freed the person's slot
        while len(app.services.voice.registry):
            await asyncio.sleep(0.05)


async def test_the_call_page_hears_the_person_and_plays_avas_answer_with_captions(app: App, tmp_path: Path) -> None:
    async with call_page(app, tmp_path, words="turn on the bedroom light") as page:
        console = await sign_in_and_call(page)
        async with explained(page, console):
            await page.wait_for_selector("#captions li.user", timeout=30_000)
            await page.wait_for_selector("#captions li.assistant[data-emotion]", timeout=30_000)
            # The acknowledgement, then Zee's answer said as it is.
            await page.locator("#captions li.assistant").nth(1).wait_for(timeout=30_000)
            await heard_aloud(page)
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(ARTEFACTS / "call.png"), full_page=True)
        assistant = page.locator("#captions li.assistant").first
        user = await page.text_content("#captions li.user .text") or ""
        spoken = await assistant.locator(".text").text_content() or ""
        shown = await assistant.text_content() or ""  # as displayed, with the emotion word
        emotion = await assistant.get_attribute("data-emotion")
        await tab_to(page, "#hangup")
        await page.keyboard.press("Space")
        assert await page.text_content("#status") == "You hung up."
        assert await focused_visibly(page, "#call"), "the focus is back on Call, to call again"
        await slot_freed(app)

    assert "bedroom" in user.lower()
    # Ava's acknowledgement comes first, with its emotion shown as a word.
    assert spoken == "On it."
    assert emotion == "neutral" and "neutral" in shown, "the emotion is shown as a word"
    assert "#" not in shown and "#" not in user
    me = (await app.services.people.sign_in_local("Budi"))[0]
    status = await SandboxHome(app.services.pool).device_status(person_id=me.id, device_id="sbx-light-bedroom")
    assert status["switch_led"] is True
    thread = await app.services.threads.page(me.id, before=None, after=None, limit=50)
    # Zee's answer was said as it is: the thread holds what the text door's would.
    assert [m.channel for m in thread] == ["voice"] * 3 and "bedroom" in thread[0].text.lower()
    assert thread[-1].author == "zee" and "light" in thread[-1].text.lower()


async def test_after_avas_goodbye_the_page_plays_it_and_the_call_ends(app: App, tmp_path: Path) -> None:
    async with call_page(app, tmp_path, words="okay, goodbye") as page:
        console = await sign_in_and_call(page)
        async with explained(page, console):
            await page.wait_for_selector("#call:not([disabled])", timeout=40_000)  # the call is over
        assert await page.text_content("#status") == "Ava ended the call."
        assert await page.is_disabled("#hangup")
        assert await peak_level(page) > LOUD, "the goodbye was heard"
        assert await page.locator("#captions li.assistant").count() >= 1
        await slot_freed(app)


async def test_the_call_page_is_the_apps_call_view_served_with_no_outside_urls(app: App) -> None:
    moved = await app.client.get("/call")
    assert moved.status_code == 308 and moved.headers["location"] == "/#/call"
    page = await app.client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for element in ('id="name"', 'id="signin"', 'id="call"', 'id="hangup"', 'id="captions"', 'id="status"'):
        assert element in page.text
    folder = re.search(r'src="(/assets/[0-9a-f]+)/app\.js"', page.text)
    assert folder is not None
    response = await app.client.get(f"{folder[1]}/call.js")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/javascript")
    assert "http://" not in response.text and "https://" not in response.text, "no CDN: it works offline"
    assert "http://" not in page.text and "https://" not in page.text
