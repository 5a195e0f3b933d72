"""How soon a turn can end without cutting people off: the VAD's stop against false
cut-offs, on finished and trailing utterances, English and Indonesian, both offline voices.

Each utterance goes through the call's own recogniser, VAD and turn end (`call_vad`,
`turn_stop`, Whisper, Pipecat's user aggregator) at a microphone's pace, once per timing
being compared, the timings alternating utterance by utterance so the machine's load hits
them alike. A finished utterance ("turn on the bedroom light") should end one turn soon
after its end; a trailing one ("remind me to", a pause, "stretch in two minutes") should end
one turn holding both halves: a turn that ends in the pause is a false cut-off.

Two sets of trailing utterances (`--trailing-sets`). `cut`, the default: the whole request
synthesised once ("turn on the bedroom light") and the pause put in at the word boundary
after the words that trail off (`spoken_whole` says how it is found), so the words before
the pause keep the mid-sentence pitch and pace of a person searching for a word.
`separate`: the words before the pause synthesised as an utterance of their own, which a
synthesiser ends as a finished sentence ends (falling pitch, the last word drawn out): a
person who has finished, not one who trails off (BENCHMARKS.md, "Trailing utterances a
person would make").

Measured from the end of speech (the moment the microphone sent the last frame of the
utterance's voice, its synthesiser's trailing silence trimmed): the VAD's stop, the first
transcript, the end of the turn (Ava starts), and the moment the words the turn ends on were
first told to the foresight (where the speculative first call begins, voice.turn_end): the
turn's end minus that moment is the lead the speculative first call gets in the real
pipeline. Printed as Markdown; exit 0 when every utterance ended a turn (a cut-off is a
figure, not a failure).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from pipecat.audio.utils import create_stream_resampler
from pipecat.audio.vad.vad_analyzer import VADState
from pipecat.frames.frames import Frame, InputAudioRawFrame, LLMContextFrame, TranscriptionFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair, LLMUserAggregatorParams
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.tests.utils import SleepFrame, run_test
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from bench.espeak_words import spoken_words
from bench.report import write
from voice.agent import last_user_text
from voice.engines.espeak import synthesize
from voice.engines.hibari import preload_hibari, synthesize_neural
from voice.engines.whisper import (
    BASE_ID,
    SHORT_WINDOW_MIN_S,
    TINY_EN,
    WIDEBAND_WINDOW_MIN_S,
    Recogniser,
    WhisperSTTService,
    preload_whisper,
)
from voice.pipeline import PauseAwareVAD, TurnTiming, call_vad, turn_stop

RATE = 16_000
FRAME = int(RATE * 0.02) * 2
# (language, finished utterance, a word its turn must hold)
FINISHED = (
    ("en", "turn on the bedroom light", "bedroom"),
    ("en", "what can you do", "do"),
    ("en", "okay, turn off the living room light", "living"),
    ("en", "remind me to stretch in two minutes", "minutes"),
    ("en", "thank you", "thank"),
    ("id", "tolong matikan semua lampu", "lampu"),
    ("id", "nyalakan lampu kamar tidur", "kamar"),
    ("id", "terima kasih", "kasih"),
)
# (language, the words before the pause, the words after it, a word the turn must hold from each)
TRAILING = (
    ("en", "remind me to", "stretch in two minutes", "remind", "minutes"),
    ("en", "turn on the", "bedroom light", "turn", "bedroom"),
    ("en", "play some jazz and", "turn off the lights", "jazz", "lights"),
    ("en", "set a timer for", "ten minutes", "timer", "minutes"),
    ("en", "what is the weather in", "Jakarta", "weather", "jakarta"),
    ("id", "nyalakan lampu di", "kamar tidur", "nyalakan", "kamar"),
    ("id", "ingatkan aku untuk", "minum air", "ingatkan", "minum"),
    ("id", "matikan lampu dan", "kipas angin", "matikan", "kipas"),
)
# Pauses a person searching for a word leaves after the words that trail off.
GAPS_S = (0.3, 0.5, 0.7)
QUIET_RMS = 150.0  # below it a 10 ms stretch is the synthesiser's silence
TRAILING_SETS = ("cut", "separate")
# The neural voice's boundary is an estimate (`spoken_whole`): the pause goes in at the
# quietest 10 ms within this much of it (the gap between the words, or the closure of a stop
# consonant), not through a vowel.
SNAP_S = 0.08
FADE_S = 0.005  # each side of the cut fades over this


def trimmed(pcm: bytes) -> bytes:
    """Speech without its synthesiser's leading and trailing silence."""
    begin, end = quiet_bounds(pcm)
    return pcm[begin:end]


async def speech(text: str, language: str, voice: str) -> bytes:
    if voice == "neural":
        pcm, rate = await synthesize_neural(text)
    else:
        pcm, rate = await synthesize(text, voice="id" if language == "id" else "en-us")
    resampler = create_stream_resampler()
    return trimmed(await resampler.resample(pcm, rate, RATE) + await resampler.flush())


def quiet_bounds(pcm: bytes) -> tuple[int, int]:
    """The byte offsets where the speech in `pcm` begins and ends (the synthesiser's silence
    around it left out)."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float64)
    step = RATE // 100
    loud = [i for i in range(0, len(samples), step) if np.sqrt(np.mean(samples[i : i + step] ** 2)) > QUIET_RMS]
    if not loud:
        return 0, len(pcm)
    return loud[0] * 2, (loud[-1] + step) * 2


def quietest_near(pcm: bytes, at: int) -> int:
    """The sample at the middle of the quietest 10 ms of `pcm` within `SNAP_S` of sample `at`."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float64)
    step, reach = RATE // 100, int(SNAP_S * RATE)
    starts = range(max(0, at - reach), min(len(samples) - step, at + reach), step // 2)
    quietest = min(starts, key=lambda i: float(np.sqrt(np.mean(samples[i : i + step] ** 2))), default=at - step // 2)
    return quietest + step // 2


def faded_at(pcm: bytes, at: int) -> tuple[bytes, bytes]:
    """`pcm` split at sample `at`, each side faded over `FADE_S` towards the cut, so the
    pause put there starts and ends without a click (a click is a sound the VAD may hear)."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float64)
    fade = min(int(FADE_S * RATE), at, len(samples) - at)
    before, after = samples[:at].copy(), samples[at:].copy()
    if fade > 0:
        before[-fade:] *= np.linspace(1, 0, fade)
        after[:fade] *= np.linspace(0, 1, fade)
    return before.astype(np.int16).tobytes(), after.astype(np.int16).tobytes()


async def spoken_whole(head: str, rest: str, language: str, voice: str) -> tuple[bytes, int]:
    """The request `head rest` spoken once at 16 kHz, its silence trimmed, and the sample
    where `rest` begins in it. espeak-ng says where (its own word event for `rest`'s first
    word, `bench.espeak_words`). The neural voice does not: there it is the length of the
    whole less the length of `rest` spoken on its own, moved to the quietest 10 ms within
    `SNAP_S`. `rest` ends the sentence in both, with the same closing pitch and lengthening,
    so it lasts about as long in both; only the words before it are spoken differently
    (BENCHMARKS.md, "Trailing utterances a person would make": each half, heard by Whisper
    on its own, held its own words)."""
    text = f"{head} {rest}"
    resampler = create_stream_resampler()
    if voice == "neural":
        whole, alone = await speech(text, language, voice), await speech(rest, language, voice)
        return whole, quietest_near(whole, (len(whole) - len(alone)) // 2)
    pcm, rate, starts = await asyncio.to_thread(spoken_words, text, "id" if language == "id" else "en-us")
    if len(head) + 1 not in starts:
        raise RuntimeError(f"espeak-ng spoke {rest.split()[0]!r} of {text!r} as part of another word: {starts}")
    audio = await resampler.resample(pcm, rate, RATE) + await resampler.flush()
    begin, end = quiet_bounds(audio)
    return audio[begin:end], round(starts[len(head) + 1] * RATE) - begin // 2


@dataclass
class Clip:
    name: str
    language: str
    voice: str
    trailing: bool
    gap_s: float
    trailing_set: str  # "cut" or "separate" (`clips`); "" for a finished utterance
    pcm: bytes  # leading silence, speech (and the pause and the rest), trailing silence
    end_byte: int  # where the last of the voice ends
    wanted: tuple[str, ...]


@dataclass
class Outcome:
    turns: list[str] = field(default_factory=list)
    vad_stop_s: float | None = None  # each from the end of speech
    transcript_s: float | None = None
    turn_end_s: float | None = None
    foreseen_s: float | None = None  # the turn's words first told to the foresight
    guess_begun_s: float | None = None  # the last guess begun before the turn ended (the pause)
    guess_in_s: float | None = None  # ... and when its words were in
    decoded_after_stop: int = 0  # whole utterances decoded after the VAD's stop (no guess stood)

    def cut_off(self, clip: Clip) -> bool:
        """The utterance did not end as one turn (what Whisper made of the words is the
        recogniser's business, not the turn end's: `wanted` is shown, not judged)."""
        return len(self.turns) != 1


class _Tap(FrameProcessor):
    """Notes when frames pass (monotonic seconds): the last frame of the voice, the first
    transcript, each turn's end and its words."""

    def __init__(self, last_voice: Frame | None = None) -> None:
        super().__init__()
        self._last_voice = last_voice
        self.eos: float | None = None
        self.transcript: float | None = None
        self.turns: list[tuple[float, str]] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if frame is self._last_voice:
            self.eos = time.monotonic()
        elif isinstance(frame, TranscriptionFrame) and self.transcript is None:
            self.transcript = time.monotonic()
        elif isinstance(frame, LLMContextFrame):
            self.turns.append((time.monotonic(), last_user_text(frame)))
        await self.push_frame(frame, direction)


def words_of(text: str) -> str:
    """Words as the turn compares them (chat.speculation): lower case, no punctuation."""
    return " ".join(re.findall(r"\w+(?:'\w+)?", text.lower()))


class _Heard:
    """A foresight that notes when each set of words was told (voice.turn_end.Foresight)."""

    def __init__(self) -> None:
        self.told: list[tuple[float, str]] = []

    def heard(self, text: str) -> None:
        self.told.append((time.monotonic(), text))

    def resumed(self) -> None:
        pass


class _TimedWhisper(WhisperSTTService):
    """The call's recogniser, noting when each guess began (the pause) and when it was in."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.guesses: list[tuple[float, list[float]]] = []
        self.decodes: list[float] = []  # when each decode began, guesses included

    async def _transcribe(self, audio: bytes) -> str:
        self.decodes.append(time.monotonic())
        return await super()._transcribe(audio)

    def speech_paused(self) -> None:
        before = self.speculations["started"]
        super().speech_paused()
        if self.speculations["started"] > before and self._last_guess is not None:
            done: list[float] = []
            self.guesses.append((time.monotonic(), done))
            self._last_guess.add_done_callback(lambda _task: done.append(time.monotonic()))


class _TimedVAD(PauseAwareVAD):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stops: list[float] = []

    async def analyze_audio(self, buffer: bytes) -> VADState:
        before = self._last_state
        state = await super().analyze_audio(buffer)
        if state == VADState.QUIET and before != VADState.QUIET:
            self.stops.append(time.monotonic())
        return state


async def one_turn(
    clip: Clip, timing: TurnTiming, english_window_s: int = WIDEBAND_WINDOW_MIN_S, unsure_p: float | None = None
) -> Outcome:
    recogniser: Recogniser = BASE_ID if clip.language == "id" else TINY_EN
    # The window each language is heard through (voice.engines.offline: English's is a setting).
    window = english_window_s if recogniser is TINY_EN else SHORT_WINDOW_MIN_S
    stt = _TimedWhisper(recogniser=recogniser, window_min_s=window)
    foresight = _Heard()
    stop = turn_stop(timing, clip.language, foresight)
    if unsure_p is not None:
        stop.unsure_p = unsure_p
    stt.set_foresight(stop.guesses())  # as build_call wires it
    base = call_vad(timing, stt)
    vad = _TimedVAD(listener=base.listener, pause_s=timing.pause_s, params=base.params)
    user_turns = LLMContextAggregatorPair(
        LLMContext(),
        user_params=LLMUserAggregatorParams(
            vad_analyzer=vad, user_turn_strategies=UserTurnStrategies(stop=[stop]), empty_user_turn=None
        ),
    )
    frames: list[Frame] = []
    last_voice: Frame | None = None
    for i in range(0, len(clip.pcm), FRAME):
        frame = InputAudioRawFrame(clip.pcm[i : i + FRAME], RATE, 1)
        if i < clip.end_byte <= i + FRAME:
            last_voice = frame
        frames += [frame, SleepFrame(sleep=0.02)]
    front, middle, back = _Tap(last_voice), _Tap(), _Tap()
    await run_test(
        Pipeline([front, stt, middle, user_turns.user(), back]),
        frames_to_send=[*frames, SleepFrame(sleep=0.5)],
        pipeline_params=PipelineParams(audio_in_sample_rate=RATE),
    )
    outcome = Outcome(turns=[text for _, text in back.turns])
    eos = front.eos
    if eos is None:
        return outcome
    after = [at for at in vad.stops if at >= eos]
    if after:
        outcome.vad_stop_s = after[0] - eos
        outcome.decoded_after_stop = sum(1 for at in stt.decodes if at >= after[0])
    if middle.transcript is not None:
        outcome.transcript_s = middle.transcript - eos
    if back.turns:
        outcome.turn_end_s = back.turns[0][0] - eos
        words = words_of(back.turns[0][1])
        told = [at for at, text in foresight.told if words_of(text) == words]
        if told:
            outcome.foreseen_s = told[0] - eos
        begun = [(at, done) for at, done in stt.guesses if at <= back.turns[0][0]]
        if begun:
            outcome.guess_begun_s = begun[-1][0] - eos
            if begun[-1][1]:
                outcome.guess_in_s = begun[-1][1][0] - eos
    return outcome


async def trailing_halves(head: str, rest: str, language: str, voice: str, how: str) -> tuple[bytes, bytes]:
    """The speech before the pause and after it: cut from the whole request spoken once, or
    each half spoken on its own (the module's docstring)."""
    if how == "separate":
        return await speech(head, language, voice), await speech(rest, language, voice)
    whole, at = await spoken_whole(head, rest, language, voice)
    return faded_at(whole, at)


async def clips(
    voices: list[str], limit: int | None = None, gaps: tuple[float, ...] = GAPS_S, sets: tuple[str, ...] = ("cut",)
) -> list[Clip]:
    made: list[Clip] = []
    lead, tail = bytes(int(0.5 * RATE) * 2), bytes(int(1.5 * RATE) * 2)
    for voice in voices:
        for language, text, wanted in FINISHED[:limit]:
            if voice == "neural" and language != "en":
                continue  # the neural voice speaks Indonesian with espeak-ng (voice.engines.hibari)
            pcm = await speech(text, language, voice)
            made.append(Clip(text, language, voice, False, 0.0, "", lead + pcm + tail, len(lead + pcm), (wanted,)))
        for how in sets:
            for language, head, rest, first, last in TRAILING[:limit]:
                if voice == "neural" and language != "en":
                    continue
                one, two = await trailing_halves(head, rest, language, voice, how)
                for gap_s in gaps:
                    pause = bytes(int(gap_s * RATE) * 2)
                    body = lead + one + pause + two
                    name = f"{head} … {rest}"
                    made.append(Clip(name, language, voice, True, gap_s, how, body + tail, len(body), (first, last)))
    return made


def q(values: list[float]) -> str:
    if not values:
        return "-"
    values = sorted(values)
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return f"{statistics.median(values) * 1000:.0f} / {p95 * 1000:.0f}"


def unsure_of(spec: str) -> float | None:
    """The rule after a timing's "@": "@sure=0.4" waits the long wait when Whisper gave the
    last word a probability below 0.4 (`FinishedWordsStop.unsure_p`; "@sure=0" never does);
    none, the product's."""
    _, _, rule = spec.partition("@")
    return float(rule.removeprefix("sure=")) if rule else None


def window_of(spec: str) -> int:
    """The window English is heard through: a timing's fourth field ("0.2:0.06:0:15"), else
    the product's (VOICE_WHISPER_WINDOW_MIN_S's default)."""
    parts = spec.partition("@")[0].split(":")
    return int(parts[3]) if len(parts) > 3 else WIDEBAND_WINDOW_MIN_S


def timing_of(spec: str) -> TurnTiming:
    """ "0.1" (the VAD's stop, seconds), "0.1:0.03" (and the pause that starts a guess) or
    "0.1:0.03:0.05" (and the wait after the stop for finished words); a fourth field is the
    English window (`window_of`); the rest the product's."""
    parts = [float(p) for p in spec.partition("@")[0].split(":")]
    base = TurnTiming()
    return replace(
        base,
        vad_stop_s=parts[0],
        pause_s=parts[1] if len(parts) > 1 else base.pause_s,
        finished_timeout_s=parts[2] if len(parts) > 2 else base.finished_timeout_s,
    )


async def run(
    rounds: int,
    specs: list[str],
    voices: list[str],
    limit: int | None = None,
    gaps: tuple[float, ...] = GAPS_S,
    sets: tuple[str, ...] = ("cut",),
) -> tuple[str, bool]:
    preload_whisper()
    preload_whisper(BASE_ID)
    if "neural" in voices:
        preload_hibari()
    timings = {spec: timing_of(spec) for spec in specs}
    stops = specs
    made = await clips(voices, limit, gaps, sets)
    await one_turn(made[0], timings[stops[0]], window_of(stops[0]), unsure_of(stops[0]))  # warm-up, not counted
    results: dict[str, list[tuple[Clip, Outcome]]] = {stop: [] for stop in stops}
    index = 0
    for _ in range(rounds):
        for clip in made:
            order = stops if index % 2 == 0 else list(reversed(stops))  # drift hits each alike
            index += 1
            for stop in order:
                outcome = await one_turn(clip, timings[stop], window_of(stop), unsure_of(stop))
                results[stop].append((clip, outcome))
    ok = True
    lines = [
        "| timing | VAD stop | pause | finished wait | English window | finished: turns ended whole | "
        "end of speech → VAD stop p50 / p95 | → transcript | "
        "→ turn end | → guess begun | → guess in | decoded again after the stop | turn end - transcript | "
        "words foreseen (of finished) | → foreseen | lead (turn end - foreseen) p50 / p95 | "
        "trailing: false cut-offs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    detail = [
        "",
        "| timing (stop:pause:finished wait[:English window], s) | voice | language | finished: turn end p50 "
        f"| trailing set | trailing cut-offs at {' / '.join(str(g) for g in gaps)} s |",
        "|---|---|---|---|---|---|",
    ]
    for stop in stops:
        rows = results[stop]
        finished = [(c, o) for c, o in rows if not c.trailing]
        trailing = [(c, o) for c, o in rows if c.trailing]
        whole = [o for c, o in finished if not o.cut_off(c)]
        ok = ok and all(o.turns for _, o in rows)
        foreseen = [o for o in whole if o.foreseen_s is not None]
        leads = [o.turn_end_s - o.foreseen_s for o in foreseen if o.turn_end_s is not None and o.foreseen_s is not None]
        by_set = []
        for how in sets:
            of_set = [(c, o) for c, o in trailing if c.trailing_set == how]
            cut = [c for c, o in of_set if o.cut_off(c)]
            by_set.append(f"{how} {len(cut)}/{len(of_set)} ({100 * len(cut) / max(1, len(of_set)):.1f} %)")
        # What the turn's end waited after its words were in: the most a foresight told
        # at the transcript could lead by.
        after = [
            o.turn_end_s - o.transcript_s for o in whole if o.turn_end_s is not None and o.transcript_s is not None
        ]
        lines.append(
            f"| {stop} | {timings[stop].vad_stop_s * 1000:.0f} ms | {timings[stop].pause_s * 1000:.0f} ms | "
            f"{timings[stop].finished_timeout_s * 1000:.0f} ms | {window_of(stop)} s | {len(whole)}/{len(finished)} | "
            f"{q([o.vad_stop_s for o in whole if o.vad_stop_s is not None])} | "
            f"{q([o.transcript_s for o in whole if o.transcript_s is not None])} | "
            f"{q([o.turn_end_s for o in whole if o.turn_end_s is not None])} | "
            f"{q([o.guess_begun_s for o in whole if o.guess_begun_s is not None])} | "
            f"{q([o.guess_in_s for o in whole if o.guess_in_s is not None])} | "
            f"{sum(1 for o in whole if o.decoded_after_stop)}/{len(whole)} | "
            f"{q(after)} | {len(foreseen)}/{len(whole)} | "
            f"{q([o.foreseen_s for o in foreseen if o.foreseen_s is not None])} | {q(leads)} | "
            f"{'; '.join(by_set)} |"
        )
        for voice in voices:
            for language in ("en", "id"):
                mine = [(c, o) for c, o in rows if c.voice == voice and c.language == language]
                if not mine:
                    continue
                ends = [o.turn_end_s for c, o in mine if not c.trailing and o.turn_end_s is not None]
                p50 = q(ends).split(" / ")[0]
                for how in sets:
                    by_gap = [
                        f"{sum(o.cut_off(c) for c, o in mine if c.trailing_set == how and c.gap_s == g)}/"
                        f"{sum(1 for c, _ in mine if c.trailing_set == how and c.gap_s == g)}"
                        for g in gaps
                    ]
                    detail.append(f"| {stop} | {voice} | {language} | {p50} ms | {how} | {' / '.join(by_gap)} |")
    cutoffs = ["", "Cut off (VAD stop: what the first turn held):"]
    for stop in stops:
        for c, o in results[stop]:
            if c.trailing and o.cut_off(c):
                cutoffs.append(f"- {stop}, {c.voice}, {c.trailing_set}, gap {c.gap_s} s, {c.name!r}: {o.turns}")
    return "\n".join(lines + detail + cutoffs) + "\n", ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=1, help="passes over every utterance")
    parser.add_argument(
        "--timings",
        default="0.2,0.1",
        help="timings to compare, comma-separated: VAD stop[:pause[:finished wait[:English window]]] in seconds "
        "(see timing_of), each optionally followed by a rule: @sure=P (see unsure_of)",
    )
    parser.add_argument("--voices", default="espeak,neural", help="espeak and/or neural")
    parser.add_argument(
        "--pause", type=float, default=None, help="the pause that starts a guess (default: the product's)"
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N finished and trailing utterances")
    parser.add_argument(
        "--gaps",
        default=",".join(str(g) for g in GAPS_S),
        help="the pauses (s) left in each trailing utterance, comma-separated",
    )
    parser.add_argument(
        "--trailing-sets",
        default="cut",
        help="how the trailing utterances are made, comma-separated: cut (the whole request spoken once, "
        "the pause put in after the words that trail off) and/or separate (each half spoken on its own)",
    )
    args = parser.parse_args()
    gaps = tuple(float(g) for g in args.gaps.split(","))
    sets = tuple(args.trailing_sets.split(","))
    if not set(sets) <= set(TRAILING_SETS):
        parser.error(f"--trailing-sets: {', '.join(TRAILING_SETS)}")
    specs, voices = args.timings.split(","), args.voices.split(",")
    text, ok = asyncio.run(run(args.rounds, specs, voices, args.limit, gaps, sets))
    sys.stdout.write(text)
    write("turn_end", text)
    if not ok:
        print("an utterance ended no turn at all", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
