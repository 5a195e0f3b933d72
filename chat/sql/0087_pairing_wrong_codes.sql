-- A pairing code burns after too many wrong tries against it (docs/http.md#devices). The
-- code's first group of four names the waiting speaker (`head_sha256`, unique while the
-- pairing lives); the whole code proves it. A wrong code whose first group names a waiting
-- speaker counts against that pairing, and at `PAIRING_WRONG_CODES_MAX` it is burnt: even
-- the right code is refused, and the speaker must start again.

-- Pairings still waiting for their person were drawn without a head; they live minutes,
-- so they go (their speakers ask again). Approved ones keep their row for the speaker's poll.
DELETE FROM device_pairings WHERE person_id IS NULL;

ALTER TABLE device_pairings
    ADD COLUMN head_sha256 TEXT UNIQUE CHECK (head_sha256 IS NULL OR length(head_sha256) = 64),
    ADD COLUMN wrong_codes INTEGER NOT NULL DEFAULT 0 CHECK (wrong_codes >= 0);
