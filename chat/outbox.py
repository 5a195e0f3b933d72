"""Model calls that returned, and slices of calls' speech that ended, not yet known to be
charged, kept on local disk.

Why: a model call is paid for (to the provider) the moment it returns, but its record and
its charge are database writes, and the database may be gone at that moment (cut
connections, a restarting PostgreSQL). A call whose record could not be written used to be
lost: nothing in the database said it happened, so no sweep could charge it. Here the
call's usage is appended to a file of this process's own before its charge is queued, and
forgotten once the charge is written; the server's sweep (chat.recovery) charges what is
left, with the same ref, when the database answers again (docs/money.md#charging).

The file is written without fsync: it survives this process dying (the kernel holds the
page), not the machine losing power. Each process appends to a file of its own and holds
an exclusive `flock` on it while it lives, so a sweep knows a file whose lock it can take
was left by a process that is gone, charges what it holds and deletes it.

A voice slice (a call's speech between two of Ava's replies, voice/usage.py) is paid for the
same way: used the moment it ends, charged by a database write. It goes in the same file, as
a line of its own kind, from the moment it ends until its charge is written, so a slice the
database missed is charged after a restart too, once, by its ref `voice:<call>:<n>`
(docs/money.md#voice-seconds). Lines without a kind are model calls (files written before
slices were kept here read the same).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ledger import VoiceUsage

log = logging.getLogger(__name__)

# A file a dead process left is read up to this many calls at a time (a bound on memory).
_ORPHAN_CALLS_MAX = 100_000


@dataclass(frozen=True, slots=True)
class PendingCall:
    """One model call's charge as it will be written: what charging it needs, nothing more."""

    person_id: str
    run_id: str
    index: int
    agent: str
    trigger: str
    model: str
    usage: dict[str, int]
    at: datetime  # when the call returned: it picks the price, so a replay is the same charge

    @property
    def key(self) -> tuple[str, int]:
        return (self.run_id, self.index)

    def as_line(self) -> bytes:
        fields = {
            "person_id": self.person_id,
            "run_id": self.run_id,
            "index": self.index,
            "agent": self.agent,
            "trigger": self.trigger,
            "model": self.model,
            "usage": self.usage,
            "at": self.at.isoformat(),
        }
        return (json.dumps(fields, separators=(",", ":")) + "\n").encode()

    @classmethod
    def from_line(cls, line: bytes) -> PendingCall:
        return cls.from_fields(json.loads(line))

    @classmethod
    def from_fields(cls, raw: dict[str, Any]) -> PendingCall:
        usage = {str(k): int(v) for k, v in dict(raw["usage"]).items()}
        return cls(
            person_id=str(raw["person_id"]),
            run_id=str(raw["run_id"]),
            index=int(raw["index"]),
            agent=str(raw["agent"]),
            trigger=str(raw["trigger"]),
            model=str(raw["model"]),
            usage=usage,
            at=datetime.fromisoformat(str(raw["at"])),
        )


@dataclass(frozen=True, slots=True)
class PendingSlice:
    """One slice of a call's speech as it will be charged: its time picks the price, so a
    retry (or a replay after a restart) is the same charge."""

    person_id: str
    call_id: str
    slice_index: int
    channel: str
    usage: VoiceUsage
    at: datetime

    @property
    def ref(self) -> str:
        return f"voice:{self.call_id}:{self.slice_index}"

    @property
    def key(self) -> tuple[str, int]:
        return (f"voice:{self.call_id}", self.slice_index)  # never a run's id (run_…)

    def as_line(self) -> bytes:
        fields = {
            "kind": "voice",
            "person_id": self.person_id,
            "call_id": self.call_id,
            "slice_index": self.slice_index,
            "channel": self.channel,
            "stt_engine": self.usage.stt_engine,
            "stt_ms": self.usage.stt_ms,
            "tts_engine": self.usage.tts_engine,
            "tts_characters": self.usage.tts_characters,
            "at": self.at.isoformat(),
        }
        return (json.dumps(fields, separators=(",", ":")) + "\n").encode()

    @classmethod
    def from_fields(cls, raw: dict[str, Any]) -> PendingSlice:
        usage = VoiceUsage(
            stt_engine=str(raw["stt_engine"]),
            stt_ms=int(raw["stt_ms"]),
            tts_engine=str(raw["tts_engine"]),
            tts_characters=int(raw["tts_characters"]),
        )
        return cls(
            person_id=str(raw["person_id"]),
            call_id=str(raw["call_id"]),
            slice_index=int(raw["slice_index"]),
            channel=str(raw["channel"]),
            usage=usage,
            at=datetime.fromisoformat(str(raw["at"])),
        )


# What the outbox keeps until its charge is written.
Pending = PendingCall | PendingSlice


def read_line(line: bytes) -> Pending:
    """A line of an outbox file, of either kind (ValueError, KeyError or TypeError if it
    cannot be read)."""
    raw: dict[str, Any] = json.loads(line)
    if not isinstance(raw, dict):
        raise TypeError("an outbox line is a JSON object")
    return PendingSlice.from_fields(raw) if raw.get("kind") == "voice" else PendingCall.from_fields(raw)


class Outbox:
    """This process's pending calls and voice slices: in memory, and appended to its own file
    in `folder` (None: in memory only, for the in-process twins and tests that never crash)."""

    def __init__(self, folder: Path | None) -> None:
        self._pending: dict[tuple[str, int], Pending] = {}
        # Calls whose charge failed while this process lived: what its sweep retries.
        self._failed: set[tuple[str, int]] = set()
        self._folder = folder
        self._path: Path | None = None
        self._fd: int | None = None
        # Dead processes' files being charged, each held by its lock until forgotten.
        self._claimed: dict[Path, int] = {}
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            self._path = folder / f"calls-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
            self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def add(self, call: Pending) -> None:
        """Keep `call` until `done`; on disk before this returns."""
        self._pending[call.key] = call
        if self._fd is not None:
            os.write(self._fd, call.as_line())

    def done(self, call: Pending) -> None:
        self._pending.pop(call.key, None)
        self._failed.discard(call.key)

    def failed(self, call: Pending) -> None:
        """Its charge could not be written now: the sweep retries it."""
        if call.key in self._pending:
            self._failed.add(call.key)

    def to_retry(self) -> list[Pending]:
        return [self._pending[k] for k in self._failed if k in self._pending]

    @property
    def pending(self) -> int:
        return len(self._pending)

    def compact(self) -> None:
        """Rewrite this process's file with only the calls still pending (synchronous, so no
        append lands between the write and the swap)."""
        if self._fd is None or self._path is None:
            return
        if not self._pending:
            os.ftruncate(self._fd, 0)
            return
        fresh = self._path.with_suffix(".new")
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"".join(c.as_line() for c in self._pending.values()))
        os.replace(fresh, self._path)
        os.close(self._fd)
        self._fd = fd

    def orphans(self) -> list[tuple[Path, list[Pending]]]:
        """Files left by processes that are gone, each with the calls it holds; the caller
        charges them and then `forget`s the file. Their locks are held until then."""
        if self._folder is None:
            return []
        found: list[tuple[Path, list[Pending]]] = []
        for path in sorted(self._folder.glob("calls-*.jsonl")):
            if path == self._path:
                continue
            calls = self._claim(path)
            if calls is not None:
                found.append((path, calls))
        return found

    def _claim(self, path: Path) -> list[Pending] | None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None  # another process's sweep took it first
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None  # its process lives
        calls: list[Pending] = []
        with os.fdopen(fd, "rb", closefd=False) as lines:
            for line in lines:
                if len(calls) >= _ORPHAN_CALLS_MAX:
                    break
                try:
                    calls.append(read_line(line))
                except (ValueError, KeyError, TypeError):
                    log.warning("outbox %s: a line that cannot be read (cut short by a crash?)", path.name)
        self._claimed[path] = fd
        return calls

    def forget(self, path: Path) -> None:
        """A dead process's file whose calls are all charged: deleted, its lock let go."""
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        fd = self._claimed.pop(path, None)
        if fd is not None:
            os.close(fd)

    def release(self, path: Path) -> None:
        """A dead process's file not finished this time: let go, for the next sweep."""
        fd = self._claimed.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        """At a clean stop: a file with nothing pending is deleted, else kept for the next start."""
        if self._fd is None or self._path is None:
            return
        if not self._pending:
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()
        os.close(self._fd)
        self._fd = None
