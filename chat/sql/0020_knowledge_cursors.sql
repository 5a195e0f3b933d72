-- How far knowledge has read each person's thread: the last message seq handed to the
-- Knowledge port. The thread's own last_seq minus this cursor is the backlog, so the
-- backlog survives a restart with nothing else to store. Forgetting a person deletes it
-- with the thread.
CREATE TABLE knowledge_cursors (
    person_id   TEXT PRIMARY KEY REFERENCES people (id) ON DELETE CASCADE,
    last_seq    BIGINT NOT NULL CHECK (last_seq >= 0),
    -- Consecutive failed attempts at the next batch; past a bound the batch is skipped.
    failures    INT NOT NULL DEFAULT 0 CHECK (failures >= 0),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
