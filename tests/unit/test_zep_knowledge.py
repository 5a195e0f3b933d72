"""What `ZepKnowledge` asks Zep (against the in-process fake of the v4 API): one user per
person, one thread receiving every message with its role and time, a retried batch added
once; and how Zep's failures surface (as `KnowledgeError`, never an SDK exception)."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from agents.knowledge import KnowledgeError, KnowledgeMessage
from agents.knowledge.zep import ZepKnowledge
from tests.fakes.zep import FakeZep

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
BATCH = [
    KnowledgeMessage("msg_1", 1, "human", "my favourite food is rendang", NOW),
    KnowledgeMessage("msg_2", 2, "ava", "Noted!", NOW),
]


def adapter(fake: FakeZep) -> ZepKnowledge:
    return ZepKnowledge(api_key="test-key", base_url=fake.base_url, httpx_client=fake.client(), retries_max=0)


async def test_one_user_and_one_thread_per_person_and_batches_added_once() -> None:
    fake = FakeZep()
    zep = adapter(fake)
    await zep.ingest(person_id="usr_a", person_name="Budi", messages=BATCH)
    await zep.ingest(person_id="usr_a", person_name="Budi", messages=BATCH)  # a retry after a crash
    await adapter(fake).ingest(person_id="usr_a", person_name="Budi", messages=BATCH[:1])  # another process
    assert [u.user_id for u in fake.users.values()] == ["usr_a"]
    (thread,) = fake.threads
    sent = fake.messages[thread]
    assert [(m["role"], m["name"], m["content"]) for m in sent] == [
        ("user", "Budi", "my favourite food is rendang"),
        ("assistant", "Ava", "Noted!"),
        ("user", "Budi", "my favourite food is rendang"),
    ]
    assert sent[0]["metadata"] == {"message_id": "msg_1", "seq": 1}
    assert datetime.fromisoformat(sent[0]["reference_time"]) == NOW
    await zep.aclose()


async def test_a_person_forgotten_by_another_process_is_learned_anew() -> None:
    fake = FakeZep()
    here, there = adapter(fake), adapter(fake)
    await here.ingest(person_id="usr_a", person_name="Budi", messages=BATCH)
    await there.forget(person_id="usr_a")
    await here.ingest(person_id="usr_a", person_name="Budi", messages=[BATCH[0]])
    assert len(fake.users) == 1
    assert [e.text for e in (await here.graph(person_id="usr_a")).edges] == ["Budi's favourite food is rendang"]
    await here.aclose()
    await there.aclose()


@pytest.mark.parametrize("failure", [httpx.Response(503, json={"message": "busy"}), httpx.ConnectError("refused")])
async def test_zep_failures_become_knowledge_errors(failure: httpx.Response | Exception) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(failure, Exception):
            raise failure
        return failure

    zep = ZepKnowledge(
        api_key="test-key",
        base_url=FakeZep.base_url,
        httpx_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        retries_max=0,
    )
    with pytest.raises(KnowledgeError):
        await zep.ingest(person_id="usr_a", person_name="Budi", messages=BATCH)
    with pytest.raises(KnowledgeError):
        await zep.search(person_id="usr_a", text="food")
    await zep.aclose()
