-- Paired speakers (docs/http.md#devices): a speaker asks for a pairing, the signed-in
-- person approves its short code, and the speaker's next poll receives a device token
-- bound to that person and that device. Codes, poll secrets and tokens are stored only
-- as SHA-256 digests; a revoked device's row is deleted, so its token finds nothing.

CREATE TABLE devices (
    id            TEXT        PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
    person_id     TEXT        NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    name          TEXT        NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    -- Set once, by the speaker's first poll after the approval.
    token_sha256  TEXT        UNIQUE CHECK (token_sha256 IS NULL OR length(token_sha256) = 64),
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen_at  TIMESTAMPTZ
);
CREATE INDEX devices_person ON devices (person_id, created_at);

-- A pairing lives minutes: pending until approved (person_id, device_id set), then
-- deleted by the poll that hands out the device token.
CREATE TABLE device_pairings (
    code_sha256         TEXT        PRIMARY KEY CHECK (length(code_sha256) = 64),
    poll_secret_sha256  TEXT        NOT NULL UNIQUE CHECK (length(poll_secret_sha256) = 64),
    name                TEXT        NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    person_id           TEXT        REFERENCES people (id) ON DELETE CASCADE,
    device_id           TEXT        REFERENCES devices (id) ON DELETE CASCADE,
    expires_at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX device_pairings_expires ON device_pairings (expires_at);
