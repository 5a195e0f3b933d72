"""Many turns at once on one small wallet: the guard holds the person's thread, so the
turns queue behind it and the wallet ends at most one model call past zero
(docs/money.md#the-guard), and the books still balance."""

from __future__ import annotations

import asyncio
from zoneinfo import ZoneInfo

import asyncpg

from ledger import user_account
from tests.conftest import App

TURNS = 90
# Asked of Ava (one call) and of a specialist through her (several), so turns end both ways.
TEXTS = ("hello Ava", "turn on the living room lights", "what's on my calendar today?")


async def test_ninety_turns_at_once_end_at_most_one_call_past_zero(app: App, pool: asyncpg.Pool) -> None:
    headers = await app.sign_in("Sari")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]

    responses = await asyncio.gather(*(app.say(headers, TEXTS[i % len(TEXTS)]) for i in range(TURNS)))

    statuses = sorted({r.status_code for r in responses})
    assert set(statuses) <= {200, 402}, statuses
    assert 200 in statuses and 402 in statuses, "the grant pays for some turns and not for all"
    for refused in (r for r in responses if r.status_code == 402):
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["type"].endswith("insufficient_balance")
    charges = await pool.fetch(
        """SELECT -e.amount_micros AS micros FROM entries e JOIN transactions t ON t.id = e.transaction_id
           WHERE e.account_id = $1 AND t.type = 'agent_call'""",
        user_account(me),
    )
    largest = max(r["micros"] for r in charges)
    balance = (await app.client.get("/v1/wallet", headers=headers)).json()["balance_micros"]
    # Past zero by less than the dearest single call it made: no call began on an empty wallet.
    assert balance > -largest, (balance, largest)
    # A turn refused with 402 wrote nothing: every human message has a run.
    unanswered = await pool.fetchval(
        """SELECT count(*) FROM messages m WHERE m.person_id = $1 AND m.author = 'human'
           AND NOT EXISTS (SELECT FROM runs r WHERE r.origin_message_id = m.id)""",
        me,
    )
    assert unanswered == 0
    assert (await app.services.ledger.verify()).ok


async def test_text_turns_and_wake_notes_at_once_share_one_guard(app: App, pool: asyncpg.Pool) -> None:
    """Two doors on one wallet: turns from the text API and Ava waking on notes queue on
    the same thread lock, so together they still end at most one call past zero."""
    headers = await app.sign_in("Wulan")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    person = await app.services.people.get(me)
    assert person is not None
    zone = ZoneInfo("Asia/Jakarta")

    texts = [app.say(headers, TEXTS[i % len(TEXTS)]) for i in range(45)]
    wakes = [
        app.services.turns.wake(person, note_id=f"note-{i}", text="Remind Wulan to water the plants.", zone=zone)
        for i in range(45)
    ]
    together = await asyncio.gather(asyncio.gather(*texts), asyncio.gather(*wakes))
    responses, woken = together

    assert {r.status_code for r in responses} <= {200, 402}
    assert {w.outcome for w in woken} <= {"ran", "silent", "wallet_empty"}
    assert "wallet_empty" in {w.outcome for w in woken} or 402 in {r.status_code for r in responses}
    largest = await pool.fetchval(
        """SELECT max(-e.amount_micros) FROM entries e JOIN transactions t ON t.id = e.transaction_id
           WHERE e.account_id = $1 AND t.type = 'agent_call'""",
        user_account(me),
    )
    balance = (await app.client.get("/v1/wallet", headers=headers)).json()["balance_micros"]
    assert balance > -largest, (balance, largest)
    assert (await app.services.ledger.verify()).ok
