-- The sandbox workspace: a mailbox, a calendar and contacts per person, so Rafal's
-- actions have real, lasting effects without a Google account. Seeded on first use;
-- the sandbox_workspaces row marks a seeded person (deleted seed data stays deleted).
CREATE TABLE sandbox_workspaces (
    person_id  TEXT PRIMARY KEY,
    seeded_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE sandbox_mail (
    person_id   TEXT NOT NULL REFERENCES sandbox_workspaces (person_id) ON DELETE CASCADE,
    message_id  TEXT NOT NULL,
    thread_id   TEXT NOT NULL,
    folder      TEXT NOT NULL CHECK (folder IN ('inbox', 'sent')),
    sender      TEXT NOT NULL,
    recipient   TEXT NOT NULL,
    subject     TEXT NOT NULL,
    body        TEXT NOT NULL,
    sent_at     TIMESTAMPTZ NOT NULL,
    unread      BOOLEAN NOT NULL DEFAULT true,
    PRIMARY KEY (person_id, message_id)
);
CREATE INDEX sandbox_mail_by_time ON sandbox_mail (person_id, sent_at DESC);

CREATE TABLE sandbox_events (
    person_id    TEXT NOT NULL REFERENCES sandbox_workspaces (person_id) ON DELETE CASCADE,
    event_id     TEXT NOT NULL,
    summary      TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    location     TEXT NOT NULL DEFAULT '',
    start_at     TIMESTAMPTZ NOT NULL,
    end_at       TIMESTAMPTZ NOT NULL,
    attendees    TEXT[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (person_id, event_id),
    CHECK (end_at > start_at)
);
CREATE INDEX sandbox_events_by_time ON sandbox_events (person_id, start_at);

CREATE TABLE sandbox_contacts (
    person_id      TEXT NOT NULL REFERENCES sandbox_workspaces (person_id) ON DELETE CASCADE,
    resource_name  TEXT NOT NULL,
    name           TEXT NOT NULL,
    emails         TEXT[] NOT NULL DEFAULT '{}',
    phones         TEXT[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (person_id, resource_name)
);
