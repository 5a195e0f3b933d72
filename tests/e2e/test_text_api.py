"""The text door end to end: HTTP in, the real router, runtime, thread and sandbox home,
a real PostgreSQL underneath, on the offline model (the product's default)."""

from __future__ import annotations

from tests.conftest import App


async def device(app: App, person_id: str, device_id: str) -> dict[str, object]:
    from agents import SandboxHome

    return await SandboxHome(app.services.pool).device_status(person_id=person_id, device_id=device_id)


async def test_bedroom_light_is_handed_to_zee_and_switched_on(app: App) -> None:
    headers = await app.sign_in("Budi")
    me = (await app.client.get("/v1/me", headers=headers)).json()

    response = await app.say(headers, "turn on the bedroom light")

    assert response.status_code == 200, response.text
    body = response.json()
    messages = [(m["author"], m["text"]) for m in body["messages"]]
    assert messages[0] == ("human", "turn on the bedroom light")
    assert messages[1] == ("ava", "@zee")
    assert messages[2][0] == "zee"
    assert "bedroom light" in messages[2][1].lower()
    assert len(messages) == 3, "Ava stays silent after Zee in text"
    ava, zee = body["runs"]
    assert (ava["agent"], ava["trigger"], ava["parent_run_id"], ava["status"]) == ("ava", "human", None, "succeeded")
    assert (zee["agent"], zee["trigger"], zee["parent_run_id"], zee["status"]) == ("zee", "ava", ava["id"], "succeeded")
    assert zee["trigger_message_id"] == body["messages"][1]["id"]
    assert body["messages"][1]["run_id"] == ava["id"]
    assert body["messages"][2]["run_id"] == zee["id"]
    assert (await device(app, me["id"], "sbx-light-bedroom"))["switch_led"] is True
    assert (await device(app, me["id"], "sbx-light-living"))["switch_led"] is False

    thread = (await app.client.get("/v1/messages", headers=headers)).json()["messages"]
    assert [(m["author"], m["text"]) for m in thread] == messages


async def test_indonesian_request_works_the_same_way(app: App) -> None:
    headers = await app.sign_in("Sari")
    me = (await app.client.get("/v1/me", headers=headers)).json()
    body = (await app.say(headers, "nyalain lampu kamar")).json()
    assert [m["author"] for m in body["messages"]] == ["human", "ava", "zee"]
    assert "nyala" in body["messages"][2]["text"]
    assert (await device(app, me["id"], "sbx-light-bedroom"))["switch_led"] is True


async def test_status_question_goes_straight_to_zee(app: App) -> None:
    headers = await app.sign_in()
    body = (await app.say(headers, "@zee status of the AC")).json()
    assert [r["agent"] for r in body["runs"]] == ["zee"]
    assert body["runs"][0]["trigger"] == "human"
    assert [m["author"] for m in body["messages"]] == ["human", "zee"]
    assert "off" in body["messages"][1]["text"]


async def test_single_mention_of_rafal_never_starts_ava(app: App) -> None:
    headers = await app.sign_in()
    body = (await app.say(headers, "@rafal hi")).json()
    assert [(r["agent"], r["trigger"]) for r in body["runs"]] == [("rafal", "human")]
    assert body["messages"][-1]["author"] == "rafal"


async def test_two_mentions_go_to_ava(app: App) -> None:
    headers = await app.sign_in()
    body = (await app.say(headers, "@zee and @yori, hello")).json()
    assert body["runs"][0]["agent"] == "ava"


async def test_unknown_mention_goes_to_ava(app: App) -> None:
    headers = await app.sign_in()
    body = (await app.say(headers, "@bob hi there")).json()
    assert [r["agent"] for r in body["runs"]] == ["ava"]


async def test_ava_answers_small_talk_and_capabilities(app: App) -> None:
    headers = await app.sign_in()
    hello = (await app.say(headers, "halo")).json()
    assert hello["messages"][-1]["author"] == "ava"
    assert "Ava" in hello["messages"][-1]["text"]
    what = (await app.say(headers, "what can you do")).json()
    assert "Zee" in what["messages"][-1]["text"]
    other = (await app.say(headers, "book me a flight to Bali")).json()
    assert "can't do that yet" in other["messages"][-1]["text"]


async def test_retry_with_the_same_client_id_returns_the_first_result(app: App) -> None:
    headers = await app.sign_in()
    first = await app.say(headers, "turn on the bedroom light", client_id="c-1")
    again = await app.say(headers, "turn on the bedroom light", client_id="c-1")
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    thread = (await app.client.get("/v1/messages", headers=headers)).json()["messages"]
    assert len(thread) == 3


async def test_paging_by_seq(app: App) -> None:
    headers = await app.sign_in()
    for text in ("hi", "thanks", "hello", "bye"):
        await app.say(headers, text)
    everything = (await app.client.get("/v1/messages", headers=headers, params={"limit": 200})).json()
    seqs = [m["seq"] for m in everything["messages"]]
    assert seqs == sorted(seqs)
    assert len(seqs) == 8
    assert not everything["has_more"]
    newest = (await app.client.get("/v1/messages", headers=headers, params={"limit": 3})).json()
    assert [m["seq"] for m in newest["messages"]] == seqs[-3:]
    assert newest["has_more"]
    older = (await app.client.get("/v1/messages", headers=headers, params={"before": seqs[-3], "limit": 3})).json()
    assert [m["seq"] for m in older["messages"]] == seqs[-6:-3]
    after = (await app.client.get("/v1/messages", headers=headers, params={"after": seqs[1], "limit": 2})).json()
    assert [m["seq"] for m in after["messages"]] == seqs[2:4]
    assert after["has_more"]


async def test_a_second_person_cannot_see_or_touch_the_first_thread(app: App) -> None:
    budi = await app.sign_in("Budi")
    sari = await app.sign_in("Sari")
    await app.say(budi, "turn on the bedroom light", client_id="shared-id")
    # The same client_id from another person is their own, fresh request.
    mine = (await app.say(sari, "hi", client_id="shared-id")).json()
    assert next(m["text"] for m in mine["messages"]) == "hi"
    sari_thread = (await app.client.get("/v1/messages", headers=sari)).json()["messages"]
    assert all(m["text"] != "turn on the bedroom light" for m in sari_thread)
    sari_me = (await app.client.get("/v1/me", headers=sari)).json()
    assert (await device(app, sari_me["id"], "sbx-light-bedroom"))["switch_led"] is False
    budi_thread = (await app.client.get("/v1/messages", headers=budi)).json()["messages"]
    assert next(m["text"] for m in budi_thread) == "turn on the bedroom light"
    assert all(m["text"] != "hi" for m in budi_thread)


async def test_signing_in_with_the_same_name_returns_to_the_same_thread(app: App) -> None:
    first = await app.sign_in("Budi Santoso")
    await app.say(first, "hi")
    again = await app.sign_in("  budi   santoso ")
    thread = (await app.client.get("/v1/messages", headers=again)).json()["messages"]
    assert thread[0]["text"] == "hi"
