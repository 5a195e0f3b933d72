-- The language a person speaks, learned from what they write (issue 9): it picks the
-- recogniser and voice of their calls. Only the languages Ava speaks first (SPEC §5).
ALTER TABLE people ADD COLUMN language TEXT NOT NULL DEFAULT 'en' CHECK (language IN ('en', 'id'));
