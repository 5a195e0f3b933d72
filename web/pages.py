"""The web app's pages: the app at `/`, its assets, the favicon and the API docs, all from
files inside installed packages, so a browser with no internet gets everything it needs.

The app has no build step (docs/webapp.md says why): its ES modules and style sheet sit in
`web/static/` and are served as they are. Asset URLs carry a digest of every asset, so
they can be cached for a year (`immutable`) and a new release is fetched at once; each
asset is kept gzip-compressed in memory and sent compressed to browsers that accept it.
The pages themselves are never cached, and every page forbids inline script and framing.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import logging
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Header
from starlette.responses import RedirectResponse, Response

log = logging.getLogger(__name__)

# Everything the app needs comes from this server; no inline script, no framing.
APP_POLICY = (
    "default-src 'self'; img-src 'self' data:; media-src 'self' blob:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# Swagger UI sets style attributes from script; its own code stays external all the same.
DOCS_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
ASSET_MAX_AGE_S = 365 * 24 * 3600
_KINDS = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}
_NAME = re.compile(r"^[a-z0-9_-]{1,40}\.(js|css|svg|ico)$")
_SWAGGER_FILES = ("swagger-ui-bundle.js", "swagger-ui.css")


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    compressed: bytes
    media_type: str


def _load(files: dict[str, bytes]) -> dict[str, Asset]:
    return {
        name: Asset(body, gzip.compress(body, compresslevel=9, mtime=0), _KINDS["." + name.rsplit(".", 1)[1]])
        for name, body in files.items()
    }


def _app_files() -> dict[str, bytes]:
    folder = resources.files("web").joinpath("static")
    return {item.name: item.read_bytes() for item in folder.iterdir() if _NAME.fullmatch(item.name)}


def _swagger_files() -> dict[str, bytes]:
    # Swagger UI's own files from the swagger-ui-py package, found without importing it
    # (its Python side is for other frameworks). An install without it still serves the
    # app and the API; only /docs is left without its script, and the log says why.
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        log.warning("swagger-ui-py is not installed: /docs has no Swagger UI (run make install)")
        return {}
    folder = Path(next(iter(spec.submodule_search_locations))) / "static"
    return {name: (folder / name).read_bytes() for name in _SWAGGER_FILES}


def _asset_response(asset: Asset | None, accept_encoding: str | None, *, immutable: bool) -> Response:
    if asset is None:
        return Response(status_code=404)
    cache = f"public, max-age={ASSET_MAX_AGE_S}, immutable" if immutable else "no-cache"
    headers = {"Cache-Control": cache, "X-Content-Type-Options": "nosniff", "Vary": "Accept-Encoding"}
    if accept_encoding and "gzip" in accept_encoding:
        headers["Content-Encoding"] = "gzip"
        return Response(asset.compressed, media_type=asset.media_type, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


def app_policy(connect_origins: tuple[str, ...] = ()) -> str:
    """The app page's policy; `connect_origins` are the sign-in services the page may call
    besides this server (Firebase's, where it signs people in)."""
    if not connect_origins:
        return APP_POLICY
    return f"{APP_POLICY}; connect-src 'self' {' '.join(connect_origins)}"


def build_pages_router(*, connect_origins: tuple[str, ...] = ()) -> APIRouter:
    """The app's page (also at the OAuth and sign-in callbacks; `/call` redirects to its call
    view), its assets, `/favicon.ico` and `/docs`."""
    router = APIRouter(include_in_schema=False)
    assets = _load(_app_files())
    docs_assets = _load(_swagger_files())
    version = hashlib.sha256(b"".join(assets[name].body for name in sorted(assets))).hexdigest()[:16]
    page = resources.files("web").joinpath("static", "index.html").read_text("utf-8").replace("{{version}}", version)
    docs_page = resources.files("web").joinpath("static", "docs.html").read_text("utf-8")
    app_headers = {**PAGE_HEADERS, "Content-Security-Policy": app_policy(connect_origins)}

    async def app_page() -> Response:
        return Response(page, media_type="text/html; charset=utf-8", headers=app_headers)

    # The OAuth providers send the browser back to /link/{integration}/callback; the app
    # reads the code and state there and finishes linking.
    router.add_api_route("/", app_page, methods=["GET"])
    router.add_api_route("/link/{integration}/callback", app_page, methods=["GET"])
    # Google sends the browser back here after a Firebase sign-in with Google; the app
    # hands the answer to Firebase and signs in (docs/webapp.md#firebase-sign-in).
    router.add_api_route("/sign-in/callback", app_page, methods=["GET"])

    # The call page became the app's call view; old links and bookmarks land there.
    @router.get("/call")
    async def call() -> RedirectResponse:
        return RedirectResponse("/#/call", status_code=308)

    @router.get("/assets/{given}/{name}")
    async def asset(given: str, name: str, accept_encoding: Annotated[str | None, Header()] = None) -> Response:
        # An old page asking for an old version gets today's file, but not for a year.
        return _asset_response(assets.get(name), accept_encoding, immutable=given == version)

    @router.get("/favicon.ico")
    async def favicon(accept_encoding: Annotated[str | None, Header()] = None) -> Response:
        return _asset_response(assets.get("favicon.ico"), accept_encoding, immutable=False)

    @router.get("/docs")
    async def docs() -> Response:
        headers = {**PAGE_HEADERS, "Content-Security-Policy": DOCS_POLICY}
        return Response(docs_page, media_type="text/html; charset=utf-8", headers=headers)

    @router.get("/docs/assets/{name}")
    async def docs_asset(name: str, accept_encoding: Annotated[str | None, Header()] = None) -> Response:
        return _asset_response(docs_assets.get(name) or assets.get(name), accept_encoding, immutable=False)

    return router
