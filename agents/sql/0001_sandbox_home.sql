-- The sandbox smart home: one simulated set of devices per person, so Zee's actions
-- have real, lasting effects without a Tuya account. Seeded on first use.
CREATE TABLE sandbox_devices (
    person_id   TEXT NOT NULL,
    device_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    category    TEXT NOT NULL,
    status      JSONB NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (person_id, device_id)
);
