"""Knowledge ingestion rate and search latency, with 10,000 facts for one person.

Ingestion: messages per second through `LocalKnowledge.ingest` (rule extraction, one
transaction per fact: both entities found or created, the slot checked, the fact
written), in batches of 50 as the learning worker hands them over. Every message states
one fact, so the person ends with FACTS facts (some of them invalidated by later ones in
the same slot, as in life); another 1,000 facts belong to other people.

Search: latency of `LocalKnowledge.search` (full-text search over a GIN index of valid
facts, prefix query: facts with every word first, then with any; newest first) for a mix
of queries, against a **baseline** measured in the same run on the same rows: an
unindexed `ILIKE '%word%'` scan of the same search terms of the person's valid facts with
the same words, newest first. The two alternate query by query so machine noise hits
both. The benchmark checks the baseline is comparable (both answer for every query that
should match) before it prints a ratio.

Target: search p95 <= 20 ms.

Run: .venv/bin/python -m bench.knowledge_search [FACTS]   (DATABASE_URL: use that server
instead of an embedded one; a fresh database is created there and dropped afterwards).
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from agents.knowledge import KnowledgeMessage, LocalKnowledge, RuleExtractor
from agents.knowledge.local import tsquery
from bench.report import write
from bench.servers import postgres
from database import apply_migrations, create_pool

FACTS = 10_000
OTHERS_FACTS = 1_000
BATCH = 50
QUERIES = 300

_ADJECTIVES = ["red", "spicy", "sweet", "old", "quiet", "green", "tiny", "crispy", "sour", "fresh"]
_NOUNS = ["noodles", "guitar", "garden", "river", "teapot", "bicycle", "mango", "lantern", "jacket", "kite"]
_TEMPLATES = (
    "I really like {thing}",
    "I don't like {thing}",
    "I'm allergic to {thing}",
    "my favourite {category} is {thing}",
    "my friend {name} is visiting",
)
_CATEGORIES = ["food", "song", "book", "film", "place"]
_QUERY_TEXTS = (
    "what's my favourite food?",
    "do I like mango?",
    "am I allergic to anything?",
    "spicy noodles",
    "tell me about my friends",
    "garden",
    "makanan favoritku apa?",
    "what should I eat tonight?",
    "who is Kawan4242?",  # one fact among 10,000
    "do I like zebras?",  # no fact at all
)
_BASELINE_SQL = """
SELECT f.id, f.text FROM knowledge_facts f
WHERE f.person_id = $1 AND f.invalid_at IS NULL AND f.terms ILIKE ANY ($2::text[])
ORDER BY f.valid_at DESC LIMIT $3
"""


def _messages(count: int, *, seed: int, start: datetime) -> list[KnowledgeMessage]:
    rng = random.Random(seed)
    messages = []
    for i in range(count):
        thing = f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} {i}"
        text = rng.choice(_TEMPLATES).format(thing=thing, category=rng.choice(_CATEGORIES), name=f"Kawan{i}")
        messages.append(KnowledgeMessage(f"msg_{seed}_{i}", i + 1, "human", text, start + timedelta(seconds=i)))
    return messages


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


async def _ingest(knowledge: LocalKnowledge, person_id: str, messages: list[KnowledgeMessage]) -> float:
    started = time.perf_counter()
    for i in range(0, len(messages), BATCH):
        await knowledge.ingest(person_id=person_id, person_name="Budi", messages=messages[i : i + BATCH])
    return time.perf_counter() - started


def _like_patterns(text: str) -> list[str]:
    words = [w.removesuffix(":*") for w in tsquery(text).split(" | ") if w]
    return [f"%{w}%" for w in words] or ["%"]


async def _search(pool: asyncpg.Pool, knowledge: LocalKnowledge) -> tuple[list[float], list[float], int]:
    fts: list[float] = []
    scan: list[float] = []
    disagree = 0
    for i in range(QUERIES):
        text = _QUERY_TEXTS[i % len(_QUERY_TEXTS)]
        started = time.perf_counter()
        found = await knowledge.search(person_id="usr_bench", text=text, limit=10)
        fts.append(time.perf_counter() - started)
        started = time.perf_counter()
        rows = await pool.fetch(_BASELINE_SQL, "usr_bench", _like_patterns(text), 10)
        scan.append(time.perf_counter() - started)
        if bool(found) != bool(rows):
            disagree += 1
    return fts, scan, disagree


async def bench(url: str, where: str, facts: int) -> str:
    admin = await asyncpg.connect(url)
    name = f"avagenc_bench_knowledge_{os.getpid()}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(url)
    dsn = urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    try:
        pool = await create_pool(dsn, size_max=4)
        try:
            async with pool.acquire() as conn:
                await apply_migrations(conn)
            knowledge = LocalKnowledge(pool, extractor=RuleExtractor())
            start = datetime(2026, 1, 1, tzinfo=UTC)
            for other in range(4):
                extra = _messages(OTHERS_FACTS // 4, seed=100 + other, start=start)
                await _ingest(knowledge, f"usr_other_{other}", extra)
            elapsed = await _ingest(knowledge, "usr_bench", _messages(facts, seed=1, start=start))
            stored = await pool.fetchval("SELECT count(*) FROM knowledge_facts WHERE person_id = 'usr_bench'")
            valid = await pool.fetchval(
                "SELECT count(*) FROM knowledge_facts WHERE person_id = 'usr_bench' AND invalid_at IS NULL"
            )
            await pool.execute("ANALYZE knowledge_facts")
            await _search(pool, knowledge)  # warm-up: plans and caches, not measured
            fts, scan, disagree = await _search(pool, knowledge)
        finally:
            await pool.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    return _report(where, facts, elapsed, int(stored), int(valid), fts, scan, disagree)


def _report(
    where: str, facts: int, elapsed: float, stored: int, valid: int, fts: list[float], scan: list[float], disagree: int
) -> str:
    ms = 1000.0
    p95, base_p95 = _percentile(fts, 95) * ms, _percentile(scan, 95) * ms

    def row(name: str, times: list[float], p95_ms: float) -> str:
        return f"| {name} | {statistics.median(times) * ms:.2f} ms | {p95_ms:.2f} ms | {max(times) * ms:.2f} ms |"

    lines = [
        f"Database: {where}. {facts:,} messages for one person, {stored:,} facts stored ({valid:,} still valid), "
        f"plus {OTHERS_FACTS:,} facts of four other people.",
        "",
        f"Ingestion: {facts / elapsed:,.0f} messages/s ({elapsed:.1f} s for {facts:,}; "
        f"one fact each, batches of {BATCH}).",
        "",
        "| Search (10 results) | p50 | p95 | max |",
        "|---|---:|---:|---:|",
        row("Full-text (GIN, all words then any)", fts, p95),
        row("Baseline: ILIKE scan", scan, base_p95),
        "",
    ]
    if disagree:
        lines.append(f"Not comparable: the two disagreed on whether {disagree} of {len(fts)} queries match anything.")
    else:
        lines.append(f"p95 full-text / baseline: {p95 / base_p95:.2f}x over {len(fts)} queries.")
    lines.append(f"Target p95 <= 20 ms: {'met' if p95 <= 20 else 'NOT met'}.")
    return "\n".join(lines) + "\n"


def main() -> None:
    facts = int(sys.argv[1]) if len(sys.argv) > 1 else FACTS
    started = time.perf_counter()
    with postgres() as (url, source):
        text = asyncio.run(bench(url, source, facts))
    text += f"Whole run: {time.perf_counter() - started:.0f} s.\n"
    print(text)
    print(f"written to {write('knowledge_search', text)}")


if __name__ == "__main__":
    main()
