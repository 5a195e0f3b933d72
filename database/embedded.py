"""An embedded PostgreSQL for machines without one: `make run` with DATABASE_URL unset.

pgserver ships PostgreSQL binaries in a wheel, so a fresh machine needs nothing from apt.
The server listens on a Unix socket inside its data folder only, and is stopped when the
last process using it lets go.

pgserver counts its users in a handle file (the pids of the processes holding the server)
and stops the server only when the last one leaves. A process killed with `kill -9` never
takes its pid out, so every later clean stop would believe someone still uses the server
and leave it running for ever. `start` therefore forgets the pids of processes that are
gone before it joins, so the next clean stop really stops the server (a server left running
by a dead owner is taken over, not started twice).

pgserver logs every command it runs at INFO; those lines go to `log_path`, never to the
terminal (PostgreSQL's own log is `<data_dir>/log`).
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_HANDLES = ".handle_pids.json"


def _owner_alive(pid: int) -> bool:
    """True if `pid` is a live Python process (a reused pid of another program is not an owner)."""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return "python" in process.name().lower() or any("python" in part for part in process.cmdline()[:1])
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def forget_dead_owners(data_dir: Path) -> list[int]:
    """Remove the pids of processes that no longer exist from pgserver's handle file;
    returns the pids removed. Call under pgserver's inter-process lock."""
    path = data_dir / _HANDLES
    if not path.exists():
        return []
    try:
        pids = [int(p) for p in json.loads(path.read_text())]
    except (ValueError, TypeError):
        pids = []  # a torn write from a killed process: nobody can be trusted to hold it
    alive = [p for p in pids if p == os.getpid() or _owner_alive(p)]
    path.write_text(json.dumps(alive))
    return [p for p in pids if p not in alive]


def _log_to_file(log_path: Path) -> None:
    """Send pgserver's own logger to `log_path`, once per process, and not to the console."""
    logger = logging.getLogger("pgserver")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    target = str(log_path.resolve())
    if any(isinstance(h, logging.FileHandler) and h.baseFilename == target for h in logger.handlers):
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(target, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger.addHandler(handler)


class EmbeddedPostgres:
    """Starts (or reuses) a PostgreSQL server whose files live in `data_dir`."""

    def __init__(self, data_dir: Path, *, log_path: Path | None = None) -> None:
        self._data_dir = data_dir.resolve()
        self._log_path = log_path or self._data_dir.parent / "pg.log"
        self._server: Any = None

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    def start(self) -> str:
        """Start the server (or join the one running on this folder) and return a libpq URL."""
        _log_to_file(self._log_path)
        # pgserver is imported here so that a deployment with DATABASE_URL never loads it.
        # Importing it warns when XDG_RUNTIME_DIR is unset (root shells, containers) and
        # falls back to /tmp, which is what we want anyway.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver
            from pgserver.postgres_server import PostgresServer

        self._data_dir.mkdir(parents=True, exist_ok=True)
        # Run as root, pgserver drops to an OS user of its own; it must reach the folder.
        os.chmod(self._data_dir.parent, 0o755)  # noqa: S103 - pgserver's own OS user must traverse it
        with PostgresServer._lock:
            gone = forget_dead_owners(self._data_dir)
        if gone:
            log.warning("the embedded PostgreSQL was left by processes that died (%s); taking it over", gone)
        self._server = pgserver.get_server(str(self._data_dir), cleanup_mode="stop")  # type: ignore[attr-defined]
        uri: str = self._server.get_uri()
        return uri

    def stop(self) -> None:
        """Let go of the server; it stops when no other live process still uses it."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None
