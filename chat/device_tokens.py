"""Device tokens this process has seen lately, so a speaker's token is verified without a
database round trip in the common case (docs/http.md#devices, "Known device tokens").

Why: a device token was one digest lookup per use, about as much as the whole 0.5 ms a
request may spend on verification (BENCHMARKS.md, "Identity and limits"). Remembered here
(token digest -> person and device, filled on first use), a use costs a dictionary read.

What keeps a revocation immediate:

- a revoke on this process forgets the device at once (`forget`), before it answers;
- a revoke on another process reaches this one as the `device_revoked` notification,
  which forgets it too; the notification that ends a revoked speaker's live call;
- nothing is trusted while a notification could be missed: `listening()` is asked before
  each use and each fill, so from the moment the listening connection is seen lost until
  it listens again every token goes to the database, and listening again forgets
  everything (`forget(None)`), since a revocation may have passed unheard meanwhile;
- a lookup that raced a revocation is not remembered: every forget moves an epoch on,
  and a fill whose lookup began in an older epoch is dropped.

Bounds: at most `size_max` tokens, the oldest filled going first, each trusted for
`age_max_s` (the reasons are at the constants).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

# A process serves a few hundred calls at most (CALLS_PER_PROCESS_MAX), so a few thousand
# recent speakers is more than it meets within an age; an entry is about 300 bytes.
SIZE_MAX = 4_096
# A speaker's "last seen" is written at most once a minute (chat.devices._VERIFY_SQL): an
# entry lives no longer, so a token used again after a minute is looked up, and "last
# seen" stays as fresh as before. It also bounds how long a listening connection that died
# without anyone noticing (no loss reported) could leave a revocation unheard.
AGE_MAX_S = 60.0


@dataclass(frozen=True, slots=True)
class DeviceCaller:
    """Who is at the speaker door with a device token."""

    person_id: str
    device_id: str


class KnownDeviceTokens:
    def __init__(
        self,
        *,
        listening: Callable[[], bool],
        size_max: int = SIZE_MAX,
        age_max_s: float = AGE_MAX_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        assert size_max >= 1, size_max
        assert age_max_s > 0, age_max_s
        self._listening = listening
        self._size_max = size_max
        self._age_max_s = age_max_s
        self._clock = clock
        # token digest -> (when filled, who); insertion order is age order.
        self._known: dict[str, tuple[float, DeviceCaller]] = {}
        self._digest_of: dict[str, str] = {}  # device id -> its token's digest
        self.epoch = 0

    def __len__(self) -> int:
        return len(self._known)

    def trusting(self) -> bool:
        """Whether remembered tokens are used now (a revocation would be heard)."""
        return self._listening()

    def get(self, token_digest: str) -> DeviceCaller | None:
        """Who the token names, if it is known, young enough, and a revocation would be heard."""
        entry = self._known.get(token_digest)
        if entry is None or not self.trusting():
            return None
        filled_at, caller = entry
        if self._clock() - filled_at > self._age_max_s:
            self._drop(token_digest)
            return None
        return caller

    def put(self, token_digest: str, caller: DeviceCaller, *, epoch: int) -> None:
        """Remember what a lookup begun in `epoch` found, unless a forget came since or
        revocations cannot be heard now."""
        if epoch != self.epoch or not self.trusting():
            return
        self._drop(token_digest)
        while len(self._known) >= self._size_max:
            self._drop(next(iter(self._known)))
        self._known[token_digest] = (self._clock(), caller)
        self._digest_of[caller.device_id] = token_digest

    def forget(self, device_id: str | None) -> None:
        """Forget a revoked device's token; None: forget every token (listening restarted)."""
        self.epoch += 1
        if device_id is None:
            self._known.clear()
            self._digest_of.clear()
            return
        token_digest = self._digest_of.pop(device_id, None)
        if token_digest is not None:
            self._known.pop(token_digest, None)

    def _drop(self, token_digest: str) -> None:
        entry = self._known.pop(token_digest, None)
        if entry is not None and self._digest_of.get(entry[1].device_id) == token_digest:
            del self._digest_of[entry[1].device_id]
