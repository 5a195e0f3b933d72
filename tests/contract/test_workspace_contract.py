"""The `Workspace` port's contract (mail, calendar, contacts), run against the sandbox and
against the Google adapter talking to in-process fakes of Gmail, Calendar and People
(with real links and token refresh)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import asyncpg
import pytest

from agents.integrations.hints import (
    InputInvalid,
    NotAllowed,
    NotFound,
    NotLinked,
    RateLimited,
    TokenExpired,
    VendorUnavailable,
)
from agents.integrations.oauth import OAuthClient
from agents.rafal.agent import GOOGLE as GOOGLE_OAUTH
from agents.rafal.google import GoogleWorkspace
from agents.rafal.sandbox import SandboxWorkspace
from agents.rafal.workspace import CONTACTS_LIMIT_MAX, EVENTS_LIMIT_MAX, MESSAGES_LIMIT_MAX, Workspace
from tests.fakes.linked import client_for, linked_tokens
from tests.fakes.vendors import FakeGoogle
from tests.specs.google import GOOGLE

ZONE = ZoneInfo("Asia/Jakarta")


@pytest.fixture(params=["sandbox", "google"])
async def workspace(request: pytest.FixtureRequest, pool: asyncpg.Pool) -> AsyncIterator[Workspace]:
    if request.param == "sandbox":
        yield SandboxWorkspace(pool)
        return
    fake = FakeGoogle()
    async with client_for(fake) as http:
        yield GoogleWorkspace(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=True))
    assert fake.violations == []  # every call and answer as the vendor's reference has it


async def test_todays_inbox_is_read_with_gmail_syntax(workspace: Workspace) -> None:
    today = datetime.now(ZONE).strftime("%Y/%m/%d")
    mail = await workspace.read_messages(person_id="usr_1", query=f"in:inbox after:{today}", limit=10, zone=ZONE)
    assert mail
    assert all(m.date.astimezone(ZONE).date() == datetime.now(ZONE).date() for m in mail)
    assert any("Dinner" in m.subject and m.body for m in mail)
    from_sari = await workspace.read_messages(person_id="usr_1", query="from:sari", limit=10, zone=ZONE)
    assert from_sari and all("sari" in m.sender.lower() for m in from_sari)


async def test_sent_mail_is_in_the_sent_folder(workspace: Workspace) -> None:
    await workspace.send_email(
        person_id="usr_1", to="budi@example.com", subject="Running late", body="I'll be late.", zone=ZONE
    )
    sent = await workspace.read_messages(person_id="usr_1", query="in:sent", limit=10, zone=ZONE)
    assert [(m.to, m.subject) for m in sent] == [("budi@example.com", "Running late")]
    assert "I'll be late." in sent[0].body
    assert await workspace.read_messages(person_id="usr_2", query="in:sent", limit=10, zone=ZONE) == []


@pytest.mark.parametrize("address", ["budi", "budi@", "a b@example.com", "budi@example", "x@y.com\nBcc: z@evil.com"])
async def test_malformed_addresses_are_refused(workspace: Workspace, address: str) -> None:
    with pytest.raises(InputInvalid):
        await workspace.send_email(person_id="usr_1", to=address, subject="Hi", body="Hello", zone=ZONE)


async def test_an_added_event_is_listed_in_its_window(workspace: Workspace) -> None:
    start = (datetime.now(ZONE) + timedelta(days=3)).replace(hour=19, minute=0, second=0, microsecond=0)
    event = await workspace.add_event(
        person_id="usr_1",
        summary="Dinner with Sari",
        start=start,
        end=start + timedelta(hours=1),
        description="",
        location="Kemang",
        guests=[],
        zone=ZONE,
    )
    assert event.summary == "Dinner with Sari" and event.start == start
    day = start.replace(hour=0)
    listed = await workspace.list_events(
        person_id="usr_1", time_min=day, time_max=day + timedelta(days=1), query="", limit=20, zone=ZONE
    )
    dinners = [e for e in listed if e.summary == "Dinner with Sari"]
    assert [(e.id, e.location) for e in dinners] == [(event.id, "Kemang")]
    # On the person's clock, as asked: an adapter that read the wall time as UTC (or
    # dropped the offset) would list the dinner seven hours off.
    assert (dinners[0].start, dinners[0].end) == (start, start + timedelta(hours=1))
    assert (dinners[0].start.astimezone(ZONE).hour, dinners[0].start.astimezone(ZONE).minute) == (19, 0)
    with pytest.raises(InputInvalid):
        await workspace.add_event(
            person_id="usr_1",
            summary="Backwards",
            start=start,
            end=start - timedelta(hours=1),
            description="",
            location="",
            guests=[],
            zone=ZONE,
        )


async def test_contacts_are_listed_and_added(workspace: Workspace) -> None:
    names = [c.name for c in await workspace.list_contacts(person_id="usr_1", limit=50, zone=ZONE)]
    assert any("Budi" in n for n in names) and any("Sari" in n for n in names)
    added = await workspace.add_contact(
        person_id="usr_1", name="Dewi", emails=["dewi@example.com"], phones=[], zone=ZONE
    )
    assert added.name == "Dewi"
    contacts = await workspace.list_contacts(person_id="usr_1", limit=50, zone=ZONE)
    assert ("Dewi", ("dewi@example.com",)) in [(c.name, c.emails) for c in contacts]
    with pytest.raises(InputInvalid):
        await workspace.add_contact(person_id="usr_1", name="Bad", emails=["not-an-address"], phones=[], zone=ZONE)


async def test_google_link_problems_become_hints(pool: asyncpg.Pool) -> None:
    fake = FakeGoogle()
    async with client_for(fake) as http:
        workspace = GoogleWorkspace(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=True))
        with pytest.raises(NotLinked):
            await workspace.list_contacts(person_id="usr_3", limit=5, zone=ZONE)
        fake.oauth.refresh.clear()  # the person revoked access at Google
        with pytest.raises(TokenExpired):
            await workspace.list_contacts(person_id="usr_1", limit=5, zone=ZONE)


async def test_every_google_call_is_one_the_reference_allows(pool: asyncpg.Pool) -> None:
    fake = FakeGoogle()
    async with client_for(fake) as http:
        tokens = await linked_tokens(pool, http, fake.oauth, google=True)
        workspace = GoogleWorkspace(http=http, tokens=tokens)
        for query in ("in:inbox is:unread newer_than:2w", 'from:sari subject:"dinner" -in:sent', "after:2026/12/01"):
            await workspace.read_messages(person_id="usr_1", query=query, limit=MESSAGES_LIMIT_MAX, zone=ZONE)
        await workspace.send_email(person_id="usr_1", to="budi@example.com", subject="Hi", body="Hello", zone=ZONE)
        start = datetime.now(ZONE) + timedelta(days=1)
        await workspace.add_event(
            person_id="usr_1",
            summary="Lunch",
            start=start,
            end=start + timedelta(hours=1),
            description="",
            location="",
            guests=["sari@example.com"],
            zone=ZONE,
        )
        await workspace.list_events(
            person_id="usr_1", time_min=start, time_max=None, query="Lunch", limit=EVENTS_LIMIT_MAX, zone=ZONE
        )
        await workspace.list_contacts(person_id="usr_1", limit=CONTACTS_LIMIT_MAX, zone=ZONE)
        await workspace.add_contact(person_id="usr_1", name="Dewi", emails=[], phones=["+62811"], zone=ZONE)
        client = OAuthClient(
            GOOGLE_OAUTH,
            client_id=fake.oauth.client_id,
            client_secret=fake.oauth.client_secret,
            redirect_uri="http://t/cb",
            http=http,
        )
        assert await client.revoke(next(iter(fake.oauth.refresh)))
    assert fake.violations == []
    assert fake.checker.called == {e.name for e in GOOGLE.endpoints}


async def test_a_dropped_date_filter_would_fail_the_suite(pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake's mail spans days, so an adapter that lost `after:` lists last week's mail."""
    import agents.rafal.google

    def dropping(query: str, **_: object) -> str:
        return " ".join(t for t in query.split() if not t.startswith("after:"))

    monkeypatch.setattr(agents.rafal.google, "to_gmail", dropping)
    fake = FakeGoogle()
    async with client_for(fake) as http:
        workspace = GoogleWorkspace(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=True))
        today = datetime.now(ZONE).strftime("%Y/%m/%d")
        mail = await workspace.read_messages(person_id="usr_1", query=f"in:inbox after:{today}", limit=10, zone=ZONE)
    assert any(m.date.astimezone(ZONE).date() != datetime.now(ZONE).date() for m in mail)


async def test_an_unknown_search_term_is_outside_the_reference(pool: asyncpg.Pool) -> None:
    fake = FakeGoogle()
    async with client_for(fake) as http:
        workspace = GoogleWorkspace(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=True))
        assert await workspace.read_messages(person_id="usr_1", query="sender:sari", limit=10, zone=ZONE) == []
        assert await workspace.read_messages(person_id="usr_1", query="invoice", limit=10, zone=ZONE)
    assert [v for v in fake.violations if "sender: is not a Gmail search operator" in v]


@pytest.mark.parametrize(
    ("status", "reason", "hint"),
    [
        (400, "", InputInvalid),
        (403, "rateLimitExceeded", RateLimited),
        (403, "userRateLimitExceeded", RateLimited),
        (403, "dailyLimitExceeded", RateLimited),
        (403, "quotaExceeded", RateLimited),
        (403, "insufficientPermissions", TokenExpired),
        (403, "domainPolicy", NotAllowed),
        (404, "", NotFound),
        (429, "rateLimitExceeded", RateLimited),
        (500, "", VendorUnavailable),
        (503, "", VendorUnavailable),
    ],
)
async def test_each_documented_google_error_becomes_its_hint(
    pool: asyncpg.Pool, status: int, reason: str, hint: type[Exception]
) -> None:
    fake = FakeGoogle()
    async with client_for(fake) as http:
        workspace = GoogleWorkspace(http=http, tokens=await linked_tokens(pool, http, fake.oauth, google=True))
        fake.failing = (status, reason)
        with pytest.raises(hint):
            await workspace.list_contacts(person_id="usr_1", limit=5, zone=ZONE)
    assert fake.violations == []
