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

from collections.abc import Sequence

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
