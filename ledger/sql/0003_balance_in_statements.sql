-- The balance and its display inside another statement, so a change can be announced with
-- the balance it left in one round trip: the chat's `wallet.changed` event is inserted by
-- one statement that reads the balance here (chat.ports.PostgresEvents.publish_balance;
-- it was a read, then an insert: BENCHMARKS.md, issue 24).
--
-- ledger_balance_micros reads the snapshot rows as PostgresLedger.balance_micros does;
-- ledger_format_rupiah writes an amount as ledger.money.format_rupiah does ('Rp 4.999',
-- floored, Indonesian grouping). tests/integration/test_ledger_sql.py holds each equal to
-- its Python twin.
CREATE FUNCTION ledger_balance_micros(account TEXT) RETURNS BIGINT
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (SELECT coalesce(sum(balance_micros), 0)::bigint FROM account_balances WHERE account_id = account);

CREATE FUNCTION ledger_format_rupiah(amount_micros BIGINT) RETURNS TEXT
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (
        SELECT CASE WHEN rupiah < 0 THEN '-' ELSE '' END
            || 'Rp ' || regexp_replace(abs(rupiah)::text, '(\d)(?=(\d{3})+$)', '\1.', 'g')
        FROM (SELECT floor(amount_micros / 1000000.0)::bigint AS rupiah) AS floored
    );
