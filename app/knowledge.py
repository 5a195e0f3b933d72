"""Building semantic memory: the knowledge port (Zep, or the local graph read by Gemini or
by rules, or a test's own), the ingestion worker, and the lookup a turn reads facts from.

The SDKs are imported only for the adapter chosen; the worker is built here and started
later (`start_learning`), once the event hub it listens on is up.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import asyncpg

from agents import Knowledge, LocalKnowledge, RuleExtractor, session_facts
from chat import EventHub, FactLookup, Learning, Threads, Wallet
from settings import Settings


@dataclass
class KnowledgeParts:
    """Semantic memory as this process runs it: the port, the ingestion worker, the session lookup."""

    knowledge: Knowledge
    learning: Learning
    adapter: str

    @property
    def facts(self) -> FactLookup:
        async def lookup(*, person_id: str, text: str) -> list[str]:
            return await session_facts(self.knowledge, person_id=person_id, text=text)

        return lookup


def build_knowledge(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    pool: asyncpg.Pool,
    threads: Threads | None = None,
    chosen: Knowledge | None = None,
    wallet: Wallet | None = None,
    reads: asyncpg.Pool | None = None,
) -> KnowledgeParts:
    """Zep with a key; otherwise the local graph, read by Gemini with a key and by rules
    without. `chosen` (a test's) serves the port instead. The worker starts later
    (`start_learning`), once the event hub is up. Where a model reads the messages (Gemini,
    or a chosen port that reports its calls), the worker charges them to `wallet`
    (docs/money.md#learning); rules and Zep cost the person nothing. `reads`: a pool without
    the reset round trip (database.create_pool's `single_statements`) for the worker's
    check for anything new."""
    knowledge: Knowledge
    paid = True
    if chosen is not None:
        knowledge, adapter = chosen, type(chosen).__name__
    elif settings.zep_api_key is not None:
        from agents.knowledge.zep import ZepKnowledge  # the SDK loads only when it is used

        zep = ZepKnowledge(
            api_key=settings.zep_api_key.get_secret_value(),
            base_url=settings.zep_base_url,
            timeout_s=settings.zep_timeout_s,
        )
        stack.push_async_callback(zep.aclose)
        knowledge, adapter, paid = zep, "ZepKnowledge", False
    elif settings.gemini_api_key is not None:
        from agents.knowledge.gemini import GeminiExtractor

        extractor = GeminiExtractor(
            api_key=settings.gemini_api_key.get_secret_value(),
            model=settings.gemini_model_knowledge or settings.gemini_model,
            timeout_s=settings.gemini_timeout_s,
            base_url=settings.gemini_base_url,
        )
        stack.push_async_callback(extractor.aclose)
        knowledge, adapter = LocalKnowledge(pool, extractor=extractor), "LocalKnowledge + GeminiExtractor"
    else:
        knowledge, adapter = LocalKnowledge(pool, extractor=RuleExtractor()), "LocalKnowledge + RuleExtractor"
        paid = False
    learning = Learning(
        pool=pool,
        knowledge=knowledge,
        batch_max=settings.knowledge_batch_max,
        poll_s=settings.knowledge_poll_s,
        # Never beside a reply: a person is read once their turn has ended (Threads.on_idle).
        busy=threads.busy if threads is not None else (lambda _person_id: False),
        wallet=wallet if paid else None,
        reads=reads,
    )
    if threads is not None:
        threads.on_idle(learning.turn_ended)
    return KnowledgeParts(knowledge=knowledge, learning=learning, adapter=adapter)


async def start_learning(parts: KnowledgeParts, hub: EventHub, stack: contextlib.AsyncExitStack) -> None:
    """The ingestion worker, woken through the hub (the process's one LISTEN connection),
    stopped (mid-batch if need be: the cursor keeps the backlog) on close."""
    stack.push_async_callback(parts.learning.stop)
    await parts.learning.start(hub)
