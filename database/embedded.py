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

A serving process supervises the server (`supervise`): a postmaster that died (`kill -9`,
the OOM killer) used to leave every request answering 503 until someone restarted the
whole process. Now it is started again on the same folder and socket, so the pools'
next connections simply work; after a bounded number of failed attempts the process is
told to give up (the composition root exits non-zero so the process's own supervisor
restarts it: README, "Two commands").
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_HANDLES = ".handle_pids.json"
# A serving process looks at its postmaster this often, and starts it again at most this
# many times in a row, waiting twice as long after each failure (at most the cap).
RESTART_CHECK_S = 1.0
RESTART_ATTEMPTS = 5
RESTART_BACKOFF_MAX_S = 16.0


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

    def is_running(self) -> bool:
        """Whether this folder's postmaster is alive (read from its `postmaster.pid`)."""
        from pgserver.utils import PostmasterInfo

        try:
            info = PostmasterInfo.read_from_pgdata(self._data_dir)
        except (OSError, ValueError, IndexError):
            return False  # torn or missing while a postmaster starts or dies
        return info is not None and info.is_running()

    def restart(self) -> str:
        """Start the server again on the same folder (its postmaster died); returns its URL,
        which is the one `start` returned: the socket lives in the data folder."""
        from pgserver.postgres_server import PostgresServer

        assert self._server is not None, "restart follows start"
        with PostgresServer._lock:
            if self._server.system_user is not None:
                # Run as root, PostgreSQL runs as pgserver's own OS user, which must still
                # reach the folder: something may have tightened a parent meanwhile (pytest
                # resets its temporary root to 0700 on every run, for one).
                from pgserver.utils import ensure_prefix_permissions

                ensure_prefix_permissions(self._data_dir)
            self._server.ensure_postgres_running()
        uri: str = self._server.get_uri()
        return uri

    async def supervise(
        self,
        *,
        url: str,
        on_give_up: Callable[[str], None],
        check_s: float = RESTART_CHECK_S,
        attempts: int = RESTART_ATTEMPTS,
    ) -> None:
        """Until cancelled: every `check_s`, start the server again if its postmaster died,
        up to `attempts` times in a row (waiting longer after each failure); then call
        `on_give_up` with one line saying why, and stop supervising."""
        while True:
            await asyncio.sleep(check_s)
            if await asyncio.to_thread(self.is_running):
                continue
            log.warning("the embedded PostgreSQL in %s is not running; starting it again", self._data_dir)
            for attempt in range(1, attempts + 1):
                try:
                    again = await asyncio.to_thread(self.restart)
                except Exception as exc:  # pg_ctl failed or timed out: its log says why
                    log.warning("restarting the embedded PostgreSQL failed (attempt %d): %s", attempt, exc)
                    if attempt < attempts:
                        await asyncio.sleep(min(check_s * 2**attempt, RESTART_BACKOFF_MAX_S))
                    continue
                if again != url:
                    on_give_up(f"the embedded PostgreSQL came back at another address ({again}, not {url})")
                    return
                log.warning("the embedded PostgreSQL is running again (attempt %d)", attempt)
                break
            else:
                on_give_up(f"the embedded PostgreSQL in {self._data_dir} could not be restarted ({attempts} attempts)")
                return

    def stop(self) -> None:
        """Let go of the server; it stops when no other live process still uses it."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None
