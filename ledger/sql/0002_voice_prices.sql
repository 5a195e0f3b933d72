-- Prices for voice calls, versioned like model prices: speech-to-text by the second of
-- audio heard, text-to-speech by the character spoken, each in rupiah per million units
-- (so units x price is micro-rupiah, in integers). engine names the service ('*' is the
-- default for engines without their own row). Receipts name the rows they were billed at.
CREATE TABLE voice_prices (
    id                       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind                     TEXT NOT NULL CHECK (kind IN ('stt', 'tts')),
    engine                   TEXT NOT NULL CHECK (length(engine) BETWEEN 1 AND 100),
    per_million_units_idr    BIGINT NOT NULL CHECK (per_million_units_idr >= 0),
    valid_from               TIMESTAMPTZ NOT NULL,
    created_at               TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (kind, engine, valid_from)
);
CREATE TRIGGER voice_prices_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON voice_prices
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- Defaults near Google Cloud's list prices at about Rp 16,000 per US dollar: STT about
-- Rp 256 a minute (~4.27 IDR a second), Neural2 TTS about Rp 256,000 per million
-- characters. The offline engines are billed at the same rates, so the whole path runs
-- without credentials; insert a newer row for an engine to change its rate.
INSERT INTO voice_prices (kind, engine, per_million_units_idr, valid_from) VALUES
    ('stt', '*', 4266667, '2020-01-01T00:00:00Z'),
    ('tts', '*', 256000, '2020-01-01T00:00:00Z');
