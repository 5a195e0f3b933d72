"""Rafal, the Google Workspace specialist, as the room knows it: one declaration
(agents/specialist.py).

Rafal acts on a `Workspace` (mail, calendar, contacts): every person's sandbox workspace,
or their Google account once they link it and this server holds a Google OAuth client.
"""

from __future__ import annotations

import asyncpg
from pydantic import SecretStr

from agents.capabilities import Capability, words
from agents.integrations.oauth import Provider
from agents.offline.skillset import SkillSet
from agents.rafal.google import GoogleWorkspace
from agents.rafal.offline import claims, mail_turn, wants_workspace
from agents.rafal.sandbox import SandboxWorkspace
from agents.rafal.tools import rafal_tools
from agents.rafal.workspace import Workspace
from agents.roster import AgentSpec
from agents.specialist import LiveParts, Port, Specialist, Vendor, VendorSettings

GOOGLE = Provider(
    "google",
    "Google",
    "https://accounts.google.com/o/oauth2/v2/auth",
    "https://oauth2.googleapis.com/token",
    "https://oauth2.googleapis.com/revoke",
    (
        "https://www.googleapis.com/auth/gmail.readonly",
        "https://www.googleapis.com/auth/gmail.send",
        "https://www.googleapis.com/auth/calendar.events",
        "https://www.googleapis.com/auth/contacts",
    ),
    basic_auth=False,
    # offline + consent: a refresh token every time, and re-linking replaces it.
    extra_authorize={"access_type": "offline", "prompt": "consent", "include_granted_scopes": "true"},
)


class GoogleSettings(VendorSettings):
    """A Google OAuth client (its redirect URI: OAUTH_REDIRECT_BASE_URL/google/callback)."""

    google_client_id: str | None = None
    google_client_secret: SecretStr | None = None

    def client(self) -> tuple[str, str] | None:
        if self.google_client_id and self.google_client_secret is not None:
            return self.google_client_id, self.google_client_secret.get_secret_value()
        return None


def _sandbox(pool: asyncpg.Pool) -> Workspace:
    return SandboxWorkspace(pool)


def _live(parts: LiveParts) -> Workspace | None:
    return GoogleWorkspace(http=parts.http, tokens=parts.tokens) if parts.tokens is not None else None


SPECIALIST: Specialist[Workspace] = Specialist(
    agent=AgentSpec(
        "rafal",
        "Rafal",
        "specialist",
        "email, calendar and contacts",
        "Google Workspace specialist: email, calendar and contacts. Acts only in the present.",
    ),
    capabilities=(
        Capability(
            "mail",
            words(r"\b(reads?|sends?|check(s)?) (and sends? )?(your |the person's )?(e-?mails?|mail|inbox)\b"),
            frozenset({"read_messages", "send_email", "search_messages", "read_email"}),
            "read and send your email",
            "baca dan kirim email",
        ),
        Capability(
            "calendar",
            words(r"\b(lists?|adds?|reads?) (and adds? )?(calendar )?events\b"),
            frozenset({"list_events", "add_event"}),
            "see and add calendar events",
            "lihat dan nambah acara di kalender",
        ),
        Capability(
            "contacts",
            words(r"\b(reads?|lists?|adds?) (and adds? )?contacts\b"),
            frozenset({"list_contacts", "add_contact"}),
            "look up and add contacts",
            "cari dan nambah kontak",
        ),
    ),
    port=Port(
        kind="workspace",
        sandbox=_sandbox,
        live=_live,
        vendor=Vendor("google", "Google Workspace", oauth=GOOGLE),
        settings=GoogleSettings,
    ),
    tools=lambda choose, context, pending: rafal_tools(
        choose,
        pending,
        person_id=context.person_id,
        zone=context.zone,
        run_id=context.run_id,
        by_wake_note=context.trigger == "postera",
    ),
    offline=SkillSet(
        claims=claims,
        skills=(mail_turn,),
        not_yet=(
            "I can't open your email, calendar or contacts yet: nothing is connected here.",
            "Maaf, aku belum bisa buka email, kalender, atau kontakmu: belum ada yang tersambung di sini.",
        ),
        owns=wants_workspace,
        precedence=30,
        timed_work_is_later=False,  # "add dinner on Friday at 7": the time is the event's
    ),
)
