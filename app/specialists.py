"""The specialists as this deployment runs them: their sandboxes and live adapters, the
vendor credentials they hold, and which tools each agent gets (the toolbox).

The one place capabilities plug in; the server and the tests build the toolbox here.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import asyncpg
import httpx
from pydantic import SecretStr

from agents import (
    Integration,
    Knowledge,
    RunContext,
    Specialists,
    Tool,
    Toolbox,
    VendorCredentials,
    build_specialists,
    handoff_tools,
    rafal_tools,
    recall_tools,
    yori_tools,
    zee_tools,
)
from agents.ava.wakes import wake_tools
from app.keys import integration_key, session_secret
from chat import Threads
from reminders import Reminders
from settings import Settings


def person_said(threads: Threads) -> Callable[[str], Awaitable[tuple[str, datetime] | None]]:
    """The person's latest message and when it came: what a confirmation is checked against."""
    return threads.latest_said


def vendor_credentials(settings: Settings) -> VendorCredentials:
    """The vendor apps this server holds credentials for (none by default: sandboxes only)."""

    def pair(client_id: str | None, secret: SecretStr | None) -> tuple[str, str] | None:
        return (client_id, secret.get_secret_value()) if client_id and secret is not None else None

    return VendorCredentials(
        google=pair(settings.google_client_id, settings.google_client_secret),
        spotify=pair(settings.spotify_client_id, settings.spotify_client_secret),
        tuya=pair(settings.tuya_access_id, settings.tuya_access_secret),
        tuya_base_url=settings.tuya_base_url,
        redirect_base_url=settings.oauth_redirect_base_url,
    )


def build_specialists_on(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    pool: asyncpg.Pool,
    threads: Threads,
    vendor_transport: httpx.AsyncBaseTransport | None,
) -> Specialists:
    """The specialists' sandboxes, live adapters (where credentials are set) and linking,
    over one HTTP client for every vendor, closed with the stack."""
    http = httpx.AsyncClient(
        transport=vendor_transport, timeout=settings.integration_timeout_s, limits=httpx.Limits(max_connections=50)
    )
    stack.push_async_callback(http.aclose)
    return build_specialists(
        pool=pool,
        http=http,
        credentials=vendor_credentials(settings),
        token_key=integration_key(settings),
        # The OAuth state key is derived from the session secret, apart from it by its label.
        state_key=hmac.new(session_secret(settings), b"oauth-state", hashlib.sha256).digest(),
        person_said=person_said(threads),
    )


def _adapter_names(integration: Integration[Any]) -> str:
    return " + ".join(type(a).__name__ for a in (integration.sandbox, integration.live) if a is not None)


def build_toolbox(
    *, specialists: Specialists, knowledge: Knowledge | None = None, reminders: Reminders | None = None
) -> Toolbox:
    """Which tools each agent gets in this deployment: the one place capabilities plug in."""
    toolbox = Toolbox()
    home, music, workspace = specialists.home, specialists.music, specialists.workspace

    def handoffs(context: RunContext) -> list[Tool]:
        assert context.delegate is not None, "only the lead hands on"
        return handoff_tools(context.delegate)

    def zee(context: RunContext) -> list[Tool]:
        return zee_tools(
            home.once(context.person_id),
            specialists.pending,
            person_id=context.person_id,
            run_id=context.run_id,
            by_wake_note=context.trigger == "postera",
        )

    def rafal(context: RunContext) -> list[Tool]:
        return rafal_tools(
            workspace.once(context.person_id),
            specialists.pending,
            person_id=context.person_id,
            zone=context.zone,
            run_id=context.run_id,
            by_wake_note=context.trigger == "postera",
        )

    toolbox.register("ava", handoffs)
    if knowledge is not None:
        memory = knowledge
        toolbox.register(
            "ava", lambda context: recall_tools(memory, person_id=context.person_id, person_name=context.person_name)
        )
    if reminders is not None:
        # Only Ava keeps wake notes: specialists act in the present (SPEC §5, role layer).
        toolbox.register("ava", lambda context: wake_tools(reminders, context))
    toolbox.register("zee", zee)
    toolbox.register("yori", lambda context: yori_tools(music.once(context.person_id), person_id=context.person_id))
    toolbox.register("rafal", rafal)
    return toolbox
