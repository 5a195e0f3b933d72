-- The wallet's double-entry ledger (SPEC §11). Money is whole micro-rupiah in BIGINT
-- (1 IDR = 1,000,000 µRp). The database itself holds the invariants, so no writer,
-- buggy or hand-typed, can break them:
--   * every transaction's entries sum to zero and number at least two (checked at COMMIT);
--   * entries and transactions are never updated, deleted or truncated;
--   * `account_balances` is derived from entries by a trigger and nothing else may write it,
--     so a balance read is O(1) yet always equals the sum of the account's entries.

-- Account ids say what they are: 'user:<person_id>:IDR' for a person's wallet, and three
-- system accounts: revenue (what charges earn), topup (money that came in from outside)
-- and grant (money we gave away). User accounts are created on first posting.
CREATE TABLE accounts (
    id          TEXT PRIMARY KEY CHECK (id ~ '^(user:[A-Za-z0-9_.-]{1,64}|revenue|topup|grant):IDR$'),
    kind        TEXT NOT NULL CHECK (kind IN ('user', 'system')),
    currency    TEXT NOT NULL DEFAULT 'IDR' CHECK (currency = 'IDR'),
    -- How many snapshot rows the balance is spread over. Every charge credits revenue, so a
    -- single revenue row would be locked by every writer until its COMMIT; striping lets
    -- concurrent writers update different rows (see ledger_entries_post).
    stripes     INT NOT NULL DEFAULT 1 CHECK (stripes BETWEEN 1 AND 256),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((kind = 'user') = (id LIKE 'user:%'))
);

INSERT INTO accounts (id, kind, stripes) VALUES
    ('revenue:IDR', 'system', 64),
    ('topup:IDR', 'system', 16),
    ('grant:IDR', 'system', 16);

-- A transaction is one business event (a model call's charge, a grant, a top-up). Its ref
-- is the idempotency key: writing the same event twice finds the first one. metadata is
-- the receipt shown to the person.
CREATE TABLE transactions (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type        TEXT NOT NULL
                CHECK (type IN ('agent_call', 'voice_usage', 'signup_grant', 'topup', 'adjustment')),
    ref         TEXT NOT NULL UNIQUE CHECK (length(ref) BETWEEN 1 AND 200),
    metadata    JSONB NOT NULL DEFAULT '{}'::jsonb
                CHECK (jsonb_typeof(metadata) = 'object' AND pg_column_size(metadata) <= 16384),
    -- When the event happened (a retried charge keeps its call's time), so a charge lands
    -- in the local day its model call did.
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- The database transaction that wrote it; only that one may add its entries.
    xact_id     XID8 NOT NULL DEFAULT pg_current_xact_id()
);

CREATE TABLE entries (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transaction_id  BIGINT NOT NULL REFERENCES transactions (id),
    -- Not a foreign key on purpose: checking one locks the account row FOR KEY SHARE, a
    -- write, and every charge would write the one revenue row again. ledger_entries_post
    -- checks instead that the account exists, and accounts are never deleted.
    account_id      TEXT NOT NULL,
    amount_micros   BIGINT NOT NULL CHECK (amount_micros <> 0),
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX entries_transaction ON entries (transaction_id);
-- Paging an account's history newest first, and a day's usage.
CREATE INDEX entries_account_id ON entries (account_id, id);
CREATE INDEX entries_account_created ON entries (account_id, created_at);

-- The derived balance: per account, one row per stripe; the balance is their sum.
CREATE TABLE account_balances (
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    stripe          INT NOT NULL CHECK (stripe >= 0),
    balance_micros  BIGINT NOT NULL,
    PRIMARY KEY (account_id, stripe)
);

-- Runs once per INSERT statement on entries (a bulk load aggregates first) and does two jobs.
--
-- 1. It admits entries only into existing accounts, and only into a ledger transaction that
--    the same database transaction created. With the check at COMMIT below, that proves
--    every transaction balanced for good: its entries all arrive before its COMMIT, are
--    checked then, and never change after. (One check per transaction, not per entry.)
-- 2. It keeps account_balances equal to the entries. Rows are upserted in (account_id,
--    stripe) order: that is the ledger's lock order, so writers touching the same accounts
--    queue instead of deadlocking. A transaction's stripe comes from its id, which writers
--    draw in turn from one sequence, so concurrent charges credit different revenue rows.
CREATE FUNCTION ledger_entries_post() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    foreign_txns BIGINT;
    unknown_accounts BIGINT;
BEGIN
    SELECT count(*) FILTER (WHERE t.xact_id IS DISTINCT FROM pg_current_xact_id()),
           count(*) FILTER (WHERE a.id IS NULL)
    INTO foreign_txns, unknown_accounts
    FROM posted AS e
    LEFT JOIN transactions AS t ON t.id = e.transaction_id
    LEFT JOIN accounts AS a ON a.id = e.account_id;
    IF foreign_txns > 0 THEN
        RAISE EXCEPTION 'entries may only be added by the database transaction that created their ledger transaction'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF unknown_accounts > 0 THEN
        RAISE EXCEPTION 'entries name an account that does not exist' USING ERRCODE = 'foreign_key_violation';
    END IF;
    INSERT INTO account_balances AS b (account_id, stripe, balance_micros)
    SELECT e.account_id, (e.transaction_id % a.stripes)::int, sum(e.amount_micros)
    FROM posted AS e JOIN accounts AS a ON a.id = e.account_id
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (account_id, stripe) DO UPDATE SET balance_micros = b.balance_micros + EXCLUDED.balance_micros;
    RETURN NULL;
END;
$$;
CREATE TRIGGER entries_post AFTER INSERT ON entries
    REFERENCING NEW TABLE AS posted FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_post();

-- Only ledger_entries_post (a trigger, hence depth 2 here) may write a snapshot row.
-- Statement-level: the rule is about who writes, not which row, and it costs one call.
CREATE FUNCTION ledger_balances_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') OR pg_trigger_depth() < 2 THEN
        RAISE EXCEPTION 'account_balances is derived from entries; only the entries trigger writes it'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER account_balances_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON account_balances
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_balances_guard();

-- History is append-only: a mistake is corrected by a new 'adjustment' transaction.
CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER transactions_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON transactions
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
-- Accounts are permanent too (entries name them without a foreign key); only their
-- striping may be tuned.
CREATE TRIGGER accounts_permanent BEFORE UPDATE OF id, kind, currency OR DELETE OR TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- Checked at COMMIT, once per transaction, after all its entries are in: fewer than two
-- entries, or entries that do not sum to zero, abort the whole database transaction.
CREATE FUNCTION ledger_transaction_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    n BIGINT;
    total NUMERIC;
BEGIN
    SELECT count(*), coalesce(sum(amount_micros), 0) INTO n, total FROM entries WHERE transaction_id = NEW.id;
    IF n < 2 OR total <> 0 THEN
        RAISE EXCEPTION 'ledger transaction % (%) is unbalanced: % entries summing to % micros', NEW.id, NEW.ref, n, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER transactions_balanced AFTER INSERT ON transactions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_transaction_balanced();

-- Prices in rupiah per million tokens, versioned: a new price is a new row with a later
-- valid_from, never an edit, because receipts name the row they were billed at. model is
-- an exact model name or '*' for any model without its own row. Since IDR per million
-- tokens times tokens is micro-rupiah, the arithmetic stays in integers.
CREATE TABLE prices (
    id                          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    model                       TEXT NOT NULL CHECK (length(model) BETWEEN 1 AND 100),
    input_per_mtok_idr          BIGINT NOT NULL CHECK (input_per_mtok_idr >= 0),
    cached_input_per_mtok_idr   BIGINT NOT NULL CHECK (cached_input_per_mtok_idr >= 0),
    output_per_mtok_idr         BIGINT NOT NULL CHECK (output_per_mtok_idr >= 0),
    valid_from                  TIMESTAMPTZ NOT NULL,
    created_at                  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (model, valid_from)
);
CREATE TRIGGER prices_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON prices
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- SPEC §11 defaults. The offline model is billed like Flash so the whole charging path
-- runs without a key; insert a newer 'offline-1' row to change its rate.
INSERT INTO prices (model, input_per_mtok_idr, cached_input_per_mtok_idr, output_per_mtok_idr, valid_from) VALUES
    ('*', 10000, 2500, 42000, '2020-01-01T00:00:00Z'),
    ('gemini-3.5-flash', 10000, 2500, 42000, '2020-01-01T00:00:00Z'),
    ('offline-1', 10000, 2500, 42000, '2020-01-01T00:00:00Z');
