"""The web app's pages over HTTP: served whole from the server (no outside URL), with a
policy that forbids inline script and framing, assets cached for good under a digest and
sent compressed, a favicon, the docs page, and the team list the `@` autocomplete reads."""

from __future__ import annotations

import re

from tests.conftest import App


async def test_the_app_page_forbids_inline_script_and_framing_and_is_never_cached(app: App) -> None:
    page = await app.client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert page.headers["cache-control"] == "no-cache"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "<script>" not in page.text, "no inline script"
    assert "http://" not in page.text and "https://" not in page.text


async def test_assets_are_immutable_under_their_digest_and_sent_gzipped(app: App) -> None:
    page = (await app.client.get("/")).text
    script = re.search(r'src="(/assets/[0-9a-f]{16}/app\.js)"', page)
    style = re.search(r'href="(/assets/[0-9a-f]{16}/app\.css)"', page)
    assert script and style
    for path, kind in ((script[1], "text/javascript"), (style[1], "text/css")):
        answer = await app.client.get(path, headers={"accept-encoding": "gzip"})
        assert answer.status_code == 200 and answer.headers["content-type"].startswith(kind)
        assert answer.headers["content-encoding"] == "gzip"
        assert answer.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert "https://" not in answer.text, "no CDN"
    folder = script[1].rsplit("/", 1)[0]
    for module in ("api.js", "thread.js", "live.js", "mentions.js", "notices.js"):
        assert (await app.client.get(f"{folder}/{module}")).status_code == 200
    stale = await app.client.get("/assets/0000000000000000/app.js")
    assert stale.status_code == 200 and stale.headers["cache-control"] == "no-cache", "an old page is not pinned"
    assert (await app.client.get(f"{folder}/missing.js")).status_code == 404
    assert (await app.client.get(f"{folder}/index.html")).status_code == 404, "only assets, not pages"


async def test_the_favicon_and_the_offline_docs_are_served(app: App) -> None:
    icon = await app.client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00", "an ICO file"
    docs = await app.client.get("/docs")
    assert docs.status_code == 200 and "https://" not in docs.text
    assert "frame-ancestors 'none'" in docs.headers["content-security-policy"]
    for asset in re.findall(r'(?:src|href)="(/docs/assets/[^"]+)"', docs.text):
        answer = await app.client.get(asset)
        assert answer.status_code == 200 and len(answer.content) > 0, asset
    assert (await app.client.get("/redoc")).status_code == 404, "no CDN-backed page is left"


async def test_the_team_is_listed_ava_first_for_autocomplete(app: App) -> None:
    assert (await app.client.get("/v1/agents")).status_code == 401
    headers = await app.sign_in()
    agents = (await app.client.get("/v1/agents", headers=headers)).json()["agents"]
    names = [a["name"] for a in agents]
    assert names[0] == "ava" and {"zee", "yori", "rafal"} <= set(names)
    assert all(a["display_name"] and a["domain"] for a in agents)


async def test_the_oauth_callback_lands_in_the_app(app: App) -> None:
    page = await app.client.get("/link/spotify/callback?code=x&state=y")
    assert page.status_code == 200 and 'id="view-links"' in page.text


async def test_the_sign_in_methods_say_local_where_firebase_is_not_configured(app: App) -> None:
    methods = await app.client.get("/v1/auth/methods")
    assert methods.status_code == 200
    assert methods.json() == {"local": True, "firebase": None}
    assert "connect-src" not in (await app.client.get("/")).headers["content-security-policy"]
