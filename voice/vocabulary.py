"""The words the recogniser should expect: the names of everyone in the room.

Whisper tiny.en has never heard of "Zee", "Yori" or "Rafal": on a phone line it wrote
"Raffle", "Yuri", "Z", "See" (BENCHMARKS.md, "Heard well over a phone line"). Whisper
reads a prompt as the text said before the utterance, and words it has just seen are the
ones it writes. So every call's recogniser is given one short prompt built here: the names
of everyone in the room, read from the roster when the call starts (an installed
specialist is named without anything written here; docs/sockets.md#voice-pipeline).

The sandbox home's device names were measured too and are left out: they cured "light"
heard as "life" on the phone, but Whisper then finished a request the person had paused
in ("please turn on the" became "Please turn on the phone."), and a finished-sounding
request is answered at once instead of waited for (voice/turn_end.py).

Only names, never commands. A prompt with command words ("turn on, turn off") flipped
"turn on the bedroom light" to "turn off" on the speaker; a prompt with a whole command
("Zee, turn on the bedroom light.") was written back as the transcript of another clip,
and a command copied from the prompt would be carried out. A list of names copied back
asks for nothing. `bench.voice_narrowband --vocabulary` measures the prompt against none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from agents import SANDBOX_DEVICE_NAMES, team_names

# Limits: a prompt is decoded before every utterance, so its length is paid on every turn.
NAMES_MAX = 12
DEVICES_MAX = 12


def _listed(items: Sequence[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def hearing_prompt(team: Sequence[str], devices: Sequence[str]) -> str:
    """The prompt for these names: "Ava, Zee, Yori and Rafal. The bedroom light, ... ."

    Devices keep their own capitals after the first letter ("the bedroom AC")."""
    names = [n.strip() for n in team if n.strip()][:NAMES_MAX]
    things = [f"the {d.strip()[0].lower()}{d.strip()[1:]}" for d in devices if d.strip()][:DEVICES_MAX]
    sentences = [_listed(names), _listed(things)]
    return " ".join(s[0].upper() + s[1:] + "." for s in sentences if s)


def room_prompt(*, with_devices: bool = False) -> str:
    """The prompt for the room as it is now: the current roster's names, and the sandbox
    home's devices only when asked (the benchmark's comparison; calls go without them)."""
    return hearing_prompt(team_names(), SANDBOX_DEVICE_NAMES if with_devices else ())


# --- what a phone line's short decode should have heard (issue 29) ---------------------------
#
# A phone call is heard through the short window first and again through the 30 s window only
# when the short decode looks wrong (voice/engines/whisper.py, `transcribe_narrowband`). What
# looks wrong is read off the words against what the room expects to be said: its members'
# names and the home's device names (BENCHMARKS.md, "Short window first").

# Words that ask a device to act: after one of these, a device of the home is expected.
COMMAND_VERBS = frozenset({"turn", "switch", "open", "close", "lock", "unlock", "dim"})
# Small words never taken for a near miss (they sit beside device words all the time).
SMALL_WORDS = frozenset({"the", "a", "an", "on", "off", "in", "to", "my", "of", "and", "all", "it", "is", "please"})
# How alike two spellings must be (difflib's ratio) to count as one misheard for the other:
# "bad room" against "bedroom" is 0.86, "living room" against "living" 0.75 (both words known,
# so never compared), "lot" against "light" 0.5.
NEAR_RATIO = 0.8
WORD_MIN = 4  # a known word shorter than this ("ac", "zee") is too short to be near anything


@dataclass(frozen=True, slots=True)
class Expected:
    """The words a call may expect: the room's names and each device's name as its words."""

    names: tuple[str, ...]
    devices: tuple[tuple[str, ...], ...]

    @property
    def words(self) -> frozenset[str]:
        return frozenset({*(_plain(n) for n in self.names), *(w for d in self.devices for w in d)})


def _plain(word: str) -> str:
    return "".join(c for c in word.lower() if c.isalnum() or c == "'")


def _words(text: str) -> list[str]:
    return [w for w in (_plain(t) for t in text.split()) if w]


def expected_words(team: Sequence[str], devices: Sequence[str]) -> Expected:
    """What to expect from these names and devices (limited as the prompt is)."""
    return Expected(
        names=tuple(n.strip() for n in team if n.strip())[:NAMES_MAX],
        devices=tuple(tuple(_words(d)) for d in devices if _words(d))[:DEVICES_MAX],
    )


def room_words() -> Expected:
    """The room's names and the sandbox home's devices (every person's home starts with them)."""
    return expected_words(team_names(), SANDBOX_DEVICE_NAMES)


def doubt(text: str, expected: Expected) -> str:
    """Why a short decode should be heard again ("" when it looks right): a command that names
    no device of the home ("turn on the bedroom life", "the man room light"), or a word near a
    known one but not it ("bad room" for "bedroom"). A doubt costs only a second look, so it
    may be raised on a request said in other words ("turn off all the lights")."""
    return next(iter(doubts(text, expected)), "")


def doubts(text: str, expected: Expected) -> list[str]:
    """Every reason `doubt` finds, in its order (`bench.voice_narrowband` weighs each one)."""
    said = _words(text)
    known = expected.words
    reasons = []
    if COMMAND_VERBS & set(said) and not any(_contains(said, device) for device in expected.devices):
        reasons.append(NO_DEVICE)
    near = _near_miss(said, known)
    if near:
        reasons.append(near)
    return reasons


NO_DEVICE = "a command naming no device"


def _near_miss(said: list[str], known: frozenset[str]) -> str:
    """The first word (or two run together) near a known word but not it, as "'x' near 'y'"."""
    for i, word in enumerate(said):
        if word in known or word in SMALL_WORDS:
            continue
        pair = word + said[i + 1] if i + 1 < len(said) and said[i + 1] not in SMALL_WORDS else ""
        before = said[i - 1] + word if i and said[i - 1] not in SMALL_WORDS else ""
        for candidate in filter(None, (word, pair, before)):
            if candidate in known:
                continue
            for k in known:
                if len(k) >= WORD_MIN and SequenceMatcher(None, candidate, k).ratio() >= NEAR_RATIO:
                    return f"{candidate!r} near {k!r}"
    return ""


def _contains(said: list[str], phrase: tuple[str, ...]) -> bool:
    return any(tuple(said[i : i + len(phrase)]) == phrase for i in range(len(said) - len(phrase) + 1))


# Over a phone line "Zee" loses its /z/ (the buzz lives above the line's 4 kHz) and is written
# as the word it then sounds like. Only these spellings, only as the first word, set off by a
# comma as a name one calls is, and only before a request to a device of the home: "See, I
# told you" and "see you tomorrow" stay as said (BENCHMARKS.md, "Zee on the phone").
HEARD_FOR_ZEE = frozenset({"see", "sea", "c", "z"})
_ADDRESS = re.compile(r"^\s*(\w+)\s*,\s*(.+)$", re.DOTALL)


def zee_addressed(text: str, expected: Expected, name: str = "Zee") -> str:
    """`text` with a lost "Zee" at its start written back, when everything says it was one."""
    if name not in expected.names:
        return text
    match = _ADDRESS.match(text)
    if match is None or match.group(1).lower() not in HEARD_FOR_ZEE:
        return text
    rest = _words(match.group(2))
    if not (COMMAND_VERBS & set(rest)) or not any(_contains(rest, d) for d in expected.devices):
        return text
    return f"{name}, {match.group(2)}"
