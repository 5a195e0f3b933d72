-- Verified phone callers (docs/http.md#phones): a person adds a number, a one-time code
-- goes to it, and the number is theirs once the code comes back. A verified number is
-- one person's only; a caller is recognised by it on the phone webhook.

CREATE TABLE phone_numbers (
    id             TEXT        PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
    person_id      TEXT        NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    number         TEXT        NOT NULL CHECK (number ~ '^\+[1-9][0-9]{6,14}$'),
    verified_at    TIMESTAMPTZ,
    -- The pending code's SHA-256 (with the row's id), until it is used, expires or is
    -- burnt by too many wrong tries.
    code_sha256    TEXT        CHECK (code_sha256 IS NULL OR length(code_sha256) = 64),
    code_expires_at TIMESTAMPTZ,
    wrong_codes    INTEGER     NOT NULL DEFAULT 0 CHECK (wrong_codes >= 0),
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (person_id, number)
);
CREATE UNIQUE INDEX phone_numbers_verified ON phone_numbers (number) WHERE verified_at IS NOT NULL;

-- A door ticket may be good for one door only: the phone webhook's call tokens open the
-- phone door and nothing else.
ALTER TABLE door_tickets ADD COLUMN door TEXT NOT NULL DEFAULT 'any' CHECK (door IN ('any', 'phone'));

-- Twilio's signature has no nonce: a signed webhook request replayed would mint another
-- call token. Each call's CallSid is taken once; a day later its row is swept.
CREATE TABLE phone_calls_seen (
    call_sid    TEXT        PRIMARY KEY CHECK (length(call_sid) BETWEEN 1 AND 64),
    seen_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX phone_calls_seen_at ON phone_calls_seen (seen_at);
