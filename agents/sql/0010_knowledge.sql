-- The local knowledge graph (SPEC §7): per person, entities and the facts joining them,
-- with the time each fact became true and, once contradicted, stopped being true.
-- Keyed by person_id without a foreign key: agents' tables are created before chat's
-- people table, and forgetting a person deletes these rows explicitly.

CREATE TABLE knowledge_entities (
    id          TEXT PRIMARY KEY,
    person_id   TEXT NOT NULL,
    name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    -- The name folded for matching ('@self' for the person the graph belongs to).
    key         TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    type        TEXT NOT NULL
                CHECK (type IN ('person', 'place', 'thing', 'food', 'organisation', 'preference', 'event')),
    is_self     BOOLEAN NOT NULL DEFAULT false,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (person_id, key, type),
    CHECK (NOT is_self OR (key = '@self' AND type = 'person'))
);

CREATE TABLE knowledge_facts (
    id           TEXT PRIMARY KEY,
    person_id    TEXT NOT NULL,
    subject_id   TEXT NOT NULL REFERENCES knowledge_entities (id) ON DELETE CASCADE,
    relation     TEXT NOT NULL CHECK (length(relation) BETWEEN 1 AND 60),
    object_id    TEXT NOT NULL REFERENCES knowledge_entities (id) ON DELETE CASCADE,
    text         TEXT NOT NULL CHECK (length(text) BETWEEN 1 AND 400),
    -- Facts of one subject sharing a slot exclude each other ('favourite:food',
    -- 'lives_in', 'taste:durian'); null for facts that accumulate (friends, allergies).
    slot         TEXT CHECK (length(slot) BETWEEN 1 AND 120),
    valid_at     TIMESTAMPTZ NOT NULL,
    invalid_at   TIMESTAMPTZ,
    -- The thread messages that stated it (a repeated statement adds its message).
    message_ids  TEXT[] NOT NULL CHECK (cardinality(message_ids) BETWEEN 1 AND 50),
    -- What search matches: the sentence, both names, the relation and its synonyms in
    -- English and Indonesian. The 'simple' configuration neither stems nor drops words,
    -- so it treats both languages alike; queries match word prefixes.
    terms        TEXT NOT NULL,
    search       TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    CHECK (invalid_at IS NULL OR invalid_at >= valid_at)
);
-- fastupdate off: new facts go straight into the index instead of a pending list that
-- every search would scan until the next vacuum (tens of milliseconds at 10,000 facts).
-- Ingestion runs in the background, so it pays the small insert cost instead of search.
-- Only facts still true are searched, so only they are indexed.
CREATE INDEX knowledge_facts_search ON knowledge_facts USING gin (search) WITH (fastupdate = off)
    WHERE invalid_at IS NULL;
CREATE INDEX knowledge_facts_person_valid ON knowledge_facts (person_id, valid_at DESC) WHERE invalid_at IS NULL;
CREATE INDEX knowledge_facts_person ON knowledge_facts (person_id, subject_id, relation, object_id);
-- At most one valid fact per slot of a subject: the invariant contradiction relies on.
CREATE UNIQUE INDEX knowledge_facts_slot_valid ON knowledge_facts (subject_id, slot)
    WHERE invalid_at IS NULL AND slot IS NOT NULL;
