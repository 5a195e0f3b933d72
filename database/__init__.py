"""PostgreSQL plumbing shared by the composition root and the tests: the embedded server,
the migration runner, the connection pool and the one LISTEN connection. Domains never
import this package; they receive an `asyncpg.Pool` (and the `Listener`, through a protocol
of their own) from the composition root (`app`)."""

from database.embedded import EmbeddedPostgres
from database.listener import Listener
from database.migrations import MIGRATION_SOURCES, apply_migrations, migration_sources
from database.pool import TurnPool, create_pool, holding, holding_own

__all__ = [
    "MIGRATION_SOURCES",
    "EmbeddedPostgres",
    "Listener",
    "TurnPool",
    "apply_migrations",
    "create_pool",
    "holding",
    "holding_own",
    "migration_sources",
]
