-- Limits that hold across every instance sharing this database (docs/http.md#limits),
-- and signed-out sessions (docs/http.md#authentication).

-- Fixed-window counters: one row per key (e.g. `sign_in:<address>`) per window.
-- A row outlives its window only until a sweep deletes it.
CREATE TABLE limit_windows (
    key         TEXT        NOT NULL CHECK (length(key) BETWEEN 1 AND 300),
    window_at   TIMESTAMPTZ NOT NULL,
    ends_at     TIMESTAMPTZ NOT NULL,
    hits        INTEGER     NOT NULL CHECK (hits > 0),
    PRIMARY KEY (key, window_at)
);
CREATE INDEX limit_windows_ends ON limit_windows (ends_at);

-- Leases: something held open (a live-event stream, a run in flight), at most a cap per
-- key. A holder renews its lease while it lives and deletes it when done; one whose
-- process died lapses at `expires_at`.
CREATE TABLE limit_leases (
    id          TEXT        PRIMARY KEY,
    key         TEXT        NOT NULL CHECK (length(key) BETWEEN 1 AND 300),
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX limit_leases_key ON limit_leases (key, expires_at);

-- Take a lease on `p_key` unless `p_cap` live ones are held. The per-key advisory lock
-- (held to the end of the calling transaction) makes count-then-insert one step for
-- every simultaneous caller on every instance.
CREATE FUNCTION take_limit_lease(p_key TEXT, p_id TEXT, p_cap INTEGER, p_ttl_s DOUBLE PRECISION)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('limit_lease:' || p_key, 0));
    DELETE FROM limit_leases WHERE key = p_key AND expires_at <= now();
    IF (SELECT count(*) FROM limit_leases WHERE key = p_key) >= p_cap THEN
        RETURN FALSE;
    END IF;
    INSERT INTO limit_leases (id, key, expires_at) VALUES (p_id, p_key, now() + make_interval(secs => p_ttl_s));
    RETURN TRUE;
END
$$;

-- Sessions signed out before they expired; a row is kept until the token would have
-- expired anyway.
CREATE TABLE revoked_sessions (
    session_id  TEXT        PRIMARY KEY CHECK (length(session_id) BETWEEN 1 AND 64),
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX revoked_sessions_expires ON revoked_sessions (expires_at);

-- Single-use tickets for the doors a browser or a speaker opens by URL (live events, the
-- speaker socket): a ticket lives seconds and is deleted by its one use, so a URL a log
-- keeps names nothing. Only its SHA-256 is stored.
CREATE TABLE door_tickets (
    ticket_sha256  TEXT        PRIMARY KEY CHECK (length(ticket_sha256) = 64),
    person_id      TEXT        NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    expires_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX door_tickets_expires ON door_tickets (expires_at);

-- A person signed in through an identity provider (Firebase) is found by the provider's
-- subject id, so the signup grant follows the verified identity, never a typed name.
ALTER TABLE people ADD COLUMN provider_subject TEXT UNIQUE
    CHECK (provider_subject IS NULL OR length(provider_subject) BETWEEN 1 AND 200);
