"""The web app in a real browser for a whole test module: one database, one server (a real
uvicorn on 127.0.0.1 behind a cuttable proxy), one headless Debian Chromium driven by
Playwright through `executable_path` (never a downloaded browser), one page.

Starting Chromium and the server once per module keeps the browser tests light on a
shared machine; each test signs in as its own person so tests do not see each other's
thread. Screenshots go to ARTEFACTS (`.state/artefacts/`, not committed)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Browser, Page, async_playwright

from agents import ModelRequest, ModelResponse, ModelUnavailable, OfflineModel
from app.server import Services, running
from settings import Settings
from tests.conftest import App, fresh_database, offline_settings
from tests.fakes.proxy import Proxy, proxy_to
from tests.fakes.servers import serve_in_process

CHROMIUM = Path("/usr/bin/chromium")
ARTEFACTS = Path(__file__).resolve().parents[2] / ".state" / "artefacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


MODEL_DOWN = "(the model is down)"


class UnreliableModel:
    """The offline model, except that it is unreachable for any conversation holding
    MODEL_DOWN: how a browser test makes a run fail on purpose."""

    def __init__(self) -> None:
        self._model = OfflineModel()

    async def generate(self, *, request: ModelRequest) -> ModelResponse:
        if any(MODEL_DOWN in content.text for content in request.contents):
            raise ModelUnavailable("the test's model is down")
        return await self._model.generate(request=request)


@dataclass
class WebApp:
    app: App
    services: Services
    url: str  # through the proxy: what the browser uses
    proxy: Proxy
    browser: Browser
    page: Page
    console: list[str]

    async def sign_in(self, name: str) -> None:
        """Open the app afresh and sign in as `name` (a new person per test)."""
        await self.page.goto(self.url + "/")
        await self.page.evaluate("localStorage.clear()")
        await self.page.reload()
        await self.page.fill("#name", name)
        await self.page.press("#name", "Enter")
        await self.page.wait_for_selector("body[data-ready='true']", timeout=15_000)

    async def screenshot(self, name: str) -> Path:
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTEFACTS / f"{name}.png"
        await self.page.screenshot(path=str(path), full_page=True)
        return path


# Where the focus is, and whether a person can see it: the element `:focus-visible`
# matches, drawn with an outline (web/static/app.css).
FOCUS = """(selector) => {
  const at = document.activeElement;
  if (!at || !at.matches(selector)) return null;
  const style = getComputedStyle(at);
  return at.matches(":focus-visible") && style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
}"""


async def tab_to(page: Page, selector: str, *, backwards: bool = False, presses_max: int = 40) -> None:
    """Move the focus to `selector` the way a person with only a keyboard does, with Tab
    (Shift+Tab `backwards`), never `focus()`; fail if it cannot be reached or if the focus
    on it cannot be seen."""
    for _ in range(presses_max):
        visible = await page.evaluate(FOCUS, selector)
        if visible is not None:
            assert visible, f"the focus on {selector} is not visible"
            return
        await page.keyboard.press("Shift+Tab" if backwards else "Tab")
    raise AssertionError(f"{selector} is not reached with {presses_max} presses of Tab")


async def focused_visibly(page: Page, selector: str) -> bool:
    """The focus is on `selector` and a person can see it."""
    return bool(await page.evaluate(FOCUS, selector))


def installed_chromium() -> Path:
    assert CHROMIUM.exists(), "the browser tests need Debian's chromium (apt-get install chromium)"
    return CHROMIUM


@contextlib.asynccontextmanager
async def webapp(
    pg_admin_url: str,
    folder: Path,
    *,
    specialist_settings: dict[str, dict[str, Any]] | None = None,
    vendor_transport: httpx.AsyncBaseTransport | None = None,
    overrides: dict[str, Any] | None = None,
) -> AsyncIterator[WebApp]:
    """The app served and opened in Chromium; `specialist_settings` and `vendor_transport`
    give it vendor credentials and fake vendors, for linking accounts; `overrides` sets
    any other setting (Firebase sign-in)."""
    chromium = installed_chromium()
    async with fresh_database(pg_admin_url) as database_url:
        settings = offline_settings(database_url, folder)
        if specialist_settings is not None:
            settings = settings.model_copy(update={"specialist_settings": specialist_settings})
        if overrides is not None:
            settings = settings.model_copy(update=overrides)
        async with _served(settings, chromium, vendor_transport) as harness:
            yield harness


@contextlib.asynccontextmanager
async def another_server(
    pg_admin_url: str, folder: Path, *, overrides: dict[str, Any]
) -> AsyncIterator[tuple[App, str]]:
    """A second server beside a module's, on its own database, with other settings (how
    sign-in is configured); yields it and its address, which a module's browser opens in
    a page of its own, so no second Chromium starts."""
    async with fresh_database(pg_admin_url) as database_url:
        settings = offline_settings(database_url, folder).model_copy(update=overrides)
        async with (
            running(settings, model=OfflineModel()) as (services, fastapi_app),
            serve_in_process(fastapi_app) as url,
        ):
            harness = App(services, fastapi_app)
            try:
                yield harness, url
            finally:
                await harness.client.aclose()


@contextlib.asynccontextmanager
async def _served(
    settings: Settings, chromium: Path, vendor_transport: httpx.AsyncBaseTransport | None
) -> AsyncIterator[WebApp]:
    async with (
        running(settings, model=UnreliableModel(), vendor_transport=vendor_transport) as (services, fastapi_app),
        serve_in_process(fastapi_app) as direct_url,
        proxy_to(direct_url) as (url, proxy),
        async_playwright() as playwright,
    ):
        harness = App(services, fastapi_app)
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            console: list[str] = []
            page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
            page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
            yield WebApp(harness, services, url, proxy, browser, page, console)
        finally:
            await browser.close()
            await harness.client.aclose()
