"""Shared fixtures: one real PostgreSQL for the session, a fresh database per test.

Without DATABASE_URL the suite starts an embedded server (the product's own default) in
a temporary folder. Migrations run once into a template database; each test that needs
a database gets a clone of it (CREATE DATABASE ... TEMPLATE), which is far faster than
migrating every time and keeps tests from seeing each other's rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr

from agents import Model, ScriptedModel
from app.server import Services, running
from database import EmbeddedPostgres, apply_migrations
from settings import Settings
from tests.fakes.traces import recording

_TEMPLATE = f"avagenc_template_{os.getpid()}"
_counter = itertools.count()


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


async def _prepare_template(admin_url: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{_TEMPLATE}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{_TEMPLATE}"')
    finally:
        await conn.close()
    conn = await asyncpg.connect(with_database(admin_url, _TEMPLATE))
    try:
        await apply_migrations(conn)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    """A URL to a maintenance database on a server the tests may create databases in."""
    embedded: EmbeddedPostgres | None = None
    url = os.environ.get("DATABASE_URL")
    if not url:
        folder = Path(tempfile.mkdtemp(prefix="avagenc-pg-"))
        embedded = EmbeddedPostgres(folder / "pg")
        url = embedded.start()
    asyncio.run(_prepare_template(url))
    try:
        yield url
    finally:
        if embedded is not None:
            embedded.stop()


@contextlib.asynccontextmanager
async def fresh_database(pg_admin_url: str) -> AsyncIterator[str]:
    """A migrated database of its own (a clone of the template), dropped afterwards."""
    name = f"avagenc_test_{os.getpid()}_{next(_counter)}"
    conn = await asyncpg.connect(pg_admin_url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{_TEMPLATE}"')
    finally:
        await conn.close()
    try:
        yield with_database(pg_admin_url, name)
    finally:
        conn = await asyncpg.connect(pg_admin_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


@pytest.fixture
async def database_url(pg_admin_url: str) -> AsyncIterator[str]:
    async with fresh_database(pg_admin_url) as url:
        yield url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return offline_settings(database_url, tmp_path)


def offline_settings(database_url: str, tmp_path: Path) -> Settings:
    """The settings every test server runs with: offline, on its own database and folder."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=database_url,
        avagenc_home=tmp_path / "state",
        session_secret=SecretStr("test-secret-" + "x" * 40),
        gemini_api_key=None,
        # Vendor credentials in a developer's environment (for tests/live) never reach these tests.
        specialist_settings={
            "rafal": {"google_client_id": None},
            "yori": {"spotify_client_id": None},
            "zee": {"tuya_access_id": None},
        },
        sse_keepalive_s=1.0,
        thread_wait_s=30.0,
        # Tests sign many people in from one address and post quickly: the limits are
        # tested on their own (tests/e2e/test_limits.py) and out of every other test's way.
        sign_ins_per_address_max=100_000,
        phone_codes_per_address_per_hour_max=100_000,
        runs_per_person_per_minute_max=100_000,
        runs_in_flight_per_person_max=100,
    )


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    from database import create_pool

    pool = await create_pool(database_url, size_max=10)
    yield pool
    await pool.close()


class App:
    """The whole product in-process, reached over HTTP through an ASGI transport."""

    def __init__(self, services: Services, app: FastAPI) -> None:
        self.services = services
        self.app = app
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")

    async def sign_in(self, name: str = "Budi", time_zone: str = "Asia/Jakarta") -> dict[str, str]:
        response = await self.client.post("/v1/auth/local", json={"name": name})
        assert response.status_code == 200, response.text
        return {"Authorization": f"Bearer {response.json()['token']}", "time-zone": time_zone}

    async def say(self, headers: dict[str, str], text: str, **extra: object) -> httpx.Response:
        return await self.client.post("/v1/messages", json={"text": text, **extra}, headers=headers)


@pytest.fixture
def model() -> Model | None:
    """Override in a test module (or parametrize) to run the app on another model."""
    return None


@pytest.fixture
async def app(settings: Settings, model: Model | None) -> AsyncIterator[App]:
    async with running(settings, model=model) as (services, fastapi_app):
        harness = App(services, fastapi_app)
        try:
            yield harness
        finally:
            await harness.client.aclose()


@pytest.fixture
def scripted() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span this test makes, in memory (tests/fakes/traces.py)."""
    yield from recording()
