"""PostgreSQL plumbing shared by the composition root and the tests: the embedded server,
the migration runner and the connection pool. Domains never import this package; they
receive an `asyncpg.Pool` from `main.py`."""

from database.embedded import EmbeddedPostgres
from database.migrations import MIGRATION_SOURCES, apply_migrations
from database.pool import TurnPool, create_pool, holding

__all__ = ["MIGRATION_SOURCES", "EmbeddedPostgres", "TurnPool", "apply_migrations", "create_pool", "holding"]
