"""The first product's clients talk to this server unchanged (FIRST_PRODUCT_ROUTES): each
route answers the request and response shapes of the first product's contract
(/work/shared/reference/original.md §1, restated in docs/first-product.md), over the same
thread, wallet, memory and reminders as /v1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from app.server import running
from settings import Settings
from tests.conftest import App, offline_settings

ZEP_MESSAGE = {"uuid", "content", "role", "name", "created_at", "metadata", "processed"}
POSTERUM = {"ID", "Human", "Agent", "Session", "Metadata", "Message", "TriggerAt", "CreatedAt"}


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return offline_settings(database_url, tmp_path).model_copy(update={"first_product_routes": True})


async def _signed(app: App) -> dict[str, str]:
    # The first product's clients send a Firebase ID token and their zone; here the token is
    # whatever signs people in on this server (Firebase's, where FIREBASE_PROJECT_ID is set).
    return await app.sign_in("Budi", time_zone="Asia/Jakarta")


async def test_ava_and_a_specialist_answer_message_with_response(app: App) -> None:
    headers = await _signed(app)
    empty = await app.client.get("/sessions/messages", params={"lastn": 200}, headers=headers)
    assert empty.status_code == 404 and empty.json() == {"detail": "session not found"}

    asked = await app.client.post("/ava", json={"message": "turn on the bedroom light"}, headers=headers)
    assert asked.status_code == 200
    assert set(asked.json()) == {"response"} and isinstance(asked.json()["response"], str)

    direct = await app.client.post("/zee", json={"message": "status of the AC"}, headers=headers)
    assert direct.status_code == 200 and direct.json()["response"], "Zee answers his own route"

    page = await app.client.get("/sessions/messages", params={"lastn": 200}, headers=headers)
    assert page.status_code == 200
    body = page.json()
    assert set(body) == {"messages", "row_count", "created_at", "total_count", "user_id"}
    assert all(set(m) == ZEP_MESSAGE for m in body["messages"])
    first = [(m["role"], m["name"]) for m in body["messages"][:3]]
    # The first product's projection: the human (user), Ava's bare "@zee" (user, named ava), Zee (assistant).
    assert first == [("user", "human"), ("user", "ava"), ("assistant", "zee")]
    assert body["messages"][0]["content"] == "turn on the bedroom light"
    assert body["row_count"] == len(body["messages"])


async def test_a_speaker_gets_its_reply_with_emotion_tags(app: App) -> None:
    headers = await _signed(app)
    spoken = await app.client.post("/ava/voice", json={"message": "turn on the bedroom light"}, headers=headers)
    assert spoken.status_code == 200
    assert "#" in spoken.json()["response"], spoken.json()


async def test_the_wallet_in_whole_rupiah_and_todays_usage(app: App) -> None:
    headers = await _signed(app)
    await app.client.post("/ava", json={"message": "turn on the bedroom light"}, headers=headers)
    wallet = (await app.client.get("/wallet", headers=headers)).json()
    assert set(wallet) == {"balance", "balance_micros"}
    assert wallet["balance"] == wallet["balance_micros"] // 1_000_000
    usage = (await app.client.get("/wallet/usage/today", headers=headers)).json()
    assert set(usage) == {"tokens", "cost", "cost_micros"}
    assert usage["tokens"] > 0 and usage["cost_micros"] > 0 and usage["cost"] == usage["cost_micros"] // 1_000_000


async def test_postera_lists_and_cancels_a_note(app: App) -> None:
    headers = await _signed(app)
    await app.client.post("/ava", json={"message": "remind me in 2 hours to stretch"}, headers=headers)
    notes = (await app.client.get("/postera", headers=headers)).json()
    assert len(notes) == 1 and set(notes[0]) == POSTERUM
    assert notes[0]["Agent"] == "ava" and "stretch" in notes[0]["Message"]
    cancelled = await app.client.delete(f"/postera/{notes[0]['ID']}", headers=headers)
    assert cancelled.status_code == 204 and cancelled.content == b""
    assert (await app.client.get("/postera", headers=headers)).json() == []
    missing = await app.client.delete("/postera/pstr_nope", headers=headers)
    assert missing.status_code == 404 and "detail" in missing.json()


async def test_knowledge_reads_as_zep_nodes_and_edges_and_forget_me_answers_204(app: App) -> None:
    headers = await _signed(app)
    assert (await app.client.get("/knowledge", headers=headers)).json() == {"detail": "memory not found"}
    await app.client.post("/ava", json={"message": "my favourite food is rendang"}, headers=headers)
    me = (await app.client.get("/v1/me", headers=headers)).json()
    await app.services.knowledge.learning.catch_up(me["id"], timeout_s=10)
    graph = (await app.client.get("/knowledge", headers=headers)).json()
    assert graph["nodes"] and {"uuid", "name", "labels", "created_at"} <= set(graph["nodes"][0])
    assert any("rendang" in e["fact"].lower() for e in graph["edges"])
    assert {"uuid", "name", "fact", "source_node_uuid", "target_node_uuid", "valid_at", "invalid_at"} <= set(
        graph["edges"][0]
    )
    forgotten = await app.client.delete("/knowledge", headers=headers)
    assert forgotten.status_code == 204
    assert (await app.client.get("/sessions/messages", headers=headers)).status_code == 404


async def test_errors_carry_detail_and_the_wallet_guard_holds(app: App) -> None:
    unsigned = await app.client.post("/ava", json={"message": "hi"})
    assert unsigned.status_code == 401 and "detail" in unsigned.json()
    headers = await _signed(app)
    blank = await app.client.post("/ava", json={"message": ""}, headers=headers)
    assert blank.status_code == 422


@pytest.fixture
async def plain_server(database_url: str, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with running(offline_settings(database_url, tmp_path)) as (_, fastapi_app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fastapi_app), base_url="http://test") as client:
            yield client


async def test_the_routes_are_off_unless_the_setting_is_on(plain_server: httpx.AsyncClient) -> None:
    assert (await plain_server.post("/ava", json={"message": "hi"})).status_code in (404, 405)
    assert (await plain_server.get("/wallet")).status_code == 404
