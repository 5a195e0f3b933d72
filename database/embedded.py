"""An embedded PostgreSQL for machines without one: `make run` with DATABASE_URL unset.

pgserver ships PostgreSQL binaries in a wheel, so a fresh machine needs nothing from apt.
The server listens on a Unix socket inside its data folder only, and is stopped when the
owning process ends.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


class EmbeddedPostgres:
    """Starts (or reuses) a PostgreSQL server whose files live in `data_dir`."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir.resolve()
        self._server: Any = None

    def start(self) -> str:
        """Start the server and return a libpq URL for it."""
        # pgserver is imported here so that a deployment with DATABASE_URL never loads it.
        import pgserver

        self._data_dir.mkdir(parents=True, exist_ok=True)
        # Run as root, pgserver drops to an OS user of its own; it must reach the folder.
        os.chmod(self._data_dir.parent, 0o755)  # noqa: S103 - pgserver's own OS user must traverse it
        self._server = pgserver.get_server(str(self._data_dir), cleanup_mode="stop")  # type: ignore[attr-defined]
        uri: str = self._server.get_uri()
        return uri

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None
