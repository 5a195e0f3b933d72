-- Risky actions an agent proposed and the person has not yet confirmed (SPEC §6.1):
-- sending an email, adding an event with guests, unlocking or opening. A proposal is carried out only after
-- the person's own message, written later than the proposal, says yes; each runs once.
CREATE TABLE pending_actions (
    id               TEXT PRIMARY KEY,
    person_id        TEXT NOT NULL,
    agent            TEXT NOT NULL,  -- who proposed it, and alone may carry it out
    kind             TEXT NOT NULL CHECK (kind IN ('send_email', 'add_event', 'device_commands')),
    payload          JSONB NOT NULL,
    account          TEXT NOT NULL CHECK (account IN ('sandbox', 'live')),
    proposed_run_id  TEXT NOT NULL,
    proposed_at      TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    expires_at       TIMESTAMPTZ NOT NULL,
    status           TEXT NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'done', 'failed', 'cancelled')),
    decided_at       TIMESTAMPTZ,
    outcome          JSONB,
    CHECK (expires_at > proposed_at),
    CHECK ((status = 'pending') = (decided_at IS NULL))
);
CREATE INDEX pending_actions_by_person ON pending_actions (person_id, agent, status, proposed_at DESC);
