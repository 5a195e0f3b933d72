-- A person's links to their real accounts (SPEC §6.2). OAuth refresh tokens are stored
-- only sealed (Fernet: AES-128-CBC + HMAC-SHA256, key from settings); Tuya links by the
-- app account's uid, which is an identifier, not a secret.
CREATE TABLE integration_links (
    person_id             TEXT NOT NULL,
    integration           TEXT NOT NULL CHECK (integration IN ('google', 'spotify', 'tuya')),
    refresh_token_sealed  BYTEA,
    account_id            TEXT,
    scopes                TEXT NOT NULL DEFAULT '',
    linked_at             TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (person_id, integration),
    CHECK ((refresh_token_sealed IS NULL) <> (account_id IS NULL))
);
