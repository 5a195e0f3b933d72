"""When the person has finished speaking: sooner when their words sound finished, later
when they do not.

A fixed wait after the VAD's stop is a bad bargain both ways. "Turn on the bedroom
light." is over the moment it is said, yet Ava sat out the whole wait (0.3 s on top of
the VAD's 0.2 s) before answering; "turn on the ... bedroom light" was cut at "the" by
the same wait if the person searched for the word a little longer. Whisper's transcript
of what was said so far is in before the wait ends (speculative transcription starts at
the pause), so its words decide how long to wait: a short wait (`finished_s`) when the
last word could end a request, a long one (`unfinished_s`) when it cannot — an article,
a preposition, a conjunction, a filler ("the", "to", "and", "um"; "yang", "dan", "ke"),
or a trailing comma, dash or ellipsis from Whisper.

The short wait is none by default: the turn ends on finished words at the VAD's stop or at
Whisper's transcript, whichever comes later. A wait there guarded no one. The VAD only says
someone speaks again after `vad_start_s` (0.1 s) of their voice, and a pause must last the
VAD's stop (about 0.22 s of quiet) to end anything, so a person who goes on after
finished-sounding words is heard no sooner than about 0.3 s into the pause, when a 0.1 s
wait from the stop was running out anyway: the turns it ended were the same (bench.turn_end),
and it held every finished request back by whatever of it Whisper had not used already
(BENCHMARKS.md, "The turn's end, sooner").

Whisper's doubt counts as well as its words. Whisper tiny.en finishes a phrase that trails
off with a word it makes up ("set a timer for" heard as "Set a timer for it.", "remind me to"
as "Remind me to speak.", Indonesian "matikan lampu dan" as "Matika ampunan"), which sounds
finished. Its decoder gave such a made-up last word a probability of 0.12-0.66, and the
last word of a request said to its end 0.72 or more: words whose last word it was less sure
of than `UNSURE_LAST_WORD_P` (0.6) wait the long wait however they sound (`Heard`, from
voice.engines.whisper; a recogniser that does not say is judged by its words alone). On
`bench.turn_end`'s trailing utterances (the request spoken once, a pause put in) it took
false cut-offs from 33 % and 31 % to 5 % and 0 % in two runs, and every finished request
still ended one turn (BENCHMARKS.md, "Trailing utterances a person would make"). A
made-up word the decoder is sure of still cuts: "turn on the" heard as "turn over".

Both waits count from the VAD's stop and both need a transcript of the speech since the
last start: speaking again cancels the wait, and the turn then ends on the whole
utterance. No transcript at all (silence Whisper would not write down) ends nothing;
Pipecat's user-turn stop timeout still bounds that. The words are a heuristic, not a
model: Pipecat's Smart-Turn model (in its wheel) judged espeak-ng's "turn on the" as
finished (0.98) and cost 45-65 ms of a core per stop here, where the word lists cost
nothing and are right on the requests people make of Ava (BENCHMARKS.md).

Both waits are kept on the audio's clock as well as the wall's: the quiet counted is at
most the audio that has reached the turn since the stop (plus one frame). A server short
of CPU falls behind the audio it is sent (the frames queue while Whisper reads the words
before the pause), and on the wall's clock alone the wait ran out while the person's next
words were still queued: at load 14 to 20 a request paused for 0.55 s was split in two
every time (tests/e2e/test_speaker.py). When the server keeps up the two clocks agree, so
nothing waits longer; when audio stops coming at all (a client that sends nothing while
quiet), the wall's clock alone ends the wait `AUDIO_STALL_S` later.

The wait is also when Ava's answer can begin: when the words sound finished and the turn
is still waiting, they are handed to a `Foresight` (`heard`), which begins the turn's first
model call on them (chat.speculation); speaking again (`resumed`) withdraws them. A
recogniser that guesses at the words during the pause, before the VAD's stop, tells its
guess here too (`guesses`), so the words handed on are the whole turn's: what was heard
before an earlier stop, and the guess at what came after it.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Protocol

from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_stop.base_user_turn_stop_strategy import BaseUserTurnStopStrategy

# Words a request does not end on: "turn on the", "remind me to", "play some jazz and".
# (Words in one string read better than one per line, which a list literal would become.)
_UNFINISHED_EN = frozenset(
    "a an the and or but so to of for with in on at from by about into onto than as if because "  # noqa: SIM905
    "my your his her our their its some any every is are was were am be been being please "
    "um uh er erm hmm like".split()
)
# The same in Indonesian: "nyalakan lampu di", "tolong", "dan", "yang".
_UNFINISHED_ID = frozenset(
    "dan atau tapi tetapi yang di ke dari untuk buat dengan sama pada karena kalau jika "  # noqa: SIM905
    "supaya agar tolong mau akan lagi eh em hmm anu terus".split()
)
UNFINISHED_WORDS = {"en": _UNFINISHED_EN, "id": _UNFINISHED_ID}
# A wait this close to its end is over: a timer may wake a hair early.
_EARLY_S = 0.001
# Whisper writes these where the speech trails off.
_TRAILING = re.compile("(,|-|\u2014|\u2013|\\.\\.\\.|\u2026)\\s*$")  # , - em/en dash ... or an ellipsis
_WORD = re.compile(r"\w+(?:'\w+)?")
# Words heard with less of the wait left than this are not foreseen: the turn ends before
# a guess could be made, and a guess registered after its turn began is only billed.
FORESEE_LEFT_MIN_S = 0.03
# The audio's clock may trail the wall's by one frame (20 ms) when the server keeps up.
_AUDIO_SLACK_S = 0.02
# Audio that stops coming (not quiet: no frames at all) no longer holds a wait past this.
AUDIO_STALL_S = 1.0
# Words whose last word the recogniser gave a probability below this wait the long wait,
# however finished they sound (0: never). The lowest a finished request's last word had was
# 0.72 (the neural "OK, turn off the Living Room light."), and at 0.75 one finished request
# waited the long wait; invented last words ("Set a timer for it.", "Matika ampunan") had
# 0.12-0.66 (BENCHMARKS.md, "Trailing utterances a person would make").
UNSURE_LAST_WORD_P = 0.6


class Heard(str):
    """A recogniser's words, with the probability its decoder gave their last word (None
    when it does not say): a str everywhere else."""

    last_word_p: float | None

    def __new__(cls, text: str, last_word_p: float | None = None) -> Heard:
        heard = super().__new__(cls, text)
        heard.last_word_p = last_word_p
        return heard


class Foresight(Protocol):
    """Told the words of a turn that is about to end, and when the person goes on instead."""

    def heard(self, text: str) -> None: ...

    def resumed(self) -> None: ...


def sounds_finished(text: str, language: str = "en") -> bool:
    """Whether `text` could be a whole request: it does not trail off, and its last word
    is not one a request never ends on (in `language`; other languages use English's)."""
    stripped = text.strip()
    if not stripped or _TRAILING.search(stripped):
        return False
    words = _WORD.findall(stripped.lower())
    if not words:
        return True  # symbols only: nothing says it goes on
    return words[-1] not in UNFINISHED_WORDS.get(language, _UNFINISHED_EN)


class FinishedWordsStop(BaseUserTurnStopStrategy):  # type: ignore[no-untyped-call]  # untyped in Pipecat 1.14
    """Ends the person's turn `finished_s` after the VAD's stop when the transcript sounds
    finished, `unfinished_s` after it when it does not (see the module docstring)."""

    def __init__(
        self,
        *,
        finished_s: float,
        unfinished_s: float,
        language: str = "en",
        clock: Callable[[], float] = time.monotonic,
        foresight: Foresight | None = None,
        unsure_p: float = UNSURE_LAST_WORD_P,
    ) -> None:
        super().__init__()
        assert 0 <= finished_s <= unfinished_s, "a finished request never waits longer than an unfinished one"
        self.finished_s = finished_s
        self.unfinished_s = unfinished_s
        self._language = language
        self._clock = clock
        self.unsure_p = unsure_p
        self._text = ""
        self._unsure = False  # the recogniser was unsure of the last word heard
        self._speaking = False
        self._stopped_at: float | None = None
        self._heard = False  # a transcript came since the person last started speaking
        self._timer: asyncio.Task[None] | None = None
        self._foresight = foresight
        self._foreseen = False  # words were handed to the foresight since the last start
        # Seconds of the person's audio that reached the turn: the audio's clock, and its
        # reading at the VAD's stop (None until audio has been seen at all).
        self._audio_s = 0.0
        self._audio_seen = False
        self._stopped_audio_s = 0.0
        self._audio_due_s: float | None = None  # the audio clock's reading that ends a wait behind it
        # How this call's turns ended, by how the words sounded (tests and benches read it).
        self.ends = {"finished": 0, "unfinished": 0}

    async def handle_user_turn_started(self) -> None:
        # The VAD's state belongs to the person, not the turn: a turn may start mid-speech.
        await self._reset()

    async def handle_user_turn_stopped(self) -> None:
        await self._reset()
        self._speaking = False
        self._foreseen = False  # the turn takes the words from here

    async def cleanup(self) -> None:
        await super().cleanup()  # type: ignore[no-untyped-call]  # untyped in Pipecat 1.14
        await self._cancel_timer()

    async def process_frame(self, frame: Frame) -> ProcessFrameResult:
        if isinstance(frame, InputAudioRawFrame):
            self._audio_seen = True
            if frame.sample_rate and frame.num_channels:
                self._audio_s += len(frame.audio) / (2 * frame.sample_rate * frame.num_channels)
            if self._audio_due_s is not None and self._audio_s >= self._audio_due_s:
                self._audio_due_s = None
                await self._decide()  # the audio behind the wait has caught up
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self._speaking = True
            self._stopped_at = None
            self._heard = False
            self._audio_due_s = None
            await self._cancel_timer()
            self.went_on()
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self._speaking = False
            self._stopped_at = self._clock()
            self._stopped_audio_s = self._audio_s
            await self._wait(self.finished_s)
        elif isinstance(frame, TranscriptionFrame) and frame.text.strip():
            self._text = f"{self._text} {frame.text.strip()}".strip()
            self._heard = True
            self._unsure = self._doubts(frame.text)
            if self._stopped_at is None and not self._speaking:
                self._stopped_at = self._clock()  # words without a VAD stop: count from them
                self._stopped_audio_s = self._audio_s
            await self._decide()
        return ProcessFrameResult.CONTINUE

    @property
    def text(self) -> str:
        """What the person has said in this turn so far."""
        return self._text

    def guesses(self) -> Foresight:
        """Where a recogniser tells its guess at the words since the last stop."""
        return _Guesses(self)

    def guessed(self, words: str) -> None:
        """A guess at the words said since the last stop: the turn's words so far with it
        go to the foresight when they sound finished and the recogniser was sure of their
        last word (a guess it was unsure of waits the long wait: begun on it, the first
        call would mostly be dropped, and billed, when the person goes on)."""
        whole = f"{self._text} {words.strip()}".strip()
        if self._foresight is not None and sounds_finished(whole, self._language) and not self._doubts(words):
            self._foreseen = True
            self._foresight.heard(whole)

    def _doubts(self, words: str) -> bool:
        """Whether the recogniser gave the last word of `words` less than `unsure_p`."""
        last_word_p = getattr(words, "last_word_p", None)
        return last_word_p is not None and last_word_p < self.unsure_p

    def went_on(self) -> None:
        """The person went on after the pause a guess was made at."""
        if self._foreseen and self._foresight is not None:
            self._foreseen = False
            self._foresight.resumed()

    async def _decide(self) -> None:
        """End the turn if its wait is over, else wait for the rest of it."""
        if self._speaking or self._stopped_at is None or not self._heard:
            return
        finished = sounds_finished(self._text, self._language) and not self._unsure
        wait_s = self.finished_s if finished else self.unfinished_s
        quiet_s = self._clock() - self._stopped_at
        if self._audio_seen and quiet_s < wait_s + AUDIO_STALL_S - _EARLY_S:
            heard_s = self._audio_s - self._stopped_audio_s + _AUDIO_SLACK_S
            if heard_s < min(quiet_s, wait_s) - _EARLY_S:
                # Behind the wall's clock: wait for the audio (or for it to stall).
                self._audio_due_s = self._stopped_audio_s + wait_s - _AUDIO_SLACK_S
                await self._wait(wait_s + AUDIO_STALL_S - quiet_s)
                return
            quiet_s = min(quiet_s, heard_s)
        left_s = wait_s - quiet_s
        if left_s > _EARLY_S:
            if finished and left_s >= FORESEE_LEFT_MIN_S and self._foresight is not None:
                self._foreseen = True
                self._foresight.heard(self._text)
            await self._wait(left_s)
            return
        await self._cancel_timer()
        self.ends["finished" if finished else "unfinished"] += 1
        await self.trigger_user_turn_stopped()

    async def _wait(self, seconds: float) -> None:
        await self._cancel_timer()
        self._timer = self.task_manager.create_task(self._after(seconds), f"{self}::wait")

    async def _after(self, seconds: float) -> None:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            return
        self._timer = None
        await self._decide()

    async def _cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None and timer is not asyncio.current_task():
            await self.task_manager.cancel_task(timer)

    async def _reset(self) -> None:
        self._text = ""
        self._unsure = False
        self._stopped_at = None
        self._heard = False
        self._audio_due_s = None
        await self._cancel_timer()


class _Guesses:
    """A recogniser's guesses, told to the turn they belong to (`FinishedWordsStop.guesses`)."""

    def __init__(self, stop: FinishedWordsStop) -> None:
        self._stop = stop

    def heard(self, text: str) -> None:
        self._stop.guessed(text)

    def resumed(self) -> None:
        self._stop.went_on()
