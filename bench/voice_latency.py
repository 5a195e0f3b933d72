"""How long a person waits for Ava's voice: from the end of their speech to the first
reply audio at the speaker, with the offline engines (Whisper tiny.en; the server's voice,
neural by default, VOICE_TTS=espeak for espeak-ng) and the
offline model, next to a floor made of the engines' own times measured in the same run.

Clients speak the partner speaker protocol (docs/sockets.md#speaker-protocol) to the real app, served by
`bench.voice_server` in its own process on 127.0.0.1. Each client is a microphone: it
sends a 20 ms PCM16 frame every 20 ms for the whole call, silence when the person is
quiet, espeak-ng speech when they talk, on an absolute schedule so pacing never drifts.

- *End of speech* is the moment the client has sent the last non-silent 20 ms frame of
  the utterance (frame RMS above SILENT_RMS; espeak-ng's speech ends abruptly, from
  hundreds to single digits, so any threshold in between picks the same frame). The
  microphone keeps streaming silence afterwards.
- *First reply audio* is the arrival of the first binary frame after that whose RMS is
  above the same threshold; the resolution is the server's frame, 40 ms here, so a frame
  whose voice starts part-way through counts from its arrival. Silent frames before it
  (idle silence a server may stream, or a frame holding only espeak-ng's 20 ms lead-in)
  are counted and reported, never taken as the reply.
- Turns are sequential within a call: the next utterance starts once the reply audio has
  ended (QUIET_S), after LEAD_S of silence, so Ava is never interrupted.

The server's share is measured twice. Client-side, as a proxy: the arrival of the user
`transcript` event (sent when Whisper finalises) to the first non-silent reply frame.
Server-side: the bench server watches each call's Pipecat frames with an observer and
reports when each stage's frame left its processor, on the same monotonic clock as the
clients (CLOCK_MONOTONIC on Linux), which also gives the breakdown of where the time goes.

The baseline is a floor: the fixed waits the pipeline is configured with (VAD stop_secs,
then the wait after it, which runs alongside Whisper and ends the turn only once the
transcript is in: VOICE_FINISHED_TIMEOUT_S for words that sound finished, as every
request here does, VOICE_SPEECH_TIMEOUT_S otherwise) plus Whisper on the same clips and the voice on the same first
sentences. It is taken twice: with the engines alone in this process, between the two
levels while the server is idle, and with each turn's own engine times as Pipecat
measured them inside the server, which does not drift with the machine's load. The gap
between a turn and its floor is what the product and the pipeline add.

The target is set against a *sequential floor*: the same pipeline without its three
shortcuts, so the ratio shows what they buy. That is the same sum with Whisper padded to
its 30 s window (faster-whisper's own path, `transcribe_full_window`) instead of a window
just longer than the utterance, the whole first sentence synthesised before any audio
(instead of a long sentence's first clause first), and one fixed speech timeout after the
VAD's stop for every utterance (instead of a wait that follows the words, `voice.turn_end`). Both recognisers hear
the same segments in the same run; the target is p50 <= 0.8x that floor, and the current
floor is reported beside it.

Levels: one call until `--utterances` turns got a reply, then `--calls` simultaneous calls
(different people) until `--per-call` turns each did, after one warm-up turn per call; a
turn with no reply is reported and the person goes on to the next request. The whole run
takes three to four minutes. PostgreSQL is embedded in a temporary folder unless
DATABASE_URL is set.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import numpy as np
from pipecat.audio.utils import create_stream_resampler
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bench.report import write
from bench.servers import BenchFailed, exit_with, fast_loop, logs_kept_on_failure, serving_module
from bench.turn_overhead import Watched, cpu_model, fresh_database, postmaster_pid, sign_in
from voice.engines.espeak import synthesize
from voice.prosody import emotion_to_ssml, strip_stray_tags, text_type_for

RESULTS = Path(__file__).parent / "results"
RATE = 16_000
FRAME_S = 0.02
FRAME_BYTES = int(RATE * FRAME_S) * 2
SILENT_FRAME = bytes(FRAME_BYTES)
SILENT_RMS = 50.0  # int16 RMS, about -56 dBFS
LEAD_S = 0.3  # silence before each utterance
# The reply is over when nothing at all has arrived for QUIET_S: while Ava speaks the
# transport sends a frame every 40 ms, silent ones included (SSML breaks, espeak-ng's
# trailing silence: about 0.7 s after the last word), and the captions of her later
# sentences come right after the last frame. A server that streamed silence forever would
# end a reply after SILENCE_MAX_S without a voice instead.
QUIET_S = 0.4
SILENCE_MAX_S = 3.0
REPLY_TIMEOUT_S = 20.0  # a person waiting this long has given up: the turn failed
REPLY_AUDIO_MAX_S = 60.0  # a reply that began in time is heard to its end, up to this long
SETTLE_S = 2.0  # after a failed turn, wait for this long a silence before the next one
STAGGER_S = 0.5  # the simultaneous calls start their turns this far apart
START = {"type": "start", "sample_rate": RATE, "encoding": "pcm_s16le", "channels": 1, "time_zone": "Asia/Jakarta"}
TARGET_P50_MS = 700.0
TARGET_P95_MS = 850.0
TARGET_CROWD_RATIO = 1.3  # simultaneous calls p50 against one call's
TARGET_SERVER_P95_MS = 50.0
TARGET_FLOOR_RATIO = 0.8  # of today's sequential floor (Whisper through the 30 s window)
# What the segmented STT hands Whisper besides the speech: about a second of buffered
# audio before the VAD start (start_secs, 0.2 s, of it speech) and 0.5 s of padding after
# the VAD stop (Pipecat's SegmentedSTTService defaults).
PRE_ROLL_S = 0.8
STT_PADDING_S = 0.5
FLOOR_REPEATS = 2
TURNS_PER_CALL_MAX = 100  # about 4 minutes of a call, well inside its 15-minute limit

# Short requests the offline model answers, each with words its reply must contain.
SAYINGS: tuple[tuple[str, str], ...] = (
    ("turn on the bedroom light", "bedroom light is on"),
    ("hello", "what can i do for you"),
    ("turn off the bedroom light", "bedroom light is off"),
    ("thank you", "anytime"),
    ("turn on the living room light", "living room light is on"),
    ("good morning", "what can i do for you"),
    ("turn off the living room light", "living room light is off"),
    ("open the living room curtain", "curtain is open"),
    ("hi there", "what can i do for you"),
    ("close the living room curtain", "curtain is closed"),
    ("thanks a lot", "anytime"),
    ("what can you do", "i lead the group"),  # the long answer (9 s of speech): once in 20 turns
)
WARM_UP = ("thank you", "anytime")  # also makes later greetings get the short answer


def rms(pcm: bytes) -> float:
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if len(samples) else 0.0


def quantiles_ms(values_s: list[float]) -> tuple[float, float]:
    """(p50, p95) in ms; p95 interpolates between the sorted values (inclusive method)."""
    if not values_s:
        return float("nan"), float("nan")
    if len(values_s) == 1:
        return values_s[0] * 1000, values_s[0] * 1000
    return statistics.median(values_s) * 1000, statistics.quantiles(values_s, n=20, method="inclusive")[18] * 1000


async def to_16k(pcm: bytes, rate: int) -> bytes:
    resampler = create_stream_resampler()
    return await resampler.resample(pcm, rate, RATE) + await resampler.flush()


# --- the person ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Clip:
    """One utterance as the microphone sends it: LEAD_S of silence, then the speech."""

    text: str
    expected: str
    speech: bytes
    frames: tuple[bytes, ...]
    first_loud: int
    last_loud: int


async def make_clip(text: str, expected: str) -> Clip:
    pcm, rate = await synthesize(text)
    speech = await to_16k(pcm, rate)
    audio = bytes(int(LEAD_S / FRAME_S) * FRAME_BYTES) + speech
    audio += bytes(-len(audio) % FRAME_BYTES)
    frames = tuple(audio[i : i + FRAME_BYTES] for i in range(0, len(audio), FRAME_BYTES))
    loud = [i for i, frame in enumerate(frames) if rms(frame) > SILENT_RMS]
    if not loud:
        raise BenchFailed(f"espeak-ng said nothing audible for {text!r}")
    return Clip(text, expected, speech, frames, loud[0], loud[-1])


@dataclass(frozen=True, slots=True)
class Heard:
    """One message from the server, when it arrived, and (for audio) how loud it was."""

    at: float
    audio: bytes | None
    event: dict[str, Any] | None
    rms: float


@dataclass
class Turn:
    """One utterance and what came back; times are `time.monotonic()` seconds."""

    call: str
    clip: Clip
    started_at: float  # the first non-silent frame was sent
    ended_at: float  # the last non-silent frame was sent: end of speech
    first_byte_at: float | None = None
    first_loud_at: float | None = None
    silent_frames_before: int = 0
    transcript_at: float | None = None
    heard: str = ""
    replies: list[tuple[str, str | None]] = field(default_factory=list)
    clears: int = 0  # during the reply: a barge-in. (Pipecat also sends one as each utterance starts.)
    problem: str | None = None
    server: dict[str, float] = field(default_factory=dict)
    stopped_early: bool = False  # Pipecat stopped the user turn before the transcript came

    @property
    def latency_s(self) -> float | None:
        return None if self.first_loud_at is None else self.first_loud_at - self.ended_at

    @property
    def answered(self) -> bool:
        return self.clip.expected in " ".join(text for text, _ in self.replies).lower()


class VoiceCall:
    """A speaker on a call: a microphone task that never stops sending, and a listener
    that stamps everything the server sends on arrival."""

    def __init__(self, ws: ClientConnection, tag: str) -> None:
        self.ws = ws
        self.tag = tag
        self.heard: list[Heard] = []
        self.lateness_s: list[float] = []  # how late each frame left against its schedule
        self._clip: Clip | None = None
        self._index = 0
        self._spoke_at = 0.0
        self._said: asyncio.Future[tuple[float, float]] | None = None

    async def listen(self) -> None:
        async for message in self.ws:
            at = time.monotonic()
            if isinstance(message, bytes):
                self.heard.append(Heard(at, message, None, rms(message)))
            else:
                self.heard.append(Heard(at, None, json.loads(message), 0.0))

    async def send_frame(self, frame: bytes | None) -> None:
        """One 20 ms frame of the clip being said, or of silence (None), as this door takes it."""
        await self.ws.send(frame if frame is not None else SILENT_FRAME)

    async def microphone(self) -> None:
        next_at = time.monotonic()
        while True:
            clip, index = self._clip, self._index
            await self.send_frame(clip.frames[index] if clip else None)
            sent = time.monotonic()
            self.lateness_s.append(sent - next_at)
            if clip is not None:
                if index == clip.first_loud:
                    self._spoke_at = sent
                if index == clip.last_loud and self._said is not None:
                    self._said.set_result((self._spoke_at, sent))
                self._index += 1
                if self._index == len(clip.frames):
                    self._clip = None
            next_at += FRAME_S
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))

    async def say(self, clip: Clip) -> tuple[float, float]:
        """Speak a clip; returns (first, last) non-silent frame sent. Silence follows."""
        self._said = asyncio.get_running_loop().create_future()
        self._index, self._clip = 0, clip
        try:
            # Bounded: a microphone whose socket died would otherwise never finish the clip.
            async with asyncio.timeout(len(clip.frames) * FRAME_S + REPLY_TIMEOUT_S):
                return await self._said
        except TimeoutError as exc:
            raise BenchFailed(f"call {self.tag} could not send its audio (socket {self.ws.state.name})") from exc

    async def turn(self, clip: Clip) -> Turn:
        mark = len(self.heard)
        started, ended = await self.say(clip)
        turn = Turn(self.tag, clip, started, ended)
        deadline = ended + REPLY_TIMEOUT_S
        while True:
            await asyncio.sleep(0.05)
            now = time.monotonic()
            since = self.heard[mark:]
            loud = [h.at for h in since if h.audio is not None and h.rms > SILENT_RMS]
            if loud and (now - since[-1].at > QUIET_S or now - loud[-1] > SILENCE_MAX_S):
                break
            # The deadline is for the reply to begin; a long one (what Ava can do) may take
            # longer than that to finish, and counts as answered.
            if (now > deadline and not loud) or now > deadline + REPLY_AUDIO_MAX_S or self.ws.close_code is not None:
                turn.problem = "no reply" if self.ws.close_code is None else f"closed {self.ws.close_code}"
                break
        read_turn(turn, self.heard[mark:])
        if turn.problem == "no reply":
            await self.settle()
        return turn

    async def settle(self) -> None:
        """After a turn got no reply in time, let a late one finish so that it cannot be
        taken for the next turn's reply."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(REPLY_TIMEOUT_S):
                while True:
                    await asyncio.sleep(0.1)
                    if not self.heard or time.monotonic() - self.heard[-1].at >= SETTLE_S:
                        return


def read_turn(turn: Turn, heard: list[Heard]) -> None:
    """Fill a turn's client-side times and texts from what arrived during it."""
    audio = [h for h in heard if h.audio is not None and h.at > turn.ended_at]
    if audio:
        turn.first_byte_at = audio[0].at
        loud = next((i for i, h in enumerate(audio) if h.rms > SILENT_RMS), None)
        if loud is not None:
            turn.first_loud_at, turn.silent_frames_before = audio[loud].at, loud
    events = [(h.at, h.event) for h in heard if h.event is not None]
    users = [(at, e) for at, e in events if e.get("type") == "transcript" and e.get("role") == "user"]
    if users:
        turn.transcript_at = users[0][0]
        turn.heard = " ".join(str(e.get("text", "")) for _, e in users)
    if len(users) > 1 and turn.problem is None:
        turn.problem = f"heard as {len(users)} utterances"
    turn.replies = [
        (str(e.get("text", "")), e.get("emotion"))
        for _, e in events
        if e.get("type") == "transcript" and e.get("role") == "assistant"
    ]
    reply_at = turn.first_loud_at or float("inf")
    turn.clears = sum(1 for at, e in events if e.get("type") == "clear" and at > reply_at)
    if turn.problem is None and any(e.get("type") in ("hangup", "error") for _, e in events):
        turn.problem = "the call ended"


@contextlib.asynccontextmanager
async def voice_call(
    port: int, token: str, tag: str, lateness_s: list[float], *, open_timeout_s: float = 10.0
) -> AsyncIterator[VoiceCall]:
    """A call on the speaker door. `open_timeout_s`: how long the socket may take to open
    (a call placed while the doors load is accepted once they are: web/doors.py)."""
    query = urlencode({"token": token, "bench_call": tag})
    url = f"ws://127.0.0.1:{port}/v1/voice/speaker?{query}"
    async with connect(url, max_size=2**20, open_timeout=open_timeout_s) as ws:
        await ws.send(json.dumps(START))
        ready = json.loads(await ws.recv())
        if ready.get("type") != "ready":
            raise BenchFailed(f"call {tag} was refused: {ready}")
        call = VoiceCall(ws, tag)
        tasks = [asyncio.create_task(call.listen()), asyncio.create_task(call.microphone())]
        try:
            yield call
        finally:
            with contextlib.suppress(ConnectionClosed):
                await ws.send(json.dumps({"type": "hangup"}))
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                    await task
            lateness_s.extend(call.lateness_s)


# --- the levels ---------------------------------------------------------------------------


async def token_for(port: int, name: str) -> str:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        person = await sign_in(client, name)
    return person.headers["Authorization"].removeprefix("Bearer ")


async def speak(call: VoiceCall, clips: dict[str, Clip], wanted: int, offset: int) -> list[Turn]:
    """Say the plan in order until `wanted` turns got their reply audio. A turn that got
    none stays in the results (it is reported) and the person says the next thing, as
    someone unanswered would, at most a quarter of `wanted` times more."""
    turns: list[Turn] = []
    for text in plan(wanted + wanted // 4 + 1, offset):
        if sum(1 for t in turns if t.latency_s is not None) >= wanted:
            break
        turns.append(await call.turn(clips[text]))
    return turns


async def one_call(port: int, clips: dict[str, Clip], wanted: int, lateness_s: list[float]) -> list[Turn]:
    """One person, one call at a time: a long run (the 400-turn count of unheard utterances)
    is said over several calls of TURNS_PER_CALL_MAX, because the product ends a call after
    15 minutes (`CallLimits.duration_max_s`), and each new call warms up again."""
    token, turns = await token_for(port, "voice-bench-solo"), list[Turn]()
    while (answered := sum(1 for t in turns if t.latency_s is not None)) < wanted:
        async with voice_call(port, token, "solo", lateness_s) as call:
            await call.turn(clips[WARM_UP[0]])
            turns += await speak(call, clips, min(TURNS_PER_CALL_MAX, wanted - answered), offset=len(turns))
        if len(turns) - sum(1 for t in turns if t.latency_s is not None) > wanted // 4 + 1:
            break  # as `speak` gives up: too many turns went unanswered to go on
    return turns


Dial = Callable[[int, str, str, list[float]], contextlib.AbstractAsyncContextManager[VoiceCall]]


async def level(
    dial: Dial, port: int, clips: dict[str, Clip], calls: int, wanted: int, prefix: str, lateness_s: list[float]
) -> list[Turn]:
    """`calls` people, each on its own call through `dial` (the speaker door's `voice_call`,
    or another door's), each warms up, waits for the others, then starts its turns STAGGER_S
    after the previous call's, so the first utterances of all calls end within a second or
    two. Each person starts at a different place in the plan."""
    barrier = asyncio.Barrier(calls)
    turns: list[Turn] = []

    async def person(index: int) -> None:
        tag = f"{prefix}-{index}"
        async with dial(port, await token_for(port, f"voice-bench-{tag}"), tag, lateness_s) as call:
            await call.turn(clips[WARM_UP[0]])
            await barrier.wait()
            await asyncio.sleep(index * STAGGER_S)
            turns.extend(await speak(call, clips, wanted, offset=1 + 3 * index))

    async with asyncio.TaskGroup() as group:
        for index in range(calls):
            group.create_task(person(index))
    return turns


def plan(count: int, offset: int = 0) -> list[str]:
    return [SAYINGS[(offset + i) % len(SAYINGS)][0] for i in range(count)]


# --- the server's timeline ------------------------------------------------------------------


def server_stages(events: list[dict[str, Any]], turn: Turn, until: float) -> tuple[dict[str, float], bool]:
    """When each stage of this turn's reply left its processor (absolute times), from the
    call's frame timeline, and whether the user turn was stopped before its transcript
    came; a stage that is not found is left out."""
    window = [e for e in events if turn.ended_at <= e["t"] < until]

    def first(kind: str, after: float | None, source: str = "") -> dict[str, Any] | None:
        if after is None:
            return None
        return next((e for e in window if e["kind"] == kind and e["t"] >= after and source in e["source"]), None)

    def last(kind: str, before: float | None) -> dict[str, Any] | None:
        if before is None:
            return None
        return next((e for e in reversed(window) if e["kind"] == kind and e["t"] <= before), None)

    def at(event: dict[str, Any] | None) -> float | None:
        return None if event is None else float(event["t"])

    vad = at(first("VADUserStoppedSpeakingFrame", turn.ended_at))
    transcript = at(first("TranscriptionFrame", vad))
    text = at(first("AggregatedTextFrame", transcript))
    # When Whisper is late, Pipecat stops the user turn anyway after its user_turn_stop_timeout
    # (5 s), with no text and so no LLM context; the turn that answers is the one stopped
    # after the transcript came, so it is found backwards from the reply. Its end is the
    # LLM context handed to Ava (the aggregator pushes it just before UserStoppedSpeaking).
    turn_end = at(last("LLMContextFrame", text))
    marks = {
        "vad_stop": vad,
        "transcript": transcript,
        "turn_end": turn_end,
        "text": text,
        "tts_audio": at(first("TTSAudioRawFrame:tts", text)),
        "first_write": at(first("BotStartedSpeakingFrame", text)),
    }
    metrics = {
        "whisper_s": first("ProcessingMetricsData", vad, "Whisper"),
        "turn_ttfb_s": first("TTFBMetricsData", turn_end, "AvaVoiceAgent"),
        "espeak_ttfb_s": first("TTFBMetricsData", text, "TTSService"),  # whichever voice
    }
    stages = {name: value for name, value in marks.items() if value is not None}
    stages.update({name: float(e["detail"]) for name, e in metrics.items() if e is not None})
    stopped_early = (
        vad is not None
        and transcript is not None
        and any(e["kind"] == "UserStoppedSpeakingFrame" and vad <= e["t"] < transcript for e in window)
    )
    return stages, stopped_early


def attach_timelines(turns: list[Turn], timelines: dict[str, list[dict[str, Any]]]) -> None:
    by_call: dict[str, list[Turn]] = {}
    for turn in turns:
        by_call.setdefault(turn.call, []).append(turn)
    for call, call_turns in by_call.items():
        events = sorted(timelines.get(call, []), key=lambda e: float(e["t"]))
        call_turns.sort(key=lambda t: t.started_at)
        for turn, after in zip(call_turns, [*call_turns[1:], None], strict=True):
            turn.server, turn.stopped_early = server_stages(events, turn, after.started_at if after else float("inf"))


# Rows of the breakdown: (label, from, to); times are Turn fields or server stages.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("end of speech -> VAD stop (Silero, stop_secs)", "ended", "vad_stop"),
    ("VAD stop -> final transcript (Whisper in the server)", "vad_stop", "transcript"),
    ("VAD stop -> user turn ends (speech timeout, or Whisper if later)", "vad_stop", "turn_end"),
    ("user turn ends -> reply text (the turn: DB + offline model)", "turn_end", "text"),
    ("reply text -> first TTS audio frame", "text", "tts_audio"),
    ("first TTS audio -> first audio write (output transport)", "tts_audio", "first_write"),
    ("first audio write -> first reply byte at the client", "first_write", "first_byte"),
    ("first reply byte -> first non-silent reply byte", "first_byte", "first_loud"),
    ("**end of speech -> first non-silent reply byte**", "ended", "first_loud"),
)
SHARES: tuple[tuple[str, str, str], ...] = (
    ("final transcript -> first audio write (server-side)", "transcript", "first_write"),
    ("user turn ends -> first audio write (server-side)", "turn_end", "first_write"),
    ("user transcript event -> first non-silent byte (client proxy)", "transcript_event", "first_loud"),
)
METRICS: tuple[tuple[str, str], ...] = (
    ("Pipecat metric: Whisper processing", "whisper_s"),
    ("Pipecat metric: Ava's turn TTFB", "turn_ttfb_s"),
    ("Pipecat metric: TTS TTFB", "espeak_ttfb_s"),
)


def moment(turn: Turn, name: str) -> float | None:
    client = {
        "ended": turn.ended_at,
        "first_byte": turn.first_byte_at,
        "first_loud": turn.first_loud_at,
        "transcript_event": turn.transcript_at,
    }
    return client[name] if name in client else turn.server.get(name)


def spans_s(turns: Iterable[Turn], start: str, end: str) -> list[float]:
    spans = []
    for turn in turns:
        a, b = moment(turn, start), moment(turn, end)
        if a is not None and b is not None:
            spans.append(b - a)
    return spans


# --- the floor ----------------------------------------------------------------------------


# The sequential floor's wait after the VAD's stop: one fixed speech timeout for every
# utterance, whatever the server is configured with.
TODAY_SPEECH_TIMEOUT_S = 0.3


@dataclass(frozen=True, slots=True)
class Floor:
    vad_stop_s: float
    speech_timeout_s: float  # the server's wait when the words sound unfinished
    finished_timeout_s: float  # ... and when they sound finished (voice.turn_end)
    whisper_s: dict[str, float]  # by utterance, the product's recogniser
    whisper_full_s: dict[str, float]  # by utterance, Whisper padded to 30 s (the floor's)
    espeak_s: dict[str, float]  # by first reply sentence: synthesis + resampling, first part
    tts_whole_s: dict[str, float]  # the same for the whole sentence (today's floor)
    # By first reply sentence: espeak-ng's silence before the voice. Reported, not added: the
    # transport sends 40 ms chunks, so the first one already carries voice and is the first
    # non-silent frame at the client.
    lead_in_s: dict[str, float]

    def wait_s(self, turn: Turn) -> float:
        """The server's wait after the VAD's stop for this utterance, as its words sound."""
        from voice.turn_end import sounds_finished

        return self.finished_timeout_s if sounds_finished(turn.clip.text) else self.speech_timeout_s

    def of(self, turn: Turn) -> float | None:
        if not turn.replies or turn.clip.text not in self.whisper_s:
            return None
        first = turn.replies[0][0]
        return self.vad_stop_s + max(self.wait_s(turn), self.whisper_s[turn.clip.text]) + self.espeak_s[first]

    def today(self, turn: Turn) -> float | None:
        """Today's sequential floor: the same sum with Whisper through its full 30 s window,
        the whole first sentence, and one fixed speech timeout."""
        if not turn.replies or turn.clip.text not in self.whisper_full_s:
            return None
        first = turn.replies[0][0]
        whisper = self.whisper_full_s[turn.clip.text]
        return self.vad_stop_s + max(TODAY_SPEECH_TIMEOUT_S, whisper) + self.tts_whole_s[first]

    def in_server(self, turn: Turn) -> float | None:
        """The same sum with this turn's own engine times as Pipecat timed them in the
        server: immune to the machine's load changing between the call and the floor."""
        whisper, espeak = turn.server.get("whisper_s"), turn.server.get("espeak_ttfb_s")
        if whisper is None or espeak is None:
            return None
        return self.vad_stop_s + max(self.wait_s(turn), whisper) + espeak


def whisper_time_s(clip: Clip, vad_stop_s: float, *, full_window: bool = False, window_min_s: int = 15) -> float:
    """Whisper on the segment the server's STT would hand it: the mean of FLOOR_REPEATS,
    through the server's window (`window_min_s`, VOICE_WHISPER_WINDOW_MIN_S) or
    (`full_window`) the 30 s one the sequential floor uses."""
    # Loads the model on first use, here only.
    from voice.engines.whisper import transcribe_full_window, transcribe_pcm16

    def transcribe(segment: bytes) -> str:
        if full_window:
            return transcribe_full_window(segment)
        return transcribe_pcm16(segment, min_window_s=window_min_s)

    segment = bytes(int(PRE_ROLL_S * RATE) * 2) + clip.speech + bytes(int((vad_stop_s + STT_PADDING_S) * RATE) * 2)
    times = []
    for _ in range(FLOOR_REPEATS):
        started = time.perf_counter()
        transcribe(segment)
        times.append(time.perf_counter() - started)
    return statistics.mean(times)


async def espeak_time_s(text: str, emotion: str | None, voice: str = "espeak") -> tuple[float, float, float]:
    """(synthesis + resampling of the first part, of the whole sentence, lead-in) for a reply
    sentence, as the server's TTS gets it, with the server's voice (VOICE_TTS: "neural" or
    "espeak"). The neural voice sends a long sentence's first clause first; until it did,
    the whole sentence came before any audio (today's floor takes that time)."""
    from voice.engines.hibari import HIBARI_RATE, speak_neural

    async def parts(ssml: str) -> AsyncIterator[tuple[bytes, int]]:
        if voice == "neural":
            async for part, _ in speak_neural(ssml):
                yield part, HIBARI_RATE
        else:
            yield await synthesize(ssml)

    ssml = await strip_stray_tags(await emotion_to_ssml(text, text_type_for(emotion)), "")
    async for _ in parts(ssml):  # the first synthesis in a process loads the voice; not counted
        pass
    firsts, wholes, audio = [], [], b""
    for _ in range(FLOOR_REPEATS):
        started, first, audio = time.perf_counter(), None, b""
        async for pcm, rate in parts(ssml):
            audio += await to_16k(pcm, rate)
            first = first if first is not None else time.perf_counter() - started
        firsts.append(first if first is not None else float("nan"))
        wholes.append(time.perf_counter() - started)
    frames = [audio[i : i + FRAME_BYTES] for i in range(0, len(audio), FRAME_BYTES)]
    lead_in = next((i for i, frame in enumerate(frames) if rms(frame) > SILENT_RMS), 0) * FRAME_S
    return statistics.median(firsts), statistics.median(wholes), lead_in


async def measure_floor(clips: dict[str, Clip], turns: list[Turn], config: dict[str, Any]) -> Floor:
    vad_stop_s = float(config["vad_stop_s"])
    window_min_s = int(config.get("whisper_window_min_s", 15))  # the server's (15 before the setting)
    # The model's first transcription in a process pays for loading and allocations (the
    # server's is paid by each call's warm-up turn); not counted.
    await asyncio.to_thread(whisper_time_s, next(iter(clips.values())), vad_stop_s)
    whisper, whisper_full = {}, {}
    for text, clip in clips.items():  # each clip through both recognisers, back to back
        whisper[text] = await asyncio.to_thread(whisper_time_s, clip, vad_stop_s, window_min_s=window_min_s)
        whisper_full[text] = await asyncio.to_thread(whisper_time_s, clip, vad_stop_s, full_window=True)
    espeak: dict[str, float] = {}
    whole: dict[str, float] = {}
    lead_in: dict[str, float] = {}
    for turn in turns:
        if turn.replies and turn.replies[0][0] not in espeak:
            text, emotion = turn.replies[0]
            voice = str(config.get("voice_tts", "espeak"))
            espeak[text], whole[text], lead_in[text] = await espeak_time_s(text, emotion, voice)
    speech_timeout_s = float(config["speech_timeout_s"])
    finished_timeout_s = float(config.get("finished_timeout_s", speech_timeout_s))
    return Floor(vad_stop_s, speech_timeout_s, finished_timeout_s, whisper, whisper_full, espeak, whole, lead_in)


# --- the report ---------------------------------------------------------------------------


def ms(value: float) -> str:
    return "-" if value != value else f"{value:.0f}"  # NaN: nothing was measured


def ratio(a: float, b: float) -> str:
    return "-" if a != a or b != b else f"{a / b:.2f}x"


def verdict(value_ms: float, target_ms: float) -> str:
    if value_ms != value_ms:
        return "not measured"
    return "met" if value_ms <= target_ms else "**missed**"


def latencies_s(turns: list[Turn]) -> list[float]:
    return [t.latency_s for t in turns if t.latency_s is not None]


def summary_table(solo: list[Turn], crowd: list[Turn], floor: Floor, calls: int) -> list[str]:
    solo_p50, solo_p95 = quantiles_ms(latencies_s(solo))
    crowd_p50, crowd_p95 = quantiles_ms(latencies_s(crowd))
    # The server's share starts when the pipeline has decided the person finished: the later
    # of the final transcript and the speech timeout (a configured wait, like stop_secs).
    # While Whisper was slower than the timeout the two were the same moment.
    share_p50, share_p95 = quantiles_ms(spans_s(solo, "turn_end", "first_write"))
    from_transcript_p50, from_transcript_p95 = quantiles_ms(spans_s(solo, "transcript", "first_write"))
    proxy_p50, proxy_p95 = quantiles_ms(spans_s(solo, "transcript_event", "first_loud"))
    alone = [f for f in (floor.of(t) for t in solo) if f is not None]
    inside = [f for f in (floor.in_server(t) for t in solo) if f is not None]
    alone_p50, alone_p95 = quantiles_ms(alone)
    today_p50, today_p95 = quantiles_ms([f for f in (floor.today(t) for t in solo) if f is not None])
    today_ratio = solo_p50 / today_p50 if today_p50 == today_p50 and solo_p50 == solo_p50 else float("nan")
    inside_p50, inside_p95 = quantiles_ms(inside)
    share_n, proxy_n = (
        len(spans_s(solo, "turn_end", "first_write")),
        len(spans_s(solo, "transcript_event", "first_loud")),
    )
    return [
        "| measurement | utterances | p50 ms | p95 ms | target | |",
        "|---|---:|---:|---:|---|---|",
        f"| end of speech -> first reply audio, 1 call | {len(latencies_s(solo))} | {ms(solo_p50)} "
        f"| {ms(solo_p95)} | p50 <= {TARGET_P50_MS:.0f} ms, p95 <= {TARGET_P95_MS:.0f} ms "
        f"| {verdict(max(solo_p50 / TARGET_P50_MS, solo_p95 / TARGET_P95_MS), 1.0)} |",
        f"| server's share: user turn ends (transcript in, speech timeout over) -> first audio write "
        f"(server-side), 1 call | {share_n} | {ms(share_p50)} | {ms(share_p95)} "
        f"| p95 <= {TARGET_SERVER_P95_MS:.0f} ms | {verdict(share_p95, TARGET_SERVER_P95_MS)} |",
        f"| the same from the final transcript (includes the rest of the speech timeout) | {share_n} "
        f"| {ms(from_transcript_p50)} | {ms(from_transcript_p95)} | | |",
        # The transcript event leaves when Whisper finishes, usually inside the configured wait
        # after the VAD's stop, which the proxy therefore includes: a cross-check, not the target.
        f"| server's share, client proxy: user transcript event -> first reply audio, 1 call | {proxy_n} "
        f"| {ms(proxy_p50)} | {ms(proxy_p95)} | (includes the rest of the wait after the VAD's stop) | |",
        f"| end of speech -> first reply audio, {calls} simultaneous calls | {len(latencies_s(crowd))} "
        f"| {ms(crowd_p50)} | {ms(crowd_p95)} | p50 <= {TARGET_CROWD_RATIO}x one call "
        f"({ratio(crowd_p50, solo_p50)}) | {verdict(crowd_p50 / solo_p50, TARGET_CROWD_RATIO)} |",
        f"| baseline floor, engines alone: stop_secs + max(wait, Whisper) + TTS, 1-call turns "
        f"| {len(alone)} | {ms(alone_p50)} | {ms(alone_p95)} | | |",
        f"| baseline floor, the same sum with each turn's engine times inside the server | {len(inside)} "
        f"| {ms(inside_p50)} | {ms(inside_p95)} | | |",
        f"| 1 call / floor (engines alone; in the server) | | {ratio(solo_p50, alone_p50)}; "
        f"{ratio(solo_p50, inside_p50)} | {ratio(solo_p95, alone_p95)}; {ratio(solo_p95, inside_p95)} | | |",
        f"| today's sequential floor: the same sum with Whisper through its 30 s window, engines alone "
        f"| {len(alone)} | {ms(today_p50)} | {ms(today_p95)} | | |",
        f"| 1 call / today's sequential floor | | {ratio(solo_p50, today_p50)} | {ratio(solo_p95, today_p95)} "
        f"| p50 <= {TARGET_FLOOR_RATIO}x | {verdict(today_ratio, TARGET_FLOOR_RATIO)} |",
    ]


def breakdown_table(solo: list[Turn], crowd: list[Turn], calls: int) -> list[str]:
    lines = [
        f"| stage | 1 call p50 ms | 1 call p95 ms | {calls} calls p50 ms | {calls} calls p95 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, start, end in (*STAGES, *SHARES):
        cells = [ms(v) for turns in (solo, crowd) for v in quantiles_ms(spans_s(turns, start, end))]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for label, name in METRICS:
        cells = [
            ms(v) for turns in (solo, crowd) for v in quantiles_ms([t.server[name] for t in turns if name in t.server])
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def floor_table(solo: list[Turn], floor: Floor) -> list[str]:
    answered = [t for t in solo if t.replies]
    firsts = [t.replies[0][0] for t in answered]

    def gaps(floor_of: Callable[[Turn], float | None]) -> list[float]:
        return [t.latency_s - f for t in solo if t.latency_s is not None and (f := floor_of(t)) is not None]

    rows = [
        ("VAD stop_secs (configured)", [floor.vad_stop_s]),
        (
            "wait after the VAD stop (configured; runs alongside Whisper): words finished / unfinished",
            [floor.wait_s(t) for t in answered],
        ),
        ("today's fixed speech timeout (today's floor: the same for every utterance)", [TODAY_SPEECH_TIMEOUT_S]),
        (
            "Whisper tiny.en on the same segments, alone in this process",
            [floor.whisper_s[t.clip.text] for t in answered],
        ),
        (
            "Whisper tiny.en through its 30 s window (today's floor), same segments, alone",
            [floor.whisper_full_s[t.clip.text] for t in answered],
        ),
        ("Whisper tiny.en in the server, same turns (Pipecat processing metric)", _server(solo, "whisper_s")),
        ("TTS + resampling, first part of the first reply sentence, alone", [floor.espeak_s[f] for f in firsts]),
        ("TTS + resampling, the whole first sentence (today's floor), alone", [floor.tts_whole_s[f] for f in firsts]),
        ("TTS in the server, same turns (Pipecat TTFB metric)", _server(solo, "espeak_ttfb_s")),
        (
            "TTS lead-in (silence before the voice; inside the first 40 ms chunk, not added)",
            [floor.lead_in_s[f] for f in firsts],
        ),
        ("**floor, engines alone** = stop_secs + max(timeout, Whisper) + TTS", _values(floor.of, solo)),
        ("**floor, engines in the server** (the same sum, per turn)", _values(floor.in_server, solo)),
        ("**today's sequential floor** (the same sum, Whisper through 30 s)", _values(floor.today, solo)),
        ("measured, 1 call", latencies_s(solo)),
        ("measured - floor (engines alone), per turn", gaps(floor.of)),
        ("measured - floor (engines in the server), per turn: the product and the pipeline", gaps(floor.in_server)),
    ]
    lines = ["| component | p50 ms | p95 ms |", "|---|---:|---:|"]
    lines += [f"| {label} | {ms(quantiles_ms(v)[0])} | {ms(quantiles_ms(v)[1])} |" for label, v in rows]
    return lines


def _server(turns: list[Turn], name: str) -> list[float]:
    return [t.server[name] for t in turns if name in t.server]


def _values(of: Callable[[Turn], float | None], turns: list[Turn]) -> list[float]:
    return [v for v in (of(t) for t in turns) if v is not None]


def turns_table(turns: list[Turn]) -> list[str]:
    lines = [
        "| call | said | heard | reply (first sentence) | ms to reply | VAD stop | transcript | turn end "
        "| reply text | TTS audio | write | proxy | note |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t in turns:
        rel = [moment(t, name) for name in ("vad_stop", "transcript", "turn_end", "text", "tts_audio", "first_write")]
        cells = [ms((v - t.ended_at) * 1000) if v is not None else "-" for v in rel]
        proxy = spans_s([t], "transcript_event", "first_loud")
        notes = [t.problem or ("" if t.answered else "unexpected answer")]
        notes += ["stopped before transcript" if t.stopped_early else "", f"{t.clears} clear" if t.clears else ""]
        note = "; ".join(n for n in notes if n)
        reply = t.replies[0][0] if t.replies else ""
        latency = ms(t.latency_s * 1000) if t.latency_s is not None else "-"
        lines.append(
            f"| {t.call} | {t.clip.text} | {t.heard} | {reply} | {latency} | " + " | ".join(cells)
            + f" | {ms(proxy[0] * 1000) if proxy else '-'} | {note} |"
        )  # fmt: skip
    return lines


def collector_line(turns: list[Turn], passes: list[dict[str, float]]) -> str:
    """The server's garbage collector while the levels ran: a pass of the oldest
    generation stops the event loop for as long as it walks the heap (the server freezes
    what startup built, main.freeze_startup_heap, so that this is short)."""
    first = min((t.started_at for t in turns), default=0.0)
    during = [p for p in passes if p["t"] >= first]
    parts = []
    for generation in (2, 1):
        of = [p["s"] for p in during if p["generation"] == generation]
        longest = f", longest {max(of) * 1000:.1f} ms" if of else ""
        parts.append(f"{len(of)} of generation {generation}{longest}")
    shares = [(moment(t, "turn_end"), moment(t, "first_write")) for t in turns]
    spans = [(a, b) for a, b in shares if a is not None and b is not None]
    inside = sum(1 for p in during if p["generation"] >= 1 and any(a <= p["t"] <= b for a, b in spans))
    return (
        f"The server's garbage collector while the levels ran: {'; '.join(parts)}; "
        f"{inside} of those began inside a turn's server share."
    )


def report(solo: list[Turn], crowd: list[Turn], floor: Floor, context: dict[str, Any]) -> str:
    calls = context["calls"]
    everything = solo + crowd
    silent = sum(t.silent_frames_before for t in everything)
    failed = sum(1 for t in everything if t.problem or not t.answered)
    early = {name: sum(1 for t in turns if t.stopped_early) for name, turns in (("1 call", solo), ("calls", crowd))}
    clears = sum(t.clears for t in everything)
    observed = bool(context["config"]["observer"])
    lines = [
        f"## Voice latency ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Offline engines ({context['config']['adapters']['speech']}) and model "
        f"({context['config']['adapters']['model']}); VAD stop_secs {floor.vad_stop_s} s, then a wait of "
        f"{floor.finished_timeout_s} s when the words sound finished, {floor.speech_timeout_s} s when not; "
        f"server frame observer {'on' if context['config']['observer'] else 'off'}. "
        f"1 call: {len(solo)} sequential turns ({len(latencies_s(solo))} with reply audio); then {calls} "
        f"simultaneous calls (different people), {len(crowd)} turns in all ({len(latencies_s(crowd))} with "
        "reply audio); one warm-up turn per call, not counted.",
        "",
        f"Machine: {os.cpu_count()} cores ({cpu_model()}), {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, PostgreSQL {context['pg_version']} ({context['pg_source']}). "
        f"Load average {context['load_before']:.2f} before, {context['load_after']:.2f} after; "
        f"whole run {context['elapsed_s']:.0f} s. 1 call: {context['cpu']['solo']}; floor: "
        f"{context['cpu']['floor']}; {calls} calls: {context['cpu']['crowd']}. Client microphone frames late "
        f"against their schedule: p99 {context['lateness_p99_ms']:.1f} ms, max {context['lateness_max_ms']:.1f} ms.",
        "",
        *summary_table(solo, crowd, floor, calls),
        "",
        "Where the time goes (server-side stages from the frame observer, on the clients' clock):",
        "",
        *breakdown_table(solo, crowd, calls),
        "",
        "Baseline floor: the configured waits plus the engines, alone in the driver process between the "
        "levels (server idle), and as Pipecat timed them inside the server on the same turns:",
        "",
        *floor_table(solo, floor),
        "",
        f"Silent binary frames before the first non-silent reply frame, all turns: {silent}. Turns without "
        f"the expected reply: {failed}. `clear` events during a reply (barge-ins): {clears}. User turns "
        f"Pipecat stopped before their transcript came (its 5 s user_turn_stop_timeout): "
        + (f"{early['1 call']} at 1 call, {early['calls']} at {calls} calls." if observed else "not observed."),
        "",
        collector_line(everything, context["collections"]),
        "",
        "Every turn (ms after the end of speech; proxy = user transcript event -> first non-silent byte):",
        "",
        *turns_table(everything),
    ]
    return "\n".join(lines) + "\n"


# --- the run ------------------------------------------------------------------------------


def voice_server(
    database_url: str, work: Path, *, observe: bool
) -> contextlib.AbstractAsyncContextManager[tuple[int, int]]:
    """Start `bench.voice_server` on a socket bound here; yields its port and pid."""
    arguments = ["--database-url", database_url, "--state-dir", str(work / "state")]
    if not observe:
        arguments.append("--no-observer")
    return serving_module("bench.voice_server", arguments, log_path=work / "server.log", backlog=64)


async def with_cpu(watched: Watched, work: Callable[[], Any]) -> tuple[list[Turn], str]:
    """Run a level; also how long it took, the load after it, and how busy the server (and
    PostgreSQL) was meanwhile, in cores."""
    server_before, database_before = watched.cpu_s()
    started = time.perf_counter()
    turns: list[Turn] = await work()
    wall_s = time.perf_counter() - started
    server_after, database_after = watched.cpu_s()
    server = (server_after - server_before) / wall_s
    database = (database_after - database_before) / wall_s
    usage = f"{wall_s:.0f} s, load average {os.getloadavg()[0]:.2f} after, server {server:.2f} cores"
    return turns, usage + ("" if database != database else f" + PostgreSQL {database:.2f}")


async def measure(
    args: argparse.Namespace, admin_url: str, pg_source: str, work: Path
) -> tuple[list[Turn], list[Turn], Floor, dict[str, Any]]:
    clips = {text: await make_clip(text, expected) for text, expected in (*SAYINGS, WARM_UP)}
    async with (
        fresh_database(admin_url, 40) as (database_url, pg_version),
        voice_server(database_url, work, observe=not args.no_observer) as (port, pid),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
    ):
        config = (await client.get("/bench/voice/config")).raise_for_status().json()
        postmaster = await postmaster_pid(database_url) if pg_source == "embedded" else None
        watched = Watched(server=pid, postmaster=postmaster)
        lateness_s: list[float] = []
        solo, solo_cpu = await with_cpu(watched, lambda: one_call(port, clips, args.utterances, lateness_s))
        # The floor is measured between the levels, next to the single call in time (the
        # machine's load drifts) and while the server is idle.
        started = time.perf_counter()
        floor = await measure_floor({t.clip.text: t.clip for t in solo}, solo, config)
        floor_s = time.perf_counter() - started
        crowd, crowd_cpu = await with_cpu(
            watched, lambda: level(voice_call, port, clips, args.calls, args.per_call, "crowd", lateness_s)
        )
        timelines = (await client.get("/bench/voice/timelines")).raise_for_status().json()
        attach_timelines(solo + crowd, timelines)
        collections = (await client.get("/bench/voice/collections")).raise_for_status().json()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_name(args.out.stem + "_timelines.json").write_text(json.dumps(timelines, indent=1))
    context = {"config": config, "pg_version": pg_version, "pg_source": pg_source, "calls": args.calls,
               "cpu": {"solo": solo_cpu, "crowd": crowd_cpu, "floor": f"{floor_s:.0f} s"},
               "lateness_s": lateness_s, "collections": collections}  # fmt: skip
    return solo, crowd, floor, context


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.voice_latency",
        description="End of speech -> first reply audio over the partner speaker door, next to an engine floor.",
    )
    parser.add_argument("--utterances", type=int, default=20, help="measured turns on the single call")
    parser.add_argument("--calls", type=int, default=4, help="simultaneous calls at the second level")
    parser.add_argument("--per-call", type=int, default=5, help="measured turns per simultaneous call")
    parser.add_argument("--no-observer", action="store_true", help="serve without the frame timeline")
    parser.add_argument("--out", type=Path, default=RESULTS / "voice_latency.md")
    return parser.parse_args()


async def run(args: argparse.Namespace, admin_url: str, pg_source: str) -> int:
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    with logs_kept_on_failure("avagenc-bench-voice-") as work:
        solo, crowd, floor, context = await measure(args, admin_url, pg_source, work)
    lateness_s = sorted(context.pop("lateness_s")) or [0.0]
    context.update(
        elapsed_s=time.perf_counter() - started,
        load_before=load_before,
        load_after=os.getloadavg()[0],
        lateness_p99_ms=lateness_s[int(0.99 * (len(lateness_s) - 1))] * 1000,
        lateness_max_ms=lateness_s[-1] * 1000,
    )
    text = report(solo, crowd, floor, context)
    print(text)
    write(args.out, text)
    failed = [t for t in solo + crowd if t.problem or not t.answered]
    if failed:
        print(f"{len(failed)} turns got no reply or the wrong one; see the table", file=sys.stderr)
    short = len(latencies_s(solo)) < args.utterances or len(latencies_s(crowd)) < args.calls * args.per_call
    if short:
        print("too few turns got a reply for the levels asked for; the numbers are not valid", file=sys.stderr)
    return 1 if short else 0


def main() -> None:
    args = parse_args()
    exit_with(lambda admin_url, pg_source: run(args, admin_url, pg_source), loop_factory=fast_loop())


if __name__ == "__main__":
    main()
