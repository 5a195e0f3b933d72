"""The database's connections cut in the middle of turns, between a model call's return
and its record: every call the model answered is charged once, by the running server's
sweep when the database answers again, and every message gets its answer
(docs/money.md#charging). Checked by reading the database afterwards."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from agents import Model
from ledger import REVENUE_ACCOUNT, Posting, TransactionSpec, user_account
from settings import Settings
from tests.conftest import App
from tests.faults.outages import CuttingModel, billed_calls, settled

TEXTS = ("turn on the bedroom light", "hello Ava", "turn off the bedroom light", "what's on my calendar today?")


async def sweep(app: App) -> None:
    assert app.services.sweeper is not None
    await app.services.sweeper.sweep()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"sweep_interval_s": 0.2})


@pytest.fixture
def model(database_url: str) -> Model:
    # Cut after the 2nd, 5th, 9th and 14th calls: mid-run, at a handoff, at a reply.
    return CuttingModel(database_url, cut_after={2, 5, 9, 14})


async def test_calls_cut_off_from_their_record_are_charged_once(app: App, pool: asyncpg.Pool, model: Model) -> None:
    assert isinstance(model, CuttingModel)
    headers = await app.sign_in("Budi")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    statuses = []
    for i in range(8):
        response = await app.say(headers, TEXTS[i % len(TEXTS)], client_id=f"m-{i}")
        statuses.append(response.status_code)
        assert response.status_code == 200 or response.headers["content-type"] == "application/problem+json"
    # A turn whose connection the cut took fails its run (200, the failure in the turn) or
    # is refused (503, retry); never a 500.
    assert set(statuses) <= {200, 503}, statuses
    assert model.cuts == len(model.cut_after)

    await settled(pool, outbox=app.services.wallet.outbox)
    recorded, costed, charges, gap = await billed_calls(pool, me)
    # Every call the model answered is recorded, costed and charged exactly once.
    assert (recorded, costed, charges, gap) == (model.calls, model.calls, model.calls, 0)
    assert app.services.wallet.outbox.pending == 0
    assert (await app.services.ledger.verify()).ok


async def test_a_message_cut_off_before_its_run_is_answered_once(app: App, pool: asyncpg.Pool, model: Model) -> None:
    """A message written by a turn that the outage cut off before its run began (the
    request got 503) is answered once: by the retry with its client_id, which returns the
    whole turn, or by the server's sweep, whichever holds the thread first."""
    assert isinstance(model, CuttingModel)
    model.cut_after = set()
    headers = await app.sign_in("Sari")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    threads = app.services.threads
    for client_id in ("retried", "swept", "raced"):
        await threads.append(me, author="human", text="turn on the bedroom light", channel="text", client_id=client_id)

    retried = await app.say(headers, "turn on the bedroom light", client_id="retried")
    raced = await asyncio.gather(app.say(headers, "turn on the bedroom light", client_id="raced"), sweep(app))

    for response in (retried, raced[0]):
        assert response.status_code == 200, response.text
        turn = response.json()
        assert turn["messages"][0]["author"] == "human" and len(turn["messages"]) > 1, "the whole turn"
        assert turn["runs"] and all(r["status"] in ("succeeded", "failed") for r in turn["runs"])
    await settled(pool, outbox=app.services.wallet.outbox)
    leads = await pool.fetch(
        """SELECT m.client_id, count(r.id) AS runs FROM messages m LEFT JOIN runs r
           ON r.origin_message_id = m.id AND r.parent_run_id IS NULL
           WHERE m.person_id = $1 AND m.author = 'human' GROUP BY m.client_id ORDER BY m.client_id""",
        me,
    )
    assert [(r["client_id"], r["runs"]) for r in leads] == [("raced", 1), ("retried", 1), ("swept", 1)]
    # Every answer was heard live too: each message the runs wrote, and each run's end, is
    # in the event log the live streams read.
    unheard = await pool.fetchval(
        """SELECT count(*) FROM messages m WHERE m.person_id = $1 AND m.author <> 'human'
           AND NOT EXISTS (SELECT FROM events e WHERE e.person_id = $1 AND e.type = 'message'
                           AND e.data ->> 'id' = m.id)""",
        me,
    )
    ended = await pool.fetchval(
        """SELECT count(*) FROM events
           WHERE person_id = $1 AND type = 'run.finished' AND data ->> 'parent_run_id' IS NULL""",
        me,
    )
    answers = await pool.fetchval("SELECT count(*) FROM messages WHERE person_id = $1 AND author <> 'human'", me)
    assert unheard == 0 and answers >= 3 and ended == 3
    recorded, costed, charges, gap = await billed_calls(pool, me)
    assert (recorded, costed, charges, gap) == (model.calls, model.calls, model.calls, 0)
    assert (await app.services.ledger.verify()).ok


async def test_a_message_cut_off_on_an_empty_wallet_gets_a_visible_failure(
    app: App, pool: asyncpg.Pool, model: Model
) -> None:
    assert isinstance(model, CuttingModel)
    model.cut_after = set()
    headers = await app.sign_in("Dewi")
    me = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    balance = await app.services.wallet.balance_micros(me)
    await app.services.ledger.transact(
        spec=TransactionSpec(
            type="adjustment",
            ref=f"test:empty:{me}",
            postings=(Posting(user_account(me), -balance), Posting(REVENUE_ACCOUNT, balance)),
            metadata={"reason": "test"},
        )
    )
    calls_before = model.calls
    await app.services.threads.append(me, author="human", text="hello Ava", channel="text", client_id="broke")

    await settled(pool, outbox=app.services.wallet.outbox)  # the server's own sweep answers it

    thread = (await app.client.get("/v1/messages", headers=headers)).json()["messages"]
    assert [m["author"] for m in thread] == ["human", "ava"]
    assert "wallet" in thread[-1]["text"].lower()
    run = await pool.fetchrow("SELECT status, error_code, model_calls FROM runs WHERE person_id = $1", me)
    assert run is not None and (run["status"], run["error_code"], run["model_calls"]) == (
        "failed",
        "insufficient_balance",
        0,
    )
    assert model.calls == calls_before, "no model call on an empty wallet"
