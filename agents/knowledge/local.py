"""`LocalKnowledge`: the product's default semantic memory, a temporal graph in PostgreSQL.

Ingesting asks the extractor for claims (showing it the facts still true) and writes a
batch's claims in one transaction: both entities are found or created, and a claim whose
slot already holds a different valid fact closes that fact (`invalid_at` = when the new
one was said) before adding its own. A claim repeated later adds its message to the
existing fact. Re-ingesting a message changes nothing, so an ingestion retried after a
crash is harmless.

Search is PostgreSQL full-text search over each valid fact's terms (its sentence, names,
relation and synonyms in English and Indonesian), matching word prefixes so "makan"
finds "makanan" and "favourite" finds "favourites": facts holding every meaningful word
of the query first, then facts holding any, newest first within each.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

import asyncpg

from agents.knowledge.extraction import Claim, Extractor, Mention
from agents.knowledge.port import (
    QUERY_CHARS_MAX,
    SEARCH_LIMIT_MAX,
    Entity,
    Fact,
    Forgotten,
    Graph,
    KnowledgeMessage,
    ModelSpend,
)

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

_Conn: TypeAlias = "asyncpg.Connection | PoolConnectionProxy[Any]"

# The graph endpoint answers at most this much; a person's graph past it is cut, newest kept.
GRAPH_NODES_MAX = 2_000
GRAPH_EDGES_MAX = 5_000
_KNOWN_MAX = 50
_QUERY_WORDS_MAX = 12

_SELF_SQL = """
INSERT INTO knowledge_entities (id, person_id, name, key, type, is_self)
VALUES ($1, $2, $3, '@self', 'person', true)
ON CONFLICT (person_id, key, type) DO UPDATE SET name = EXCLUDED.name
RETURNING id
"""
_ENTITY_SQL = """
INSERT INTO knowledge_entities (id, person_id, name, key, type) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (person_id, key, type) DO UPDATE SET key = EXCLUDED.key
RETURNING id
"""
_SEEN_SQL = """
SELECT 1 FROM knowledge_facts
WHERE person_id = $1 AND subject_id = $2 AND relation = $3 AND object_id = $4 AND $5 = ANY (message_ids)
"""
_SLOT_SQL = """
SELECT id, relation, object_id FROM knowledge_facts
WHERE subject_id = $1 AND slot = $2 AND invalid_at IS NULL FOR UPDATE
"""
_SAME_SQL = """
SELECT id, relation, object_id FROM knowledge_facts
WHERE person_id = $1 AND subject_id = $2 AND relation = $3 AND object_id = $4 AND invalid_at IS NULL
FOR UPDATE
"""
_ADD_SOURCE_SQL = """
UPDATE knowledge_facts SET message_ids = (message_ids || $2::text)[greatest(1, cardinality(message_ids) - 48):]
WHERE id = $1
"""
_INVALIDATE_SQL = "UPDATE knowledge_facts SET invalid_at = greatest(valid_at, $2) WHERE id = $1"
_INSERT_SQL = """
INSERT INTO knowledge_facts (id, person_id, subject_id, relation, object_id, text, slot, valid_at, message_ids, terms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ARRAY[$9::text], $10)
"""
_FACT_COLUMNS = """
f.id, f.subject_id, f.relation, f.object_id, f.text, f.slot, f.valid_at, f.invalid_at, f.message_ids,
s.name AS subject_name, s.is_self AS subject_self, o.name AS object_name, o.type AS object_type
"""
_FACT_JOINS = """
FROM knowledge_facts f
JOIN knowledge_entities s ON s.id = f.subject_id
JOIN knowledge_entities o ON o.id = f.object_id
"""
_KNOWN_SQL = f"""
SELECT {_FACT_COLUMNS} {_FACT_JOINS}
WHERE f.person_id = $1 AND f.invalid_at IS NULL ORDER BY f.valid_at DESC LIMIT $2
"""
# The newest matching facts, then their names: the limit applies before the joins. The
# planner walks the newest-first index when matches are common and the GIN index when
# they are rare; either way it stops at the limit.
_SEARCH_SQL = f"""
WITH hits AS (
    SELECT * FROM knowledge_facts
    WHERE person_id = $1 AND invalid_at IS NULL AND search @@ to_tsquery('simple', $2) AND NOT (id = ANY ($4::text[]))
    ORDER BY valid_at DESC LIMIT $3
)
SELECT {_FACT_COLUMNS} FROM hits f
JOIN knowledge_entities s ON s.id = f.subject_id
JOIN knowledge_entities o ON o.id = f.object_id
ORDER BY f.valid_at DESC
"""
_NODES_SQL = """
SELECT id, name, type, is_self, created_at FROM knowledge_entities
WHERE person_id = $1 ORDER BY is_self DESC, created_at DESC LIMIT $2
"""
_EDGES_SQL = f"""
SELECT {_FACT_COLUMNS} {_FACT_JOINS} WHERE f.person_id = $1 ORDER BY f.valid_at DESC, f.created_at DESC LIMIT $2
"""
_FORGET_FACTS_SQL = "DELETE FROM knowledge_facts WHERE person_id = $1"
_FORGET_ENTITIES_SQL = "DELETE FROM knowledge_entities WHERE person_id = $1"

# Words that carry no meaning in a search (English and Indonesian question words,
# pronouns, auxiliaries): "what's my favourite food?" searches for "favourite food".
_STOPWORDS = frozenset(
    """a an the is are was were be been am i me my mine you your we our it its s d ll ve re m do does did what
    whats which who whom where when why how should would could can will shall tonight today now of to in on at
    for about with and or know tell remember think like please any some this that these those there here have
    has apa yang aku saya kamu gue gw ku mu nya itu ini di ke dari dan atau ya dong sih deh kah tahu tau
    tentang sekarang malam nanti hari harus sebaiknya enaknya mau bisa tolong coba ingat inget""".split()  # noqa: SIM905
)
# Each relation or category word, with the words a person might search it by.
_SYNONYMS = {
    "favourite": "favourite favourites favorite favorit kesukaan suka best",
    "food": "food makanan makan eat meal dinner lunch breakfast",
    "drink": "drink minuman minum",
    "likes": "likes like love suka senang",
    "dislikes": "dislikes dislike hate benci suka",
    "prefers": "prefers prefer suka",
    "lives_in": "lives live home rumah tinggal city kota address",
    "works_at": "works work job office kantor kerja company",
    "allergic_to": "allergic allergy allergies alergi",
    "birthday": "birthday born ulang tahun lahir ultah",
    "wife": "wife istri family keluarga",
    "husband": "husband suami family keluarga",
    "mother": "mother mom mum ibu mama family keluarga",
    "father": "father dad ayah bapak papa family keluarga",
    "friend": "friend friends teman temen",
    "boss": "boss bos atasan work",
    "person": "people person orang",
    "place": "place tempat",
}
# Words a query may use for a relation's words ("makan" -> food).
_QUERY_ALIASES = {"favorite": "favourite", "favorit": "favourite", "kesukaan": "favourite", "makanan": "food"}


def _fold(name: str) -> str:
    return " ".join(name.split()).casefold()


def _terms(claim: Claim, subject: str) -> str:
    words = [claim.text, subject, claim.object.name, claim.relation.replace("_", " "), claim.object.type]
    words += [_SYNONYMS.get(w, "") for w in (claim.relation, claim.object.type)]
    if claim.slot and claim.slot.startswith("favourite:"):
        words.append(_SYNONYMS.get(claim.slot.partition(":")[2], claim.slot.partition(":")[2]))
    return " ".join(w for w in words if w)


def query_words(text: str) -> list[str]:
    """The meaningful words of `text`, folded, as search prefixes."""
    words: list[str] = []
    for raw in re.findall(r"[^\W_]+", text[:QUERY_CHARS_MAX].casefold()):
        word = raw[:-2] if len(raw) > 5 and raw.endswith(("ku", "mu")) else raw  # favoritku -> favorit
        word = _QUERY_ALIASES.get(word, word)
        if len(word) > 1 and word not in _STOPWORDS and word not in words:
            words.append(word)
    return [f"{w}:*" for w in words[:_QUERY_WORDS_MAX]]


def tsquery(text: str) -> str:
    """A prefix OR-query of the meaningful words in `text` ('' when there are none)."""
    return " | ".join(query_words(text))


def _fact(row: asyncpg.Record) -> Fact:
    return Fact(
        id=row["id"],
        subject_id=row["subject_id"],
        relation=row["relation"],
        object_id=row["object_id"],
        text=row["text"],
        valid_at=row["valid_at"],
        invalid_at=row["invalid_at"],
        message_ids=tuple(row["message_ids"]),
        subject=row["subject_name"],
        object=row["object_name"],
    )


def _known(row: asyncpg.Record) -> Claim:
    subject = Mention(row["subject_name"], "person", is_self=row["subject_self"])
    obj = Mention(row["object_name"], row["object_type"])
    return Claim(row["message_ids"][-1], subject, row["relation"], obj, row["text"], row["slot"])


class LocalKnowledge:
    """Every person's graph in the product's own PostgreSQL."""

    def __init__(self, pool: asyncpg.Pool, *, extractor: Extractor) -> None:
        self._pool = pool
        self._extractor = extractor

    async def ingest(
        self, *, person_id: str, person_name: str, messages: Sequence[KnowledgeMessage]
    ) -> ModelSpend | None:
        if not messages:
            return None
        rows = await self._pool.fetch(_KNOWN_SQL, person_id, _KNOWN_MAX)
        extraction = await self._extractor.extract(
            person_name=person_name, messages=messages, known=[_known(r) for r in rows]
        )
        said_at = {m.id: m.created_at for m in messages}
        # One transaction per batch: one commit instead of one per fact, and a batch that
        # fails halfway leaves nothing behind, to be retried whole.
        async with self._pool.acquire() as conn, conn.transaction():
            for claim in extraction.claims:
                if claim.message_id in said_at:
                    await self._apply(conn, person_id, person_name, claim, said_at[claim.message_id])
        return extraction.spent

    async def _entity(self, conn: _Conn, person_id: str, person_name: str, mention: Mention) -> str:
        if mention.is_self:
            value = await conn.fetchval(_SELF_SQL, f"ent_{secrets.token_hex(8)}", person_id, person_name or "Me")
        else:
            name = mention.name.strip()
            value = await conn.fetchval(
                _ENTITY_SQL, f"ent_{secrets.token_hex(8)}", person_id, name, _fold(name), mention.type
            )
        return str(value)

    async def _apply(self, conn: _Conn, person_id: str, person_name: str, claim: Claim, said_at: datetime) -> None:
        """Write one claim: find or create its entities, then add, confirm or supersede."""
        subject_id = await self._entity(conn, person_id, person_name, claim.subject)
        object_id = await self._entity(conn, person_id, person_name, claim.object)
        key = (person_id, subject_id, claim.relation, object_id)
        if await conn.fetchval(_SEEN_SQL, *key, claim.message_id):
            return  # this message was ingested before
        current = (
            await conn.fetchrow(_SLOT_SQL, subject_id, claim.slot)
            if claim.slot
            else await conn.fetchrow(_SAME_SQL, *key)
        )
        if current is not None and (current["relation"], current["object_id"]) == (claim.relation, object_id):
            await conn.execute(_ADD_SOURCE_SQL, current["id"], claim.message_id)
            return
        if current is not None:
            await conn.execute(_INVALIDATE_SQL, current["id"], said_at)
        subject_name = person_name if claim.subject.is_self else claim.subject.name
        await conn.execute(
            _INSERT_SQL,
            f"fct_{secrets.token_hex(8)}",
            *key,
            claim.text[:400],
            claim.slot,
            said_at,
            claim.message_id,
            _terms(claim, subject_name),
        )

    async def search(self, *, person_id: str, text: str, limit: int = 10) -> list[Fact]:
        """Facts with every word of the text first, then facts with any; newest first in each."""
        limit = max(1, min(limit, SEARCH_LIMIT_MAX))
        words = query_words(text)
        if not words:
            return [_fact(r) for r in await self._pool.fetch(_KNOWN_SQL, person_id, limit)]
        found = await self._pool.fetch(_SEARCH_SQL, person_id, " & ".join(words), limit, [])
        if len(words) > 1 and len(found) < limit:
            seen = [r["id"] for r in found]
            found += await self._pool.fetch(_SEARCH_SQL, person_id, " | ".join(words), limit - len(found), seen)
        return [_fact(r) for r in found]

    async def graph(self, *, person_id: str) -> Graph:
        nodes = await self._pool.fetch(_NODES_SQL, person_id, GRAPH_NODES_MAX)
        edges = await self._pool.fetch(_EDGES_SQL, person_id, GRAPH_EDGES_MAX)
        return Graph(
            nodes=tuple(Entity(r["id"], r["name"], r["type"], r["created_at"], is_self=r["is_self"]) for r in nodes),
            edges=tuple(_fact(r) for r in edges),
        )

    async def forget(self, *, person_id: str) -> Forgotten:
        async with self._pool.acquire() as conn, conn.transaction():
            edges = await conn.execute(_FORGET_FACTS_SQL, person_id)
            nodes = await conn.execute(_FORGET_ENTITIES_SQL, person_id)
        return Forgotten(nodes=int(nodes.split()[-1]), edges=int(edges.split()[-1]))
