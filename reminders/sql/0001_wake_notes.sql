-- Ava's notes to her future self (SPEC §8). The row is the truth about a note: the
-- embedded dispatcher claims due rows straight from this table, and an external queue
-- (Cloud Tasks) only ever carries the id. No foreign key to people: reminders is a lower
-- domain that migrates before chat; "forget me" cancels a person's notes explicitly.
CREATE TABLE wake_notes (
    id                  TEXT PRIMARY KEY CHECK (id LIKE 'pstr\_%'),
    person_id           TEXT NOT NULL CHECK (length(person_id) BETWEEN 1 AND 100),
    agent               TEXT NOT NULL DEFAULT 'ava' CHECK (agent = 'ava'),
    text                TEXT NOT NULL CHECK (length(text) BETWEEN 1 AND 2000),
    due_at              TIMESTAMPTZ NOT NULL,
    -- The zone the note was written in: local times in it mean what the person meant.
    time_zone           TEXT NOT NULL CHECK (length(time_zone) BETWEEN 1 AND 64),
    status              TEXT NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending', 'delivering', 'delivered', 'cancelled', 'failed')),
    created_at          TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    -- The run that wrote the note (null when written through the API or by a test).
    created_by_run_id   TEXT,
    -- Deliveries started; a claim past its lease is someone's crash and may be taken again.
    attempts            INT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    lease_until         TIMESTAMPTZ,
    -- When an external queue accepted the note (Cloud Tasks); null = not handed over yet.
    queued_at           TIMESTAMPTZ,
    -- What delivery did: the run it woke, how it ended, and the first line Ava said.
    run_id              TEXT,
    outcome             TEXT CHECK (outcome IN ('ran', 'silent', 'wallet_empty', 'gave_up')),
    preview             TEXT,
    delivered_at        TIMESTAMPTZ,
    cancelled_at        TIMESTAMPTZ,
    error               TEXT,
    CHECK ((status = 'delivering') = (lease_until IS NOT NULL)),
    CHECK ((status = 'delivered') = (delivered_at IS NOT NULL)),
    CHECK ((status = 'cancelled') = (cancelled_at IS NOT NULL))
);
CREATE INDEX wake_notes_due ON wake_notes (due_at) WHERE status = 'pending';
CREATE INDEX wake_notes_lease ON wake_notes (lease_until) WHERE status = 'delivering';
CREATE INDEX wake_notes_person ON wake_notes (person_id, due_at);

-- Every process's dispatcher sleeps until the next due time; a note that becomes pending
-- (new, or due earlier) wakes them all on commit so they can sleep less.
CREATE FUNCTION wake_notes_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'pending' THEN
        PERFORM pg_notify('avagenc_wakes', '');
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER wake_notes_notify AFTER INSERT OR UPDATE OF due_at, status ON wake_notes
    FOR EACH ROW EXECUTE FUNCTION wake_notes_notify();
