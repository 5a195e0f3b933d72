"""How many model calls a home request makes by text and on a call, through the whole
server on the offline model (docs/agents.md#model-calls-of-a-home-request): typed, Ava
hands on, Zee looks the devices up, commands, answers, and Ava reads his answer (five);
spoken, Ava hands on with `answer_directly`, Zee's device list is primed and his sentence
written beside the command is said once it succeeded (two). Both threads hold the same
messages."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from tests.conftest import App

JAKARTA = ZoneInfo("Asia/Jakarta")
REQUEST = "turn on the bedroom light"


async def calls_by_run(app: App, person_id: str) -> list[tuple[str, int]]:
    rows = await app.services.pool.fetch(
        "SELECT r.agent, count(c.*) AS calls FROM runs r LEFT JOIN run_calls c ON c.run_id = r.id "
        "WHERE r.person_id = $1 GROUP BY r.id, r.agent, r.started_at ORDER BY r.started_at",
        person_id,
    )
    return [(r["agent"], r["calls"]) for r in rows]


async def thread_of(app: App, person_id: str) -> list[tuple[str, str]]:
    return [(m.author, m.text) for m in await app.services.threads.page(person_id, before=None, after=None, limit=20)]


async def test_a_typed_home_request_makes_five_model_calls_and_a_spoken_one_two(app: App) -> None:
    services = app.services
    typed_headers = await app.sign_in("Budi")
    typed = await services.people.get(await services.local_tokens.verify(typed_headers["Authorization"].split()[1]))
    spoken = await services.people.get(
        await services.local_tokens.verify((await app.sign_in("Sari"))["Authorization"].split()[1])
    )
    assert typed is not None and spoken is not None

    assert (await app.say(typed_headers, REQUEST)).status_code == 200
    said: list[str] = []
    await services.turns.post(spoken, text=REQUEST, channel="voice", zone=JAKARTA, on_say=lambda s: said.append(s.text))

    # Typed: Ava's handoff and her reading of Zee's answer; Zee's device lookup, command and answer.
    assert await calls_by_run(app, typed.id) == [("ava", 2), ("zee", 3)]
    # Spoken: Ava's handoff; Zee's command, its confirmation said once it succeeded.
    assert await calls_by_run(app, spoken.id) == [("ava", 1), ("zee", 1)]
    answer = "Done: the bedroom light is on in your sandbox home."
    assert said == ["On it.", answer]
    expected = [("human", REQUEST), ("ava", "@zee"), ("zee", answer)]
    assert await thread_of(app, typed.id) == await thread_of(app, spoken.id) == expected
    # Each record is one charge: the wallet's model-call entries say the same.
    for person_id, calls in ((typed.id, 5), (spoken.id, 2)):
        charges = await services.pool.fetchval(
            "SELECT count(*) FROM entries e JOIN transactions t ON t.id = e.transaction_id "
            "WHERE e.account_id = $1 AND t.type = 'agent_call'",
            f"user:{person_id}:IDR",
        )
        assert charges == calls
