-- The sandbox music service: a library, playlists, playback devices and a player per
-- person, so Yori's actions have real, lasting effects without a Spotify account.
-- Seeded on first use (the player row marks a seeded person).
CREATE TABLE sandbox_music_tracks (
    person_id    TEXT NOT NULL,
    track_id     TEXT NOT NULL,
    name         TEXT NOT NULL,
    artists      TEXT[] NOT NULL,
    album        TEXT NOT NULL,
    genre        TEXT NOT NULL,
    duration_ms  INTEGER NOT NULL CHECK (duration_ms > 0),
    PRIMARY KEY (person_id, track_id)
);

CREATE TABLE sandbox_music_playlists (
    person_id    TEXT NOT NULL,
    playlist_id  TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL,
    track_ids    TEXT[] NOT NULL,
    PRIMARY KEY (person_id, playlist_id)
);

CREATE TABLE sandbox_music_devices (
    person_id    TEXT NOT NULL,
    device_id    TEXT NOT NULL,
    name         TEXT NOT NULL,
    type         TEXT NOT NULL,
    volume       INTEGER NOT NULL CHECK (volume BETWEEN 0 AND 100),
    PRIMARY KEY (person_id, device_id)
);

CREATE TABLE sandbox_music_players (
    person_id    TEXT PRIMARY KEY,
    device_id    TEXT,                          -- the active device; NULL: none is active
    is_playing   BOOLEAN NOT NULL DEFAULT false,
    queue        TEXT[] NOT NULL DEFAULT '{}',  -- track ids, in play order
    position     INTEGER NOT NULL DEFAULT 0 CHECK (position >= 0),
    context_uri  TEXT,
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (position = 0 OR position < cardinality(queue))
);
