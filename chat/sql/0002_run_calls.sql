-- One row per model call of a run: the usage the model reported, written the moment the
-- call returns and before it is charged. It is the single source of both the receipt
-- and the run's usage, and a row left uncharged (a crash between the two) is charged
-- at the next startup with the same idempotency ref, so no completed call is forgotten
-- and none is charged twice.
CREATE TABLE run_calls (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx          INT NOT NULL CHECK (idx >= 1),
    person_id    TEXT NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    model        TEXT NOT NULL,
    usage        JSONB NOT NULL,
    at           TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    cost_micros  BIGINT CHECK (cost_micros >= 0),
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX run_calls_uncharged ON run_calls (at) WHERE cost_micros IS NULL;
