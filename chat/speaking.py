"""Speaking a run's answer as it arrives: finished sentences out of streamed text.

On a call, the turn hands each speaking run a `Speaking` (the runtime's `Speech`): the
model's text comes in pieces, and every sentence is passed to the voice the moment it is
finished, with its emotion tag, so the person hears the first one while the rest is still
being written (docs/agents.md#streaming).

A sentence is finished at its emotion tag ("Done! #relieved#"), at its closing punctuation
once the next thing in the stream is neither more punctuation nor a tag, or when the
answer ends. Said sentences never come back in the final reply.

Text written beside a tool call is said before the tool has run, so it must never claim
the result: until a tool of the run has run, a sentence that sounds like a result ("It's
on now", "Done") is held, with every sentence after it (their order stays), until the
answer ends; said then if the answer called no tool. When it did, the held sentences wait
for the tools: said as the run's result once every tool reported success (`tools_ran`),
so no further model call is made just to write them again, dropped otherwise
(docs/agents.md#streaming). A specialist said aloud is asked to write its done sentence
beside its command, in words no list of result words can be sure to catch ("Playing some
jazz for you"), so its Speaking (`whole`) holds every sentence until the answer ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agents import Segment, parse_spoken

# A sentence ends at its emotion tag (which always follows it, with or without punctuation),
# or at closing punctuation (with quotes) once the next sentence, not a tag, has begun.
_FINISHED = re.compile(r"(?:\s*#\s*[A-Za-z_]+\s*#)+|[.!?…]+[\"'\u201d\u2019)]*\s+(?=[^\s#])")
# Words that report a result rather than say what will be done (English and Indonesian).
_RESULT = re.compile(
    r"\b(done|all set|finished|it's (?:on|off)|is (?:now )?(?:on|off)|are (?:now )?(?:on|off)|now (?:on|off)|"
    r"turned|switched|i've|i have|has been|have been|playing now|sent|added|set it|"
    r"sudah|udah|beres|selesai|berhasil|dinyalakan|dimatikan|nyala|mati)\b",
    re.IGNORECASE,
)


def claims_result(sentence: str) -> bool:
    """Whether a sentence reports an outcome (which only a tool's result may prove)."""
    return _RESULT.search(sentence) is not None


class Speaking:
    """Turns one run's streamed text into said sentences (`say`), one answer at a time."""

    def __init__(self, say: Callable[[Segment], None], *, whole: bool = False) -> None:
        self._say = say
        self._whole = whole  # nothing is said before its answer has ended
        self._buffer = ""
        self._held: list[Segment] = []
        # Claims written beside the tool calls of the answer that just ended, waiting for them.
        self._claims: list[Segment] = []
        self._tools_ran = False
        self.said: list[Segment] = []

    def text(self, piece: str) -> None:
        self._buffer += piece
        while (match := _FINISHED.search(self._buffer)) is not None:
            sentence, self._buffer = self._buffer[: match.end()], self._buffer[match.end() :]
            self._out(sentence)

    def answer_ended(self, *, calls: bool) -> None:
        rest, self._buffer = self._buffer, ""
        if rest.strip():
            self._out(rest)
        held, self._held = self._held, []
        if calls:
            self._tools_ran = True  # its tools run next: later answers may report them
            self._claims = held
        else:  # the answer was final: what it reported stands
            for segment in held:
                self._speak(segment)

    def tools_ran(self, *, succeeded: bool) -> bool:
        """The tools of the answer that just ended have run: when every one succeeded, the
        result it claimed beside them is said (True: the run's answer is complete); when
        one did not, or nothing was claimed, the claim is dropped and the model goes on."""
        claims, self._claims = self._claims, []
        if not succeeded or not claims:
            return False
        for segment in claims:
            self._speak(segment)
        return True

    def _out(self, sentence: str) -> None:
        for segment in parse_spoken(sentence).segments:
            if self._held or self._whole or (not self._tools_ran and claims_result(segment.text)):
                self._held.append(segment)
            else:
                self._speak(segment)

    def _speak(self, segment: Segment) -> None:
        self.said.append(segment)
        self._say(segment)
