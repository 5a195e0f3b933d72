-- Counting windows and leases need no write-ahead log: each hit committed on its own would
-- otherwise wait for a disk flush (measured in bench/identity_cost.py). What a crash takes
-- with them (PostgreSQL empties unlogged tables after one) is a window's count, which
-- starts again, and leases, which would have lapsed anyway.
ALTER TABLE limit_windows SET UNLOGGED;
ALTER TABLE limit_leases SET UNLOGGED;
