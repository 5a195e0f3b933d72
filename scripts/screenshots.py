"""Screenshots of the web app for the README and docs/webapp.md, so a reader sees the app
before running it: each view after a short real conversation, taken with headless Debian
Chromium (Playwright through `executable_path`, as the browser tests drive it).

It starts everything it needs offline: an embedded PostgreSQL (or DATABASE_URL), the
server on the offline model under a real uvicorn on 127.0.0.1, and the browser. The PNGs
are reduced to a small palette so the repository stays light (docs/screenshots/).

    .venv/bin/python -m scripts.screenshots            # writes docs/screenshots/*.png

The Firebase sign-in page is taken against the offline Firebase Auth twin the browser tests
use (tests/fakes/firebase_auth.py).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from PIL import Image
from playwright.async_api import Page, ViewportSize, async_playwright

from app.server import running
from database import EmbeddedPostgres
from tests.conftest import offline_settings
from tests.fakes.browser import CHROMIUM_ARGS, installed_chromium
from tests.fakes.firebase_auth import firebase_auth_twin
from tests.fakes.servers import serve_in_process

OUT = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
DESK = ViewportSize(width=1100, height=720)
PHONE = ViewportSize(width=390, height=760)
COLOURS = 48  # the app's few flat colours and its text survive this; the files stay small
WAIT_MS = 30_000
LEARN_WAIT_S = 20.0


async def graph_has(http: httpx.AsyncClient, headers: dict[str, str], name: str, *, valid: bool) -> None:
    """Wait for the background learner: an edge to `name` with the given validity."""
    deadline = time.monotonic() + LEARN_WAIT_S
    while time.monotonic() < deadline:
        graph = (await http.get("/v1/knowledge", headers=headers)).json()
        names = {n["id"]: n["name"] for n in graph["nodes"]}
        if any(names.get(e["target"]) == name and e["valid"] is valid for e in graph["edges"]):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"the graph never showed {name!r} (valid={valid})")


async def shoot(page: Page, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=COLOURS, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)
    print(f"{path.relative_to(OUT.parents[1])}: {path.stat().st_size // 1024} KB")


async def say(page: Page, text: str, author: str) -> None:
    """Write in the app as the person and wait for `author`'s answer to it."""
    before = await page.locator(f"#thread li[data-author='{author}']").count()
    await page.fill("#text", text)
    await page.press("#text", "Enter")
    await page.wait_for_function(
        "([selector, before]) => document.querySelectorAll(selector).length > before",
        arg=[f"#thread li[data-author='{author}']", before],
        timeout=WAIT_MS,
    )
    await page.wait_for_selector("#thread li.pending", state="detached", timeout=WAIT_MS)


async def view(page: Page, base: str, name: str, ready: str) -> None:
    await page.goto(f"{base}/#/{name}")
    await page.wait_for_selector(ready, timeout=WAIT_MS)


async def take(database_url: str, folder: Path) -> None:
    settings = offline_settings(database_url, folder)
    async with (
        running(settings) as (services, app),
        serve_in_process(app) as base,
        httpx.AsyncClient(base_url=base) as http,
        async_playwright() as playwright,
    ):
        browser = await playwright.chromium.launch(executable_path=installed_chromium(), args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport=DESK)
        await page.goto(base + "/")
        await page.wait_for_selector("#signin-form")
        await shoot(page, "sign-in")

        await page.fill("#name", "Budi")
        await page.press("#name", "Enter")
        await page.wait_for_selector("body[data-ready='true']", timeout=WAIT_MS)
        token = await page.evaluate("localStorage.getItem('avagenc.token')")
        headers = {"Authorization": f"Bearer {token}", "time-zone": "Asia/Jakarta"}
        await say(page, "turn on the bedroom light", "zee")
        await say(page, "my favourite food is rendang", "ava")
        await graph_has(http, headers, "rendang", valid=True)
        await say(page, "I've switched to soto, actually", "ava")
        await graph_has(http, headers, "soto", valid=True)
        await shoot(page, "chat")

        await view(page, base, "call", "#view-call:not([hidden]) #call")
        await shoot(page, "call")

        reminders = services.reminders
        if reminders is not None:
            me = (await http.get("/v1/me", headers=headers)).json()["id"]
            soon = datetime.now(UTC) + timedelta(hours=2)
            for offset, text in enumerate(("stretch and drink some water", "call mum")):
                await reminders.reminders.schedule_at(
                    person_id=me, text=text, due_at=soon + timedelta(hours=offset * 20), time_zone="Asia/Jakarta"
                )
            await view(page, base, "notes", "#notes-upcoming li button")
            await shoot(page, "notes")

        await view(page, base, "wallet", "#usage tr[data-agent='zee']")
        await shoot(page, "wallet")

        await view(page, base, "memory", "#graph g.node[data-name='soto']")
        await page.click("#graph g.node[data-name='rendang']")
        await page.wait_for_selector("#fact li[data-valid='false']")
        await shoot(page, "memory")

        await view(page, base, "links", "#integrations li")
        await shoot(page, "links")

        await view(page, base, "forget", "#view-forget:not([hidden]) #forget")
        await page.click("#forget")
        await page.wait_for_selector("#forget-dialog[open]")
        await shoot(page, "forget")
        await page.click("#forget-dialog button[value='cancel']")

        await page.set_viewport_size(PHONE)
        await view(page, base, "chat", "#thread li[data-author='zee']")
        await shoot(page, "chat-phone")
        await browser.close()


async def take_firebase(database_url: str, folder: Path) -> None:
    """The sign-in page of a server configured for Firebase, against the offline twin."""
    async with firebase_auth_twin("avagenc-screens", "web-key") as (_, twin_url):
        settings = offline_settings(database_url, folder).model_copy(
            update={
                "firebase_project_id": "avagenc-screens",
                "firebase_api_key": "web-key",
                "firebase_auth_url": twin_url,
                "firebase_token_url": twin_url,
                "firebase_certs_url": f"{twin_url}/certs",
            }
        )
        async with (
            running(settings) as (_, app),
            serve_in_process(app) as base,
            async_playwright() as playwright,
        ):
            browser = await playwright.chromium.launch(executable_path=installed_chromium(), args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport=DESK)
            await page.goto(base + "/")
            await page.click("#signup summary")
            await page.wait_for_selector("#signup-name")
            await shoot(page, "sign-in-firebase")
            await browser.close()


def main() -> None:
    url = os.environ.get("DATABASE_URL")
    embedded: EmbeddedPostgres | None = None
    folder = Path(tempfile.mkdtemp(prefix="avagenc-screenshots-"))
    if not url:
        embedded = EmbeddedPostgres(folder / "pg")
        url = embedded.start()
    try:
        asyncio.run(take(url, folder))
        asyncio.run(take_firebase(url, folder))
    finally:
        if embedded is not None:
            embedded.stop()


if __name__ == "__main__":
    main()
