"""How soon a turn can end without cutting people off: the VAD's stop against false
cut-offs, on finished and trailing utterances, English and Indonesian, both offline voices.

Each utterance goes through the call's own recogniser, VAD and turn end (`call_vad`,
`turn_stop`, Whisper, Pipecat's user aggregator) at a microphone's pace, once per timing
being compared, the timings alternating utterance by utterance so the machine's load hits
them alike. A finished utterance ("turn on the bedroom light") should end one turn soon
after its end; a trailing one ("remind me to", a pause, "stretch in two minutes") should end
one turn holding both halves: a turn that ends in the pause is a false cut-off.

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


def trimmed(pcm: bytes) -> bytes:
    """Speech without its synthesiser's leading and trailing silence."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float64)
    step = RATE // 100
    loud = [i for i in range(0, len(samples), step) if np.sqrt(np.mean(samples[i : i + step] ** 2)) > QUIET_RMS]
    if not loud:
        return pcm
    return pcm[loud[0] * 2 : (loud[-1] + step) * 2]


async def speech(text: str, language: str, voice: str) -> bytes:
    if voice == "neural":
        pcm, rate = await synthesize_neural(text)
    else:
        pcm, rate = await synthesize(text, voice="id" if language == "id" else "en-us")
    resampler = create_stream_resampler()
    return trimmed(await resampler.resample(pcm, rate, RATE) + await resampler.flush())


@dataclass
class Clip:
    name: str
    language: str
    voice: str
    trailing: bool
    gap_s: float
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


async def one_turn(clip: Clip, timing: TurnTiming, english_window_s: int = WIDEBAND_WINDOW_MIN_S) -> Outcome:
    recogniser: Recogniser = BASE_ID if clip.language == "id" else TINY_EN
    # The window each language is heard through (voice.engines.offline: English's is a setting).
    window = english_window_s if recogniser is TINY_EN else SHORT_WINDOW_MIN_S
    stt = _TimedWhisper(recogniser=recogniser, window_min_s=window)
    foresight = _Heard()
    stop = turn_stop(timing, clip.language, foresight)
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


async def clips(voices: list[str], limit: int | None = None, gaps: tuple[float, ...] = GAPS_S) -> list[Clip]:
    made: list[Clip] = []
    lead, tail = bytes(int(0.5 * RATE) * 2), bytes(int(1.5 * RATE) * 2)
    for voice in voices:
        for language, text, wanted in FINISHED[:limit]:
            if voice == "neural" and language != "en":
                continue  # the neural voice speaks Indonesian with espeak-ng (voice.engines.hibari)
            pcm = await speech(text, language, voice)
            made.append(Clip(text, language, voice, False, 0.0, lead + pcm + tail, len(lead + pcm), (wanted,)))
        for language, head, rest, first, last in TRAILING[:limit]:
            if voice == "neural" and language != "en":
                continue
            one, two = await speech(head, language, voice), await speech(rest, language, voice)
            for gap_s in gaps:
                pause = bytes(int(gap_s * RATE) * 2)
                body = lead + one + pause + two
                made.append(
                    Clip(f"{head} … {rest}", language, voice, True, gap_s, body + tail, len(body), (first, last))
                )
    return made


def q(values: list[float]) -> str:
    if not values:
        return "-"
    values = sorted(values)
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return f"{statistics.median(values) * 1000:.0f} / {p95 * 1000:.0f}"


def window_of(spec: str) -> int:
    """The window English is heard through: a timing's fourth field ("0.2:0.06:0:15"), else
    the product's (VOICE_WHISPER_WINDOW_MIN_S's default)."""
    parts = spec.split(":")
    return int(parts[3]) if len(parts) > 3 else WIDEBAND_WINDOW_MIN_S


def timing_of(spec: str) -> TurnTiming:
    """ "0.1" (the VAD's stop, seconds), "0.1:0.03" (and the pause that starts a guess) or
    "0.1:0.03:0.05" (and the wait after the stop for finished words); a fourth field is the
    English window (`window_of`); the rest the product's."""
    parts = [float(p) for p in spec.split(":")]
    base = TurnTiming()
    return replace(
        base,
        vad_stop_s=parts[0],
        pause_s=parts[1] if len(parts) > 1 else base.pause_s,
        finished_timeout_s=parts[2] if len(parts) > 2 else base.finished_timeout_s,
    )


async def run(
    rounds: int, specs: list[str], voices: list[str], limit: int | None = None, gaps: tuple[float, ...] = GAPS_S
) -> tuple[str, bool]:
    preload_whisper()
    preload_whisper(BASE_ID)
    if "neural" in voices:
        preload_hibari()
    timings = {spec: timing_of(spec) for spec in specs}
    stops = specs
    made = await clips(voices, limit, gaps)
    await one_turn(made[0], timings[stops[0]], window_of(stops[0]))  # warm-up, not counted
    results: dict[str, list[tuple[Clip, Outcome]]] = {stop: [] for stop in stops}
    index = 0
    for _ in range(rounds):
        for clip in made:
            order = stops if index % 2 == 0 else list(reversed(stops))  # drift hits each alike
            index += 1
            for stop in order:
                results[stop].append((clip, await one_turn(clip, timings[stop], window_of(stop))))
    ok = True
    lines = [
        "| VAD stop | pause | finished wait | English window | finished: turns ended whole | "
        "end of speech → VAD stop p50 / p95 | → transcript | "
        "→ turn end | → guess begun | → guess in | decoded again after the stop | turn end - transcript | "
        "words foreseen (of finished) | → foreseen | lead (turn end - foreseen) p50 / p95 | "
        "trailing: false cut-offs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    detail = [
        "",
        "| timing (stop:pause:finished wait[:English window], s) | voice | language | finished: turn end p50 "
        f"| trailing cut-offs at {' / '.join(str(g) for g in gaps)} s |",
        "|---|---|---|---|---|",
    ]
    for stop in stops:
        rows = results[stop]
        finished = [(c, o) for c, o in rows if not c.trailing]
        trailing = [(c, o) for c, o in rows if c.trailing]
        whole = [o for c, o in finished if not o.cut_off(c)]
        ok = ok and all(o.turns for _, o in rows)
        foreseen = [o for o in whole if o.foreseen_s is not None]
        leads = [o.turn_end_s - o.foreseen_s for o in foreseen if o.turn_end_s is not None and o.foreseen_s is not None]
        cut = [c for c, o in trailing if o.cut_off(c)]
        # What the turn's end waited after its words were in: the most a foresight told
        # at the transcript could lead by.
        after = [
            o.turn_end_s - o.transcript_s for o in whole if o.turn_end_s is not None and o.transcript_s is not None
        ]
        lines.append(
            f"| {timings[stop].vad_stop_s * 1000:.0f} ms | {timings[stop].pause_s * 1000:.0f} ms | "
            f"{timings[stop].finished_timeout_s * 1000:.0f} ms | {window_of(stop)} s | {len(whole)}/{len(finished)} | "
            f"{q([o.vad_stop_s for o in whole if o.vad_stop_s is not None])} | "
            f"{q([o.transcript_s for o in whole if o.transcript_s is not None])} | "
            f"{q([o.turn_end_s for o in whole if o.turn_end_s is not None])} | "
            f"{q([o.guess_begun_s for o in whole if o.guess_begun_s is not None])} | "
            f"{q([o.guess_in_s for o in whole if o.guess_in_s is not None])} | "
            f"{sum(1 for o in whole if o.decoded_after_stop)}/{len(whole)} | "
            f"{q(after)} | {len(foreseen)}/{len(whole)} | "
            f"{q([o.foreseen_s for o in foreseen if o.foreseen_s is not None])} | {q(leads)} | "
            f"{len(cut)}/{len(trailing)} ({100 * len(cut) / max(1, len(trailing)):.1f} %) |"
        )
        for voice in voices:
            for language in ("en", "id"):
                mine = [(c, o) for c, o in rows if c.voice == voice and c.language == language]
                if not mine:
                    continue
                ends = [o.turn_end_s for c, o in mine if not c.trailing and o.turn_end_s is not None]
                by_gap = [
                    f"{sum(o.cut_off(c) for c, o in mine if c.trailing and c.gap_s == g)}/"
                    f"{sum(1 for c, _ in mine if c.trailing and c.gap_s == g)}"
                    for g in gaps
                ]
                p50 = q(ends).split(" / ")[0]
                detail.append(f"| {stop} | {voice} | {language} | {p50} ms | {' / '.join(by_gap)} |")
    cutoffs = ["", "Cut off (VAD stop: what the first turn held):"]
    for stop in stops:
        for c, o in results[stop]:
            if c.trailing and o.cut_off(c):
                cutoffs.append(f"- {stop}, {c.voice}, gap {c.gap_s} s, {c.name!r}: {o.turns}")
    return "\n".join(lines + detail + cutoffs) + "\n", ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=1, help="passes over every utterance")
    parser.add_argument(
        "--timings",
        default="0.2,0.1",
        help="timings to compare, comma-separated: VAD stop[:pause[:finished wait[:English window]]] in seconds "
        "(see timing_of)",
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
    args = parser.parse_args()
    gaps = tuple(float(g) for g in args.gaps.split(","))
    text, ok = asyncio.run(run(args.rounds, args.timings.split(","), args.voices.split(","), args.limit, gaps))
    sys.stdout.write(text)
    write("turn_end", text)
    if not ok:
        print("an utterance ended no turn at all", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
