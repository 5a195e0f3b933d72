-- Retention (chat/retention.py) deletes live events, tool records and charged model-call
-- records older than their windows. These tables are written in time order, so a BRIN
-- index (a few pages for millions of rows, next to nothing per insert) finds the old rows
-- without reading the table or adding a B-tree's cost to every turn's writes.
CREATE INDEX events_created_brin ON events USING brin (created_at);
CREATE INDEX run_events_created_brin ON run_events USING brin (created_at);
CREATE INDEX run_calls_at_brin ON run_calls USING brin (at);
