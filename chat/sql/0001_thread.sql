-- People, their one thread, its messages, the runs that wrote them, and the event log
-- that feeds live updates. Ids are prefixed text ('usr_', 'msg_', 'run_') so a stray id
-- in a log says what it names.

CREATE TABLE people (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    -- Local sign-in identifies a person by a normalised name; null for other identities.
    local_key   TEXT UNIQUE,
    time_zone   TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One thread per person. last_seq hands out message numbers; its row lock makes them
-- strictly increasing even if a writer ever bypassed the turn lock.
CREATE TABLE threads (
    person_id   TEXT PRIMARY KEY REFERENCES people (id) ON DELETE CASCADE,
    last_seq    BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE runs (
    id                  TEXT PRIMARY KEY,
    person_id           TEXT NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    agent               TEXT NOT NULL CHECK (agent IN ('ava', 'zee', 'yori', 'rafal')),
    trigger             TEXT NOT NULL CHECK (trigger IN ('human', 'ava', 'postera')),
    parent_run_id       TEXT REFERENCES runs (id) ON DELETE CASCADE,
    trigger_message_id  TEXT NOT NULL,
    -- The message that started the whole turn (the person's, or a wake note): a handed-on
    -- run keeps it in view, and a retried request finds everything its turn wrote.
    origin_message_id   TEXT NOT NULL,
    channel             TEXT NOT NULL CHECK (channel IN ('text', 'voice', 'phone')),
    status              TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'succeeded', 'failed')),
    error_code          TEXT,
    error_detail        TEXT,
    model               TEXT,
    model_calls         INT NOT NULL DEFAULT 0 CHECK (model_calls >= 0),
    tool_calls          INT NOT NULL DEFAULT 0 CHECK (tool_calls >= 0),
    usage               JSONB NOT NULL DEFAULT '{}'::jsonb,
    cost_micros         BIGINT NOT NULL DEFAULT 0 CHECK (cost_micros >= 0),
    started_at          TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    finished_at         TIMESTAMPTZ,
    CHECK ((trigger = 'ava') = (parent_run_id IS NOT NULL)),
    CHECK ((status = 'running') = (finished_at IS NULL))
);
CREATE INDEX runs_person_started ON runs (person_id, started_at);
CREATE INDEX runs_origin ON runs (origin_message_id);
CREATE INDEX runs_running ON runs (status) WHERE status = 'running';

CREATE TABLE messages (
    id          TEXT PRIMARY KEY,
    person_id   TEXT NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL CHECK (seq > 0),
    author      TEXT NOT NULL CHECK (author IN ('human', 'ava', 'zee', 'yori', 'rafal', 'postera')),
    text        TEXT NOT NULL CHECK (length(text) BETWEEN 1 AND 20000),
    channel     TEXT NOT NULL CHECK (channel IN ('text', 'voice', 'phone')),
    run_id      TEXT REFERENCES runs (id) ON DELETE CASCADE,
    emotions    TEXT[] NOT NULL DEFAULT '{}',
    client_id   TEXT CHECK (length(client_id) BETWEEN 1 AND 100),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (person_id, seq),
    UNIQUE (person_id, client_id),
    -- Only agents' runs write agent messages; the person and wake notes are not runs.
    CHECK ((author IN ('human', 'postera')) = (run_id IS NULL))
);

ALTER TABLE runs ADD FOREIGN KEY (trigger_message_id) REFERENCES messages (id) ON DELETE CASCADE
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE runs ADD FOREIGN KEY (origin_message_id) REFERENCES messages (id) ON DELETE CASCADE
    DEFERRABLE INITIALLY DEFERRED;

-- Tool calls and their results: kept for the activity view and audits, never shown to
-- a model as history.
CREATE TABLE run_events (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx         INT NOT NULL,
    name        TEXT NOT NULL,
    args        JSONB NOT NULL,
    result      JSONB NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, idx)
);

-- Live events, per person, in commit order of their ids. Stored so a client can resume
-- from Last-Event-ID; the NOTIFY only wakes listeners, who then read the rows.
CREATE TABLE events (
    id          BIGSERIAL PRIMARY KEY,
    person_id   TEXT NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    type        TEXT NOT NULL,
    data        JSONB NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX events_person_id ON events (person_id, id);

CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('avagenc_events', NEW.person_id);
    RETURN NULL;
END;
$$;
CREATE TRIGGER events_notify AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_notify();
