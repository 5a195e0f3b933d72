"""How long a person waits on the cloud path (issue 28): end of speech -> first reply
audio, and -> the sentence that confirms the result, with Gemini simulated at its published
latencies (bench.cloudsim) behind the product's real adapter, today's sequential pipeline
beside the streaming one in the same run, and the sum of the simulated waits as the floor.

What runs for real: the whole server as `avagenc serve` builds it (embedded PostgreSQL,
turns, thread, wallet, the sandboxes, the `GeminiModel` adapter over HTTP to the simulated
Gemini API, pointed at it by GEMINI_BASE_URL), and each turn as the call door runs it
(`Turns.post` on the `voice` channel with the callbacks `voice.calls.voice_turn` gives it).
The simulated Gemini decides what to say as the offline model would (Ava hands on, Zee
calls the tool), at the pace of `bench/cloudsim/latency.py`.

What is added, not run (measured at the turn level, from the transcript): hearing and
speech. A turn starts when the transcript would be handed over (end of speech + hearing)
and each sentence is heard when the voice would start it: its first audio comes the
speech engine's first-audio time after the sentence was ready, and never before the
sentence before it has been said (at SPEECH_CHARS_PER_S). Two sets of engines:
"offline" (the offline pipeline's hearing drawn per turn from its quiet 100-turn
measurement, and its first audio) and "all simulated": Google
Speech-to-Text's final result and streaming Text-to-Speech's first audio as the product's
own Google adapters (voice.engines.google) meet them, measured in the same run against
the gRPC fakes of bench/cloudsim/speech.py at their latency models: `--speech-samples`
utterances (espeak-ng saying the scenarios' requests, heard by the fake's Whisper) from
the last loud audio sent to the adapter's final transcript, and as many sentences from the
text handed to the adapter to its first audio frame; each turn takes one of each at
random. The Pipecat pipeline around them is not in the loop here, but for the call's
VAD (`voice.pipeline.call_vad`, after the recogniser as on a call), which tells the adapter
of the pause: when the adapter told its foresight the words (an interim covering the
speech, voice.engines.google) is measured per utterance too, and the lead it gives
(final - foreseen; 0 when nothing was foreseen, or the words told were not the final's)
is what the all-simulated speculating rows use, each turn taking one utterance's lead with
its final. bench.voice_latency measures the whole pipeline with the offline model.

Modes, alternating turn by turn on the same server and simulator:
- *today*: every model call waits for the whole answer, nothing is said until Ava's final
  reply, Ava relays the specialist's answer (four calls for a home request);
- *streaming*: calls stream, each finished sentence is said at once, Ava's acknowledgement
  comes with her handoff, a lone specialist's answer is said as it is (no relay call), and
  a specialist said aloud writes its done sentence beside its command, said once the
  command succeeds (no model call to write it);
- *speculating*: streaming, with Ava's first call begun on the speculative transcript
  (`Turns.foresee`, chat.speculation) before the turn ends, as the call door does when the
  words are in during the turn-end wait: `SPECULATIVE_TRANSCRIPT_AHEAD_S` (`--lead-ms`)
  before it on the offline rows, the measured Google lead on the all-simulated rows (each
  speculating turn is run once for each, on a person of its own); on every
  `--went-on-every`th such turn the person goes on speaking after a first guess at fewer
  words (that guess is dropped and billed), the rest adopt it;
- *no result ahead* (`--modes` to include it): streaming as it was before that last change (the simulated model
  writes nothing beside the command, so the specialist is asked once more to say it),
  the same-run measure of what the change bought.

The floor of a moment is hearing + speech's first audio + every simulated model wait of
the turn up to that moment: what the vendors alone cost, with nothing of ours.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo

from pydantic import SecretStr

from agents import ModelRequest, Segment, SpokenReply
from agents.offline.ava import ACKNOWLEDGEMENTS
from app.server import Services, running
from bench.cloudsim.gemini import Answer, Responder, Served, SimulatedGemini, offline_responder
from bench.cloudsim.latency import (
    GEMINI_2_5_FLASH,
    GOOGLE_STT_FINAL,
    GOOGLE_STT_INTERIM_AFTER_SPEECH,
    GOOGLE_TTS_STREAMING_FIRST_BYTE,
    OFFLINE_HEARING,
    OFFLINE_SPEECH_FIRST_AUDIO_S,
    SPECULATIVE_TRANSCRIPT_AHEAD_S,
    WENT_ON_AFTER_S,
)
from bench.cloudsim.speech import (
    QUIET_RMS,
    SimulatedSpeech,
    espeak_synthesise,
    resample_pcm16,
    rms_pcm16,
    throwaway_credentials,
)
from bench.report import RESULTS, write
from chat import Person
from chat.speculation import PARTS, words_of
from settings import Settings
from telemetry import metrics

# A voice reads about 15 characters a second (~150 words a minute): how long a sentence
# keeps the next one waiting.
SPEECH_CHARS_PER_S = 15.0
HEARING_RATE = 16_000
HEARING_WAIT_MAX_S = 30.0  # a bound on one utterance's wait for its transcript
ZONE = ZoneInfo("Asia/Jakarta")
ACKS = frozenset(ACKNOWLEDGEMENTS.values())

# (name, requests said in turn): a home request (Ava -> Zee -> tool), a question Ava
# answers herself, a request for two specialists.
SCENARIOS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("home request", ("turn on the bedroom light", "turn off the bedroom light")),
    ("question for Ava", ("what time is it?", "what can you do?")),
    (
        "two specialists",
        ("turn on the bedroom light and play some jazz", "turn off the bedroom light and stop the music"),
    ),
)
MODES = ("today", "no result ahead", "streaming", "speculating")
DEFAULT_MODES = ("today", "streaming", "speculating")
# What a specialist said aloud reads (agents/layers/channel_voice_specialist.txt).
SAID_ALOUD = "[SAID ON A CALL]"


@dataclass
class Heard:
    ready_s: float  # after the turn began
    segment: Segment


@dataclass
class TurnRecord:
    scenario: str
    mode: str
    started: float
    heard: list[Heard] = field(default_factory=list)
    waits: list[tuple[float, float]] = field(default_factory=list)
    model_calls: int = 0
    answered: bool = True
    speculated: int = 0  # first calls begun before the turn ended
    adopted: int = 0  # of those, taken by the turn as its first call
    differed: dict[str, int] = field(default_factory=dict)  # of those, not adopted: what differed
    cost_micros: int = 0  # what the turn took from the wallet
    engines: str | None = None  # the rows it counts in (None: both)
    sample: int | None = None  # the Google utterance whose final and lead it took

    def waited_until(self, ready_s: float) -> float:
        """The simulated model time of this turn until `ready_s` after it began."""
        until = self.started + ready_s
        return sum(max(0.0, min(end, until) - max(start, self.started)) for start, end in self.waits)

    def timings(self, hearing_s: float, first_audio_s: float) -> tuple[float, float, float, float] | None:
        """(first audio, confirming sentence, their floors) after the end of speech."""
        if not self.heard:
            return None
        said_until = 0.0
        starts: list[tuple[float, Heard]] = []
        for heard in self.heard:
            start = max(hearing_s + heard.ready_s + first_audio_s, said_until)
            said_until = start + len(heard.segment.text) / SPEECH_CHARS_PER_S
            starts.append((start, heard))
        first_at, first = starts[0]
        confirming = next(((at, h) for at, h in starts if h.segment.text not in ACKS), starts[-1])
        floor = hearing_s + first_audio_s
        return (
            first_at,
            confirming[0],
            floor + self.waited_until(first.ready_s),
            floor + self.waited_until(confirming[1].ready_s),
        )


class Decisions:
    """The simulated Gemini's answers: the offline model's, as the product's instructions
    ask today (no acknowledgement, no direct answer), with streaming's, or with streaming's
    but nothing written beside a command (`no result ahead`)."""

    def __init__(self) -> None:
        self.mode = "today"
        self._offline: Responder = offline_responder()

    async def __call__(self, request: ModelRequest) -> Answer:
        answer = await self._offline(request)
        if self.mode == "today" and answer.calls:
            calls = tuple(
                type(c)(c.id, c.name, {k: v for k, v in c.args.items() if k != "answer_directly"}, c.signature)
                for c in answer.calls
            )
            return Answer(text="", calls=calls, prompt_tokens=answer.prompt_tokens)
        if self.mode == "no result ahead" and answer.calls and SAID_ALOUD in request.system:
            return Answer(text="", calls=answer.calls, prompt_tokens=answer.prompt_tokens)
        return answer


async def foresee(
    services: Services, person: Person, text: str, *, went_on: bool, ahead_s: float = SPECULATIVE_TRANSCRIPT_AHEAD_S
) -> tuple[asyncio.Task[int], int, float]:
    """What the call door does while the person's turn ends: Ava's first call begun on the
    speculative transcript, `ahead_s` before the turn ends (after a guess at fewer words,
    dropped when they go on, if `went_on`). Returns the guess on the whole words, still
    running (as the call door's foresight runs beside the turn's end, never before it), how
    many guesses were begun before it, and the moment the turn ends (its time zero)."""
    begun = 0
    if went_on:
        fewer = " ".join(text.split()[:-1])
        begun += await services.turns.foresee(person, text=fewer, channel="voice", zone=ZONE)
        await asyncio.sleep(WENT_ON_AFTER_S)
        services.turns.unforeseen(person.id)
    ends = time.monotonic() + ahead_s
    guess = asyncio.create_task(services.turns.foresee(person, text=text, channel="voice", zone=ZONE))
    await asyncio.sleep(max(0.0, ends - time.monotonic()))
    return guess, begun, ends


async def one_turn(
    services: Services,
    sim: SimulatedGemini,
    person_id: str,
    scenario: str,
    mode: str,
    text: str,
    *,
    went_on: bool = False,
    ahead_s: float = SPECULATIVE_TRANSCRIPT_AHEAD_S,
    foreseen: bool = True,
) -> TurnRecord:
    person = await services.people.get(person_id)
    assert person is not None
    served_before = len(sim.served)
    balance_before = await services.wallet.balance_micros(person_id)
    adopted_before = metrics.speculations.value(outcome="adopted")
    differed_before = {part: metrics.speculations_differed.value(part=part) for part in PARTS}
    guess: asyncio.Task[int] | None = None
    speculated, ends = 0, time.monotonic()
    if mode == "speculating" and foreseen:
        guess, speculated, ends = await foresee(services, person, text, went_on=went_on, ahead_s=ahead_s)
    record = TurnRecord(scenario=scenario, mode=mode, started=ends, speculated=speculated)

    def heard(reply: SpokenReply) -> None:
        at = time.monotonic() - record.started
        record.heard.extend(Heard(at, segment) for segment in reply.segments)

    def say(segment: Segment) -> None:
        record.heard.append(Heard(time.monotonic() - record.started, segment))

    stop = asyncio.Event()
    await services.turns.post(
        person,
        text=text,
        channel="voice",
        zone=ZONE,
        on_reply=heard,
        on_say=say if mode != "today" else None,
        stop=stop if mode != "today" else None,
    )
    if guess is not None:
        record.speculated += await guess
    served = [s for s in sim.served[served_before:] if not s.structured]
    # The floor sums the waits on the turn's path: a dropped guess (its newest line ends on
    # the fewer words) ran beside it, so it is paid for (counted in calls) but not waited on.
    fewer = "] " + " ".join(text.split()[:-1])
    on_path = [s for s in served if not (went_on and _last_line(s).endswith(fewer))]
    record.waits = [w for s in on_path for w in s.waits]
    record.model_calls = len(served)
    record.answered = bool(record.heard)
    record.adopted = int(metrics.speculations.value(outcome="adopted") - adopted_before)
    differed = {part: int(metrics.speculations_differed.value(part=part) - differed_before[part]) for part in PARTS}
    record.differed = {part: n for part, n in differed.items() if n}
    record.cost_micros = balance_before - await services.wallet.balance_micros(person_id)
    return record


def _last_line(served: Served) -> str:
    contents = served.request.contents if served.request is not None else ()
    return contents[-1].text if contents else ""


def quantiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0], values[0]) if values else (float("nan"), float("nan"))
    cuts = statistics.quantiles(values, n=20, method="inclusive")
    return statistics.median(values), cuts[18]


@dataclass(frozen=True, slots=True)
class Hearing:
    """One utterance through the Google recogniser: after the end of speech, its final and
    the words it foresaw."""

    final_s: float
    foreseen_s: float | None  # None: nothing was told to the foresight
    same_words: bool  # the words told are the final's, as the turn compares them

    @property
    def lead_s(self) -> float:
        """How long before the final a first call began on words its turn adopts (0: none)."""
        if self.foreseen_s is None or not self.same_words:
            return 0.0
        return max(0.0, self.final_s - self.foreseen_s)


@dataclass(frozen=True, slots=True)
class SpeechSamples:
    """Hearing and first-audio times measured through the Google adapters and the fakes."""

    hearings: list[Hearing]
    first_audio_s: list[float]

    @property
    def hearing_s(self) -> list[float]:
        return [h.final_s for h in self.hearings]

    @property
    def leads_s(self) -> list[float]:
        return [h.lead_s for h in self.hearings]


def foresight_line(samples: SpeechSamples) -> str:
    """What Google's recogniser foresaw, and the lead the all-simulated speculating rows take."""
    hearings = samples.hearings
    told = [h for h in hearings if h.foreseen_s is not None]
    same = [h for h in told if h.same_words]
    line = (
        f"Google foresight: words told after the pause in {len(told)} of {len(hearings)} utterances "
        f"({len(told) / max(len(hearings), 1):.0%}), the final's words in {len(same)}; lead (final - foreseen, "
        f"0 when none) p50 / p95 {_ms(quantiles(samples.leads_s))}"
    )
    if told:
        foreseen = [h.foreseen_s for h in told if h.foreseen_s is not None]
        line += f"; told p50 / p95 {_ms(quantiles(foreseen))} after the end of speech"
    return line + " (the all-simulated speculating rows take each turn's lead from one utterance)."


def report(
    records: list[TurnRecord],
    rng: random.Random,
    elapsed_s: float,
    load: str,
    modes: tuple[str, ...],
    samples: SpeechSamples,
    hearing_s: float | None = None,
) -> tuple[str, bool]:
    lines = [
        "## Voice on the cloud path (bench/cloud_voice.py)",
        "",
        f"Simulated Gemini 2.5 Flash (bench/cloudsim/latency.py), {len(records)} turns in {elapsed_s:.0f} s; {load}.",
        "Measured at the turn level (see the module docstring): hearing and speech added per turn.",
        f"All simulated: Google STT end of speech -> final transcript p50 / p95 "
        f"{_ms(quantiles(samples.hearing_s))} over {len(samples.hearing_s)} utterances, streaming TTS text -> "
        f"first audio {_ms(quantiles(samples.first_audio_s))} over {len(samples.first_audio_s)} sentences, "
        "through the product's Google adapters and the gRPC fakes (bench/cloudsim/speech.py).",
        foresight_line(samples),
        "",
        "| scenario | engines | mode | turns | calls/turn | first audio p50 / p95 | floor p50 | ours p50 "
        "| confirming p50 / p95 | floor p50 | ours p50 | first audio vs today | confirming vs today |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ok = True
    for scenario, _ in SCENARIOS:
        for engines in ("offline", "all simulated"):
            today_p50 = today_confirm_p50 = float("nan")
            for mode in modes:
                of = [r for r in records if r.scenario == scenario and r.mode == mode]
                times = []
                of = [r for r in of if r.engines in (None, engines)]
                for r in of:
                    if engines == "offline":
                        drawn = OFFLINE_HEARING.draw(rng) if hearing_s is None else hearing_s
                        hearing, speech = drawn, OFFLINE_SPEECH_FIRST_AUDIO_S
                    elif r.sample is not None:  # the utterance whose lead the turn took
                        hearing, speech = samples.hearing_s[r.sample], rng.choice(samples.first_audio_s)
                    else:
                        hearing, speech = rng.choice(samples.hearing_s), rng.choice(samples.first_audio_s)
                    timing = r.timings(hearing, speech)
                    if timing is not None:
                        times.append(timing)
                ok = ok and len(times) == len(of)
                if not times:
                    continue
                first = quantiles([t[0] for t in times])
                confirm = quantiles([t[1] for t in times])
                floor_first = statistics.median(t[2] for t in times)
                floor_confirm = statistics.median(t[3] for t in times)
                # Ours: what the product itself added on top of the vendors' waits, turn by turn.
                ours_first = statistics.median(t[0] - t[2] for t in times)
                ours_confirm = statistics.median(t[1] - t[3] for t in times)
                calls = statistics.mean(r.model_calls for r in of)
                if mode == "today":
                    today_p50, today_confirm_p50 = first[0], confirm[0]
                versus = "1.00x" if mode == "today" else f"{first[0] / today_p50:.2f}x"
                versus_confirm = "1.00x" if mode == "today" else f"{confirm[0] / today_confirm_p50:.2f}x"
                lines.append(
                    f"| {scenario} | {engines} | {mode} | {len(times)} | {calls:.1f} "
                    f"| {first[0] * 1000:.0f} / {first[1] * 1000:.0f} ms | {floor_first * 1000:.0f} ms "
                    f"| {ours_first * 1000:.0f} ms "
                    f"| {confirm[0] * 1000:.0f} / {confirm[1] * 1000:.0f} ms "
                    f"| {floor_confirm * 1000:.0f} ms | {ours_confirm * 1000:.0f} ms | {versus} | {versus_confirm} |"
                )
    unanswered = sum(not r.answered for r in records)
    lines += ["", f"Turns with nothing said: {unanswered}."]
    if "speculating" in modes:
        lines += [
            "",
            "| scenario | lead | speculating turns | first calls begun | adopted | adopted, later half | "
            "differed (first part) | cost/turn streaming | cost/turn speculating | extra per turn |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for scenario, _ in SCENARIOS:
            for engines, lead in (("offline", "--lead-ms"), ("all simulated", "Google, measured")):
                on = [r for r in records if r.scenario == scenario and r.mode == "speculating" and r.engines == engines]
                off = [r for r in records if r.scenario == scenario and r.mode == "streaming"]
                if not on:
                    continue
                begun, adopted = sum(r.speculated for r in on), sum(r.adopted for r in on)
                # Along the run: the thread grows turn by turn, so the later half is the long call.
                later = on[len(on) // 2 :]
                begun_later, adopted_later = sum(r.speculated for r in later), sum(r.adopted for r in later)
                parts = {part: sum(r.differed.get(part, 0) for r in on) for part in PARTS}
                differed = ", ".join(f"{part} {n}" for part, n in parts.items() if n) or "none"
                cost_on = statistics.mean(r.cost_micros for r in on)
                cost_off = statistics.mean(r.cost_micros for r in off) if off else None
                lines.append(
                    f"| {scenario} | {lead} | {len(on)} | {begun} | {adopted} ({adopted / max(begun, 1):.0%}) "
                    f"| {adopted_later} of {begun_later} ({adopted_later / max(begun_later, 1):.0%}) | {differed} "
                    f"| {'-' if cost_off is None else f'{cost_off:,.0f} µRp'} | {cost_on:,.0f} µRp "
                    f"| {'-' if cost_off is None else f'{cost_on - cost_off:+,.0f} µRp'} |"
                )
    return "\n".join(lines), ok and not unanswered


@contextlib.asynccontextmanager
async def product(sim: SimulatedGemini, home: Path) -> AsyncIterator[Services]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        avagenc_home=home,
        session_secret=SecretStr("bench-secret-" + "x" * 40),
        gemini_api_key=SecretStr("simulated"),
        gemini_base_url=sim.base_url,
        gemini_retries_max=0,  # the simulator never fails; a retry would hide a bug
        google_speech_credentials=None,
        voice_preload=False,  # no call is made; the engines are not loaded
        signup_grant_micros=10**15,
    )
    async with running(settings, deliver_wakes=False) as (services, _app):
        yield services


async def measure(args: argparse.Namespace) -> int:
    decisions = Decisions()
    started = time.monotonic()
    load_before = _load()
    samples = await speech_samples(args.speech_samples, args.seed)
    with tempfile.TemporaryDirectory(prefix="cloud-voice-") as folder:
        async with (
            SimulatedGemini(decisions, latency=GEMINI_2_5_FLASH, seed=args.seed) as sim,
            product(sim, Path(folder)) as services,
        ):
            modes: tuple[str, ...] = args.modes
            people: dict[tuple[str, str], str] = {}
            speculating = 0
            scenarios = [(name, requests) for name, requests in SCENARIOS if name in args.scenarios]
            for scenario, _ in scenarios:
                for mode in modes:
                    person, _ = await services.people.sign_in_local(f"Budi {scenario} {mode}")
                    await services.wallet.grant_signup(person.id)
                    people[(scenario, mode)] = person.id
            for scenario, _ in scenarios:  # the speculating turns at Google's measured lead
                person, _ = await services.people.sign_in_local(f"Budi {scenario} speculating on Google")
                await services.wallet.grant_signup(person.id)
                people[(scenario, "google")] = person.id
            draws = random.Random(args.seed + 1)  # which utterance's lead each such turn takes
            records: list[TurnRecord] = []
            for index in range(args.turns + 1):  # the first round warms connections and caches
                for scenario, requests in scenarios:
                    for mode in modes if index % 2 else tuple(reversed(modes)):
                        decisions.mode = mode
                        text = requests[index % len(requests)]
                        went_on = False
                        if mode == "speculating" and index:
                            speculating += 1
                            went_on = args.went_on_every > 0 and speculating % args.went_on_every == 0
                        record = await one_turn(
                            services,
                            sim,
                            people[(scenario, mode)],
                            scenario,
                            mode,
                            text,
                            went_on=went_on,
                            ahead_s=args.lead_ms / 1000,
                        )
                        if mode != "speculating":
                            if index:
                                records.append(record)
                            continue
                        record.engines = "offline"
                        sample = draws.randrange(len(samples.hearings))
                        lead_s = samples.leads_s[sample]
                        google = await one_turn(
                            services,
                            sim,
                            people[(scenario, "google")],
                            scenario,
                            mode,
                            text,
                            went_on=went_on and lead_s > 0,
                            ahead_s=lead_s,
                            foreseen=lead_s > 0,
                        )
                        google.engines, google.sample = "all simulated", sample
                        if index:
                            records += [record, google]
            verified = await services.ledger.verify()
    elapsed = time.monotonic() - started
    load = f"load average {load_before} before, {_load()} after (2 cores shared)"
    hearing_s = None if args.hearing_ms is None else args.hearing_ms / 1000
    text, ok = report(records, random.Random(args.seed), elapsed, load, args.modes, samples, hearing_s)
    ok = ok and len(samples.hearings) == len(samples.first_audio_s) == args.speech_samples
    hearing = (
        f"drawn per turn, p50 {OFFLINE_HEARING.p50_s * 1000:.0f} / p95 {OFFLINE_HEARING.p95_s * 1000:.0f} ms"
        if hearing_s is None
        else f"{args.hearing_ms:.0f} ms every turn"
    )
    text += (
        f"\nOffline hearing (end of speech -> the turn) {hearing}; the speculative transcript"
        f" {args.lead_ms:.0f} ms before the turn ends on the offline rows, the measured Google lead on the"
        " all-simulated rows.\n"
    )
    text += f"\n`wallet verify` after the run: {'ok' if verified.ok else 'FAILED'}.\n"
    print(text)
    write(args.out, text)
    return 0 if ok and verified.ok else 1


def _ms(pair: tuple[float, float]) -> str:
    return f"{pair[0] * 1000:.0f} / {pair[1] * 1000:.0f} ms"


class _Heard:
    """The end of a recogniser's pipeline: the time its first final transcript arrived."""

    def __init__(self) -> None:
        from pipecat.frames.frames import Frame, TranscriptionFrame
        from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

        outer = self

        class Sink(FrameProcessor):
            async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
                await super().process_frame(frame, direction)
                if isinstance(frame, TranscriptionFrame) and not outer.done.is_set():
                    outer.at = time.monotonic()
                    outer.text = frame.text
                    outer.done.set()
                await self.push_frame(frame, direction)

        self.sink = Sink()
        self.done = asyncio.Event()
        self.at = 0.0
        self.text = ""


async def hear_through_google(endpoint: str, key: Path, said: list[bytes]) -> list[Hearing]:
    """End of speech -> final transcript, and -> the words foreseen, one utterance per
    call, through `google_stt` with the call's VAD behind it."""

    hearings: list[Hearing] = []
    for pcm in said:
        hearing = await _hear_one(endpoint, key, pcm)
        if hearing is not None:
            hearings.append(hearing)
    return hearings


class _Unheeded:
    """A foresight that begins nothing, and keeps the newest words it was told and when."""

    def __init__(self) -> None:
        self.told: tuple[float, str] | None = None

    def heard(self, text: str) -> None:
        self.told = (time.monotonic(), text)

    def resumed(self) -> None:
        pass


async def _hear_one(endpoint: str, key: Path, pcm: bytes) -> Hearing | None:
    from pipecat.frames.frames import Frame, InputAudioRawFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.workers.runner import WorkerRunner

    from voice.engines.google import google_stt
    from voice.pipeline import TurnTiming, call_vad

    chunk = 2 * HEARING_RATE // 50  # 20 ms
    heard = _Heard()
    stt = google_stt(str(key), ["en-US"], endpoint=endpoint)
    foresight = _Unheeded()
    stt.set_foresight(foresight)
    vad = call_vad(TurnTiming(), stt)  # tells the adapter of the pause, as on a call
    vad.set_sample_rate(HEARING_RATE)

    class Listening(FrameProcessor):
        """The call's VAD, hearing each frame after the recogniser (as the user turn does)."""

        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            if isinstance(frame, InputAudioRawFrame):
                await vad.analyze_audio(frame.audio)
            await self.push_frame(frame, direction)

    worker = PipelineWorker(
        Pipeline([stt, Listening(), heard.sink]),
        params=PipelineParams(audio_in_sample_rate=HEARING_RATE),
        cancel_on_idle_timeout=False,
    )
    started = asyncio.Event()

    async def _started(_worker: object, _frame: object) -> None:
        started.set()

    worker.add_event_handler("on_pipeline_started", _started)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    await asyncio.wait_for(started.wait(), HEARING_WAIT_MAX_S)
    # Speech in real time (the recogniser's pause is timed from the last loud audio), then
    # silence until the final transcript is in. The end of speech is when the last loud
    # piece was handed over (the voice's own trailing quiet is not speech).
    ended = time.monotonic()
    for start in range(0, len(pcm), chunk):
        piece = pcm[start : start + chunk]
        await worker.queue_frame(InputAudioRawFrame(piece, HEARING_RATE, 1))
        if rms_pcm16(piece) > QUIET_RMS:
            ended = time.monotonic()
        await asyncio.sleep(0.02)
    for _ in range(int(HEARING_WAIT_MAX_S / 0.02)):
        if heard.done.is_set():
            break
        await worker.queue_frame(InputAudioRawFrame(bytes(chunk), HEARING_RATE, 1))
        await asyncio.sleep(0.02)
    await worker.cancel()
    await asyncio.wait_for(running, HEARING_WAIT_MAX_S)
    await vad.cleanup()  # type: ignore[no-untyped-call]  # untyped in Pipecat 1.14
    if not heard.done.is_set():
        return None
    told = foresight.told
    if told is None:
        return Hearing(final_s=heard.at - ended, foreseen_s=None, same_words=False)
    return Hearing(
        final_s=heard.at - ended, foreseen_s=told[0] - ended, same_words=words_of(told[1]) == words_of(heard.text)
    )


async def speak_through_google(endpoint: str, key: Path, sentences: list[str]) -> list[float]:
    """Text handed to the streaming voice -> its first audio frame, one sentence each."""
    from pipecat.frames.frames import TTSAudioRawFrame

    from voice.engines.google import ProsodyGoogleTTSService
    from voice.prosody import segment_ssml

    firsts: list[float] = []
    for sentence in sentences:
        tts = ProsodyGoogleTTSService(credentials_path=str(key), endpoint=endpoint)
        began = time.monotonic()
        stream = tts.run_tts(segment_ssml(sentence, "neutral"), "bench")
        async for frame in stream:
            if isinstance(frame, TTSAudioRawFrame):
                firsts.append(time.monotonic() - began)
                break
        await stream.aclose()
    return firsts


async def speech_samples(count: int, seed: int) -> SpeechSamples:
    """`count` utterances heard and sentences said through the Google adapters, against the
    fakes at the published latencies, in this run."""
    from voice.engines.whisper import preload_whisper

    await asyncio.to_thread(preload_whisper)  # as a server does at startup
    requests = [text for _, texts in SCENARIOS for text in texts]
    said: list[bytes] = []
    for text in requests:
        pcm, rate = await espeak_synthesise(text, 1.0)
        said.append(bytes(2 * HEARING_RATE // 5) + resample_pcm16(pcm, rate, HEARING_RATE))
    replies = ["Sure, turning it on.", "The bedroom light is on.", "It is a quarter past nine."]
    with tempfile.TemporaryDirectory(prefix="cloud-speech-") as folder:
        key = throwaway_credentials(Path(folder) / "key.json")
        async with SimulatedSpeech(
            stt_final=GOOGLE_STT_FINAL,
            stt_interim_after=GOOGLE_STT_INTERIM_AFTER_SPEECH,
            tts_first_byte=GOOGLE_TTS_STREAMING_FIRST_BYTE,
            seed=seed,
        ) as speech:
            hearing = await hear_through_google(speech.endpoint, key, [said[i % len(said)] for i in range(count)])
            first_audio = await speak_through_google(
                speech.endpoint, key, [replies[i % len(replies)] for i in range(count)]
            )
    return SpeechSamples(hearings=hearing, first_audio_s=first_audio)


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=100, help="measured turns per scenario and mode")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument(
        "--modes",
        type=lambda v: tuple(m.strip() for m in v.split(",")),
        default=DEFAULT_MODES,
        help=f"comma-separated, from {', '.join(MODES)} (default: {','.join(DEFAULT_MODES)})",
    )
    parser.add_argument(
        "--scenarios",
        type=lambda v: tuple(m.strip() for m in v.split(",")),
        default=tuple(name for name, _ in SCENARIOS),
        help=f"comma-separated, from {', '.join(name for name, _ in SCENARIOS)} (default: all)",
    )
    parser.add_argument(
        "--went-on-every",
        type=int,
        default=5,
        help="every Nth speculating turn the person goes on after a first guess (0: never)",
    )
    parser.add_argument(
        "--hearing-ms",
        type=float,
        default=None,
        help="offline hearing, end of speech -> the turn, the same every turn (default: drawn per turn"
        " from the quiet 100-turn measurement in bench/cloudsim/latency.py)",
    )
    parser.add_argument(
        "--lead-ms",
        type=float,
        default=SPECULATIVE_TRANSCRIPT_AHEAD_S * 1000,
        help="how long before the turn ends its words are foreseen (bench.turn_end measures the pipeline's)",
    )
    parser.add_argument(
        "--speech-samples",
        type=int,
        default=30,
        help="utterances heard and sentences said through the Google adapters and fakes (all-simulated rows)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "cloud_voice.md", help="also write the report here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sys.exit(asyncio.run(measure(args)))


if __name__ == "__main__":
    main()
