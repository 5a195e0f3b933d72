"""The wallet through the product's doors: signup grant, per-call charges with receipts,
the 402 guard, usage by local day, admin top-ups, and charges that survive failures,
cancelled requests and crashes."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import SecretStr

from agents import FunctionCall, Model, ModelRequest, ModelResponse, ModelUnavailable, ScriptedModel, Usage
from chat import drain_detached
from ledger import format_rupiah, user_account
from settings import Settings
from tests.conftest import App

ADMIN = "admin-secret-key"
GRANT = 5_000_000_000


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"admin_api_key": SecretStr(ADMIN)})


@pytest.fixture
def model(scripted: ScriptedModel) -> Model:
    return scripted


def call(name: str, args: dict[str, object] | None = None) -> ModelResponse:
    return ModelResponse(
        "", (FunctionCall(f"c-{name}", name, args or {}),), Usage(prompt_tokens=1000, output_tokens=100)
    )


def reply(text: str) -> ModelResponse:
    return ModelResponse(text, (), Usage(prompt_tokens=1000, cached_tokens=400, output_tokens=50, thinking_tokens=10))


# 1000 prompt x 10,000 + 100 output x 42,000 µRp
CALL_COST = 1000 * 10_000 + 100 * 42_000
# (1000 - 400) x 10,000 + 400 x 2,500 + (50 + 10) x 42,000 µRp
REPLY_COST = 600 * 10_000 + 400 * 2_500 + 60 * 42_000


async def balance(app: App, headers: dict[str, str]) -> int:
    response = await app.client.get("/v1/wallet", headers=headers)
    assert response.status_code == 200
    micros: int = response.json()["balance_micros"]
    return micros


async def person_id(app: App, headers: dict[str, str]) -> str:
    pid: str = (await app.client.get("/v1/me", headers=headers)).json()["id"]
    return pid


async def test_a_new_person_starts_with_the_signup_grant(app: App) -> None:
    headers = await app.sign_in("Budi")
    wallet = (await app.client.get("/v1/wallet", headers=headers)).json()
    assert wallet == {"balance_micros": GRANT, "balance": format_rupiah(GRANT), "currency": "IDR"}
    again = await app.sign_in("Budi")
    assert await balance(app, again) == GRANT, "the grant is once per person"


async def test_each_model_call_is_charged_with_a_receipt(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    scripted.extend([call("zee", {"tag": "@zee"}), reply("Done."), reply("")])
    body = (await app.say(headers, "lights please")).json()
    ava, zee = body["runs"]
    assert zee["cost_micros"] == REPLY_COST
    assert ava["cost_micros"] == CALL_COST + REPLY_COST
    assert await balance(app, headers) == GRANT - (CALL_COST + 2 * REPLY_COST)
    entries = (await app.client.get("/v1/wallet/entries", headers=headers)).json()["entries"]
    charges = [e for e in entries if e["type"] == "agent_call"]
    assert len(charges) == 3
    receipt = charges[-1]["receipt"]
    assert (receipt["agent"], receipt["trigger"], receipt["run_id"], receipt["call_index"]) == (
        "ava",
        "human",
        ava["id"],
        1,
    )
    assert receipt["tokens"]["prompt_tokens"] == 1000 and receipt["price"]["input_per_mtok_idr"] == 10_000
    assert {(c["receipt"]["agent"], c["receipt"]["trigger"]) for c in charges} == {("ava", "human"), ("zee", "ava")}
    assert ava["usage"]["prompt_tokens"] == 2000, "the run's usage comes from the same calls as the receipts"


async def test_usage_for_a_local_day(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    scripted.extend([reply("hi")])
    await app.say(headers, "hello")
    today = (await app.client.get("/v1/wallet/usage", headers=headers)).json()
    assert today["cost_micros"] == REPLY_COST and today["calls"] == 1
    long_ago = (await app.client.get("/v1/wallet/usage", headers=headers, params={"date": "2020-01-01"})).json()
    assert long_ago["cost_micros"] == 0
    bad = await app.client.get("/v1/wallet/usage", headers=headers, params={"date": "yesterday"})
    assert bad.status_code == 422


async def test_a_run_that_fails_on_its_second_call_is_charged_for_the_first(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    scripted.extend([call("list_devices"), ModelUnavailable("boom")])
    body = (await app.say(headers, "@zee lights")).json()
    (run,) = body["runs"]
    assert run["status"] == "failed" and run["cost_micros"] == CALL_COST
    assert await balance(app, headers) == GRANT - CALL_COST


async def test_a_cancelled_request_is_still_charged(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    started = asyncio.Event()
    release = asyncio.Event()

    def slow_second(request: ModelRequest) -> ModelResponse:
        return reply("finally")

    scripted.extend([call("list_devices")])

    class Gate:
        async def generate(self, *, request: ModelRequest) -> ModelResponse:
            if len(scripted.requests) == 1:
                started.set()
                await release.wait()
                return slow_second(request)
            return await scripted.generate(request=request)

    app.services.turns._model = Gate()  # hold the run open between its two calls
    task = asyncio.create_task(app.say(headers, "@zee lights"))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = await person_id(app, headers)
    await drain_detached(timeout_s=10)  # the turn outlived its request and finished
    assert await balance(app, headers) == GRANT - CALL_COST - REPLY_COST
    origin = (await app.services.threads.page(pid, before=None, after=None, limit=5))[0]
    runs = await app.services.runs.of_origin(pid, origin.id)
    assert runs[0].status == "succeeded" and runs[0].cost_micros == CALL_COST + REPLY_COST


async def test_a_retried_request_never_charges_twice(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    scripted.extend([reply("hi")])
    await app.say(headers, "hello", client_id="once")
    await app.say(headers, "hello", client_id="once")
    assert await balance(app, headers) == GRANT - REPLY_COST


async def test_an_empty_wallet_gets_402_and_nothing_is_written(app: App, scripted: ScriptedModel) -> None:
    headers = await app.sign_in()
    pid = await person_id(app, headers)
    from ledger import Posting, TransactionSpec

    await app.services.ledger.transact(
        spec=TransactionSpec(
            type="adjustment",
            ref="test:drain",
            postings=(Posting(user_account(pid), -GRANT), Posting("revenue:IDR", GRANT)),
        )
    )
    response = await app.say(headers, "hello")
    assert response.status_code == 402
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["type"] == "insufficient_balance"
    assert (await app.client.get("/v1/messages", headers=headers)).json()["messages"] == []
    assert scripted.requests == []


async def test_a_text_turn_refused_at_the_handoff_has_avas_explanation_in_the_thread(
    app: App, scripted: ScriptedModel
) -> None:
    headers = await app.sign_in()
    pid = await person_id(app, headers)
    from ledger import Posting, TransactionSpec

    # Leave exactly enough for Ava's first call, so the wallet is empty when she hands on.
    await app.services.ledger.transact(
        spec=TransactionSpec(
            type="adjustment",
            ref="test:nearly",
            postings=(Posting(user_account(pid), -(GRANT - CALL_COST)), Posting("revenue:IDR", GRANT - CALL_COST)),
        )
    )
    scripted.extend([call("zee", {"tag": "@zee"}), reply("never asked for")])
    body = (await app.say(headers, "lights")).json()
    assert [r["agent"] for r in body["runs"]] == ["ava"], "no specialist run started"
    # Ava says why in a reply of our own: no second model call, nothing more charged.
    assert len(scripted.requests) == 1
    assert [m["author"] for m in body["messages"]] == ["human", "ava"]
    explanation = body["messages"][-1]["text"]
    assert "wallet is empty" in explanation and "Zee" in explanation and "#" not in explanation
    (run,) = body["runs"]
    assert (run["status"], run["error"]["type"]) == ("failed", "insufficient_balance")
    assert body["messages"][-1]["run_id"] == run["id"]
    assert await balance(app, headers) == 0
    thread = (await app.client.get("/v1/messages", headers=headers)).json()["messages"]
    assert [m["text"] for m in thread] == ["lights", explanation]


async def test_admin_top_up_is_idempotent_and_validated(app: App) -> None:
    headers = await app.sign_in()
    pid = await person_id(app, headers)
    admin = {"Authorization": f"Bearer {ADMIN}"}
    body = {"user_id": pid, "amount_micros": 1_000_000, "ref": "pay-1"}
    first = await app.client.post("/v1/admin/topups", json=body, headers=admin)
    again = await app.client.post("/v1/admin/topups", json=body, headers=admin)
    assert first.status_code == again.status_code == 200
    assert (first.json()["replayed"], again.json()["replayed"]) == (False, True)
    assert await balance(app, headers) == GRANT + 1_000_000
    cases = [
        ({**body, "amount_micros": 2_000_000}, admin, 409, "ref_conflict"),
        ({**body, "amount_micros": 0, "ref": "x"}, admin, 422, "validation_failed"),
        ({**body, "amount_micros": -5, "ref": "x"}, admin, 422, "validation_failed"),
        ({**body, "amount_micros": 1.5, "ref": "x"}, admin, 422, "validation_failed"),
        ({**body, "amount_micros": "100", "ref": "x"}, admin, 422, "validation_failed"),
        ({**body, "user_id": "usr_nobody", "ref": "x"}, admin, 404, "not_found"),
        (body, {"Authorization": "Bearer wrong"}, 401, "unauthorized"),
        (body, {}, 401, "unauthorized"),
    ]
    for payload, auth, status, kind in cases:
        response = await app.client.post("/v1/admin/topups", json=payload, headers=auth)
        assert (response.status_code, response.json()["type"]) == (status, kind), payload
    assert await balance(app, headers) == GRANT + 1_000_000, "nothing else was written"
    assert (await app.services.ledger.verify()).ok


async def test_a_person_cannot_see_another_persons_wallet(app: App, scripted: ScriptedModel) -> None:
    budi, sari = await app.sign_in("Budi"), await app.sign_in("Sari")
    scripted.extend([reply("hi")])
    await app.say(budi, "hello")
    assert await balance(app, sari) == GRANT
    assert all(
        e["type"] == "signup_grant"
        for e in (await app.client.get("/v1/wallet/entries", headers=sari)).json()["entries"]
    )


async def test_startup_charges_calls_a_crash_left_uncharged_and_fails_abandoned_runs(
    app: App, settings: Settings, scripted: ScriptedModel
) -> None:
    from app.server import running

    headers = await app.sign_in()
    pid = await person_id(app, headers)
    message = await app.services.threads.append(pid, author="human", text="hello", channel="text")
    run = await app.services.runs.start(
        pid,
        agent="ava",
        trigger="human",
        parent_run_id=None,
        trigger_message_id=message.id,
        origin_message_id=message.id,
        channel="text",
    )
    # The process "crashed" after the model answered and the call was recorded, before the charge.
    await app.services.runs.record_call(
        run.id, index=1, model="offline-1", usage={"prompt_tokens": 1000, "output_tokens": 100}
    )
    async with running(settings, model=scripted) as (services, _):
        assert await services.wallet.balance_micros(pid) == GRANT - CALL_COST
        restarted = await services.runs.get(pid, run.id)
        assert restarted is not None and restarted.status == "failed" and restarted.error_code == "abandoned"
        assert restarted.cost_micros == CALL_COST
    async with running(settings, model=scripted) as (services, _):
        assert await services.wallet.balance_micros(pid) == GRANT - CALL_COST, "a second restart charges nothing"
