"""The specialists as this deployment runs them: each installed package's sandbox and
live adapter, the vendor settings it declares, and which tools each agent gets (the
toolbox).

The one place capabilities plug in; the server and the tests build the toolbox here. No
specialist is named: they come from the roster (agents/roster.py), which the server
installs from AGENT_PACKAGES before anything here runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
from collections.abc import Awaitable, Callable

import asyncpg
import httpx

from agents import (
    AGENTS,
    Knowledge,
    RunContext,
    Specialists,
    Tool,
    Toolbox,
    VendorSettings,
    build_specialists,
    handoff_tools,
    recall_tools,
    specialist_settings_models,
)
from agents.ava.wakes import wake_tools
from app.keys import integration_key, session_secret
from chat import Threads
from reminders import Reminders
from settings import Settings


def specialist_settings(settings: Settings) -> dict[str, VendorSettings]:
    """Each installed specialist's own settings (agents/specialist.py), read once here."""
    return {name: settings.for_specialist(name, model) for name, model in specialist_settings_models().items()}


def check_models(settings: Settings) -> None:
    """GEMINI_MODELS may only name agents in the room: a misspelt handle would silently
    leave that agent on the default model."""
    unknown = sorted(set(settings.gemini_models) - set(AGENTS))
    if unknown:
        raise ValueError(f"GEMINI_MODELS names {', '.join(unknown)}, not in the room ({', '.join(AGENTS)})")


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
        settings=specialist_settings(settings),
        redirect_base_url=settings.oauth_redirect_base_url,
        token_key=integration_key(settings),
        # The OAuth state key is derived from the session secret, apart from it by its label.
        state_key=hmac.new(session_secret(settings), b"oauth-state", hashlib.sha256).digest(),
        person_said=threads.latest_said,
    )


def build_toolbox(
    *,
    specialists: Specialists,
    knowledge: Knowledge | None = None,
    reminders: Reminders | None = None,
    catch_up: Callable[[str], Awaitable[object]] | None = None,
) -> Toolbox:
    """Which tools each agent gets in this deployment: the one place capabilities plug in."""
    toolbox = Toolbox()

    def handoffs(context: RunContext) -> list[Tool]:
        assert context.delegate is not None, "only the lead hands on"
        return handoff_tools(context.delegate)

    toolbox.register("ava", handoffs)
    if knowledge is not None:
        memory = knowledge

        def recall(context: RunContext) -> list[Tool]:
            # What the person just said is learned before the graph is asked (bounded by catch_up).
            learn = (lambda: catch_up(context.person_id)) if catch_up is not None else None
            return recall_tools(memory, person_id=context.person_id, person_name=context.person_name, catch_up=learn)

        toolbox.register("ava", recall)
    if reminders is not None:
        # Only Ava keeps wake notes: specialists act in the present (docs/agents.md#wake-notes-postera).
        toolbox.register("ava", lambda context: wake_tools(reminders, context))
    specialists.register_tools(toolbox)
    return toolbox
