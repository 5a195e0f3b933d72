"""Fake Google Speech-to-Text v2 and Text-to-Speech v1 streaming, served over real gRPC on
127.0.0.1, that hear and speak for real and answer at a latency model's pace.

One `grpc.aio` server carries both services (`google.cloud.speech.v2.Speech/
StreamingRecognize` and `google.cloud.texttospeech.v1.TextToSpeech/StreamingSynthesize`),
their messages read and written with the installed google-cloud packages' own types, so
the product's adapters (voice.engines.google) talk to it exactly as they would to Google
once GOOGLE_STT_ENDPOINT / GOOGLE_TTS_ENDPOINT name it.

Recognition: the offline Whisper the product already ships hears the audio (resampled to
16 kHz). An utterance ends where the audio goes quiet; its final result comes the
recogniser's final-result time (`latency.GOOGLE_STT_FINAL`, drawn per utterance) after the
last loud chunk arrived, unless the person speaks again first, as Google's endpointer
waits out a pause. Interim results come while the person speaks (one per
`INTERIM_EVERY_S` of speech), each Whisper's reading of the audio so far, and one more
after they stop: the words up to the pause, the recogniser's interim time
(`latency.GOOGLE_STT_INTERIM_AFTER_SPEECH`, drawn per utterance, an assumption) after the
last loud chunk, unless they speak again first; it is the final's reading of the same audio
(one Whisper pass for both), so its words are the final's. Every result carries
`result_end_offset`, as Google's do: how far into the stream's audio it reaches (the audio
it read; for the interim after speech, all the quiet received until it is sent, which
holds no words). `plain_interims` writes interims as bare lower-case words (the final keeps
Whisper's case and punctuation), for what a recogniser that punctuates only its finals
would send.

Synthesis: espeak-ng speaks each input (text, or Chirp 3 HD markup whose `[pause ...]`
tags become silences) at the stream's speaking rate, resampled to the rate asked for; the
first audio leaves at the first-byte time (`latency.GOOGLE_TTS_STREAMING_FIRST_BYTE`)
after the input arrived, the rest as fast as it is made. Like Google, only Chirp 3 HD and
Journey voices stream, and a speaking rate outside [0.25, 2.0] is refused.

Stateful and honest: every stream is logged (`recognitions`, `syntheses`) with what it
received and sent and whether the client cancelled it; `fail_next_recognition` /
`fail_next_synthesis` end the next stream with a gRPC error after a given number of
responses, for the adapters' contract tests (tests/contract).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import grpc
import numpy as np
import soxr
from google.cloud.speech_v2.types import cloud_speech
from google.cloud.texttospeech_v1.types import cloud_tts

from bench.cloudsim.latency import GOOGLE_TTS_STREAMING_SPEED, LogNormal

# PCM16 at or below this RMS is quiet (the VAD's own notion of silence is close to it).
QUIET_RMS = 300.0
INTERIM_EVERY_S = 0.6
WHISPER_RATE = 16_000
TTS_DEFAULT_RATE = 24_000
TTS_CHUNK_S = 0.1  # Google sends audio in pieces of roughly this length
# Chirp 3 HD's pause tags and the silences they stand for in the fake.
PAUSE_TAGS = {"[pause short]": 150, "[pause]": 300, "[pause long]": 600}
_PAUSE = re.compile(r"\[pause(?: short| long)?\]")
_WORD = re.compile(r"\w+(?:'\w+)?")
_STREAMING_VOICES = ("chirp3-hd", "chirp-hd", "journey")
_AUDIO_MAX_BYTES = 32 * 1024 * 1024  # ~17 minutes at 16 kHz: past it the stream is refused
_PCM = (cloud_tts.AudioEncoding.PCM, cloud_tts.AudioEncoding.LINEAR16)

# The latencies when a test wants none (pacing belongs to the bench).
NO_WAIT = LogNormal(p50_s=1e-9, p95_s=2e-9)

Recognise = Callable[[bytes, str], Awaitable[str]]  # PCM16 at 16 kHz, BCP-47 -> words
Synthesise = Callable[[str, float], Awaitable[tuple[bytes, int]]]  # markup, rate -> PCM16, Hz


async def whisper_recognise(pcm: bytes, language: str) -> str:
    """The product's offline recogniser, in a thread (as the call door runs it)."""
    from voice.engines.whisper import RECOGNISERS, TINY_EN, transcribe_pcm16

    recogniser = RECOGNISERS.get(language.split("-")[0].lower(), TINY_EN)
    return await asyncio.to_thread(transcribe_pcm16, pcm, recogniser)


async def espeak_synthesise(markup: str, speaking_rate: float) -> tuple[bytes, int]:
    """The product's offline espeak-ng voice, given the markup as SSML it understands."""
    from xml.sax.saxutils import escape

    from voice.engines.espeak import synthesize

    parts = []
    for piece in re.split(f"({_PAUSE.pattern})", markup):
        if piece in PAUSE_TAGS:
            parts.append(f'<break time="{PAUSE_TAGS[piece]}ms"/>')
        elif piece.strip():
            parts.append(escape(piece))
    ssml = f'<speak><prosody rate="{round(speaking_rate * 100)}%">{"".join(parts)}</prosody></speak>'
    return await synthesize(ssml)


@dataclass(frozen=True, slots=True)
class Failure:
    """End the next stream with this gRPC status after `after` responses."""

    code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE
    message: str = "simulated failure"
    after: int = 0


@dataclass(slots=True)
class Recognition:
    """One StreamingRecognize as the fake saw it."""

    recognizer: str = ""
    language: str = ""
    model: str = ""
    sample_rate: int = 0
    audio_bytes: int = 0
    interims: list[str] = field(default_factory=list)
    finals: list[str] = field(default_factory=list)
    final_waits_s: list[float] = field(default_factory=list)  # last loud chunk -> final sent
    interim_waits_s: list[float] = field(default_factory=list)  # last loud chunk -> interim after speech sent
    cancelled: bool = False
    failed: bool = False


@dataclass(slots=True)
class Synthesis:
    """One StreamingSynthesize as the fake saw it, and what Google bills for it."""

    voice: str = ""
    language: str = ""
    speaking_rate: float = 0.0
    sample_rate: int = 0
    inputs: list[str] = field(default_factory=list)
    audio_bytes: int = 0
    chunks: int = 0
    first_byte_s: float | None = None  # first input in -> first audio out
    cancelled: bool = False
    failed: bool = False

    @property
    def characters(self) -> int:
        """What Google bills (docs/money.md#voice-seconds): the characters of the inputs
        it received, pause tags included, unless it refused the stream (ended it with an
        error) before any audio."""
        if self.failed and not self.chunks:
            return 0
        return sum(len(text) for text in self.inputs)


@dataclass(slots=True)
class _Utterance:
    audio: bytearray = field(default_factory=bytearray)
    speech_s: float = 0.0  # for the interim cadence
    interims_due: int = 1
    closed: bool = False  # its final is out (or going): no interim may follow it
    reach_s: float = 0.0  # how far into the stream's audio the final's reading reaches
    interim_reach_s: float = 0.0  # how far the newest interim sent reached
    interim_running: bool = False


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class SimulatedSpeech:
    """Both fakes on one 127.0.0.1 port: `async with SimulatedSpeech() as speech`, then
    point the adapters at `speech.endpoint`."""

    stt_final: LogNormal = NO_WAIT
    stt_interim_after: LogNormal = NO_WAIT
    plain_interims: bool = False
    tts_first_byte: LogNormal = NO_WAIT
    tts_speed: float = GOOGLE_TTS_STREAMING_SPEED  # audio seconds sent per second after the first
    recognise: Recognise = whisper_recognise
    synthesise: Synthesise = espeak_synthesise
    seed: int = 28
    recognitions: list[Recognition] = field(default_factory=list)
    syntheses: list[Synthesis] = field(default_factory=list)
    fail_next_recognition: Failure | None = None
    fail_next_synthesis: Failure | None = None

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._server: grpc.aio.Server | None = None
        self._port = 0
        self.streams_open = 0

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "SimulatedSpeech is not started"
        return f"127.0.0.1:{self._port}"

    async def start(self) -> None:
        server = grpc.aio.server()
        handlers = {
            "google.cloud.speech.v2.Speech": {
                "StreamingRecognize": grpc.stream_stream_rpc_method_handler(
                    self._recognize,
                    request_deserializer=cloud_speech.StreamingRecognizeRequest.deserialize,
                    response_serializer=cloud_speech.StreamingRecognizeResponse.serialize,
                )
            },
            "google.cloud.texttospeech.v1.TextToSpeech": {
                "StreamingSynthesize": grpc.stream_stream_rpc_method_handler(
                    self._synthesize,
                    request_deserializer=cloud_tts.StreamingSynthesizeRequest.deserialize,
                    response_serializer=cloud_tts.StreamingSynthesizeResponse.serialize,
                )
            },
        }
        for service, methods in handlers.items():
            server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, methods),))
        self._port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        self._server = server

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=None)
            self._server = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # --- Speech-to-Text -----------------------------------------------------------------

    async def _recognize(
        self,
        requests: AsyncIterator[cloud_speech.StreamingRecognizeRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[cloud_speech.StreamingRecognizeResponse]:
        seen = Recognition()
        self.recognitions.append(seen)
        failure, self.fail_next_recognition = self.fail_next_recognition, None
        out: asyncio.Queue[cloud_speech.StreamingRecognizeResponse | _Refused | None] = asyncio.Queue()
        reader = asyncio.create_task(self._hear(requests, seen, out))
        self.streams_open += 1
        sent = 0
        try:
            while (item := await out.get()) is not None:
                if isinstance(item, _Refused):
                    seen.failed = True
                    await context.abort(item.code, item.message)
                    return
                if failure is not None and sent >= failure.after:
                    seen.failed = True
                    await context.abort(failure.code, failure.message)
                yield item
                sent += 1
        except asyncio.CancelledError:
            seen.cancelled = True
            raise
        finally:
            self.streams_open -= 1
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader

    async def _hear(
        self,
        requests: AsyncIterator[cloud_speech.StreamingRecognizeRequest],
        seen: Recognition,
        out: asyncio.Queue[cloud_speech.StreamingRecognizeResponse | _Refused | None],
    ) -> None:
        """Read the audio, find where each utterance ends, and queue its results."""
        utterance = _Utterance()
        last_loud = 0.0
        pending: asyncio.Task[None] | None = None
        after: asyncio.Task[None] | None = None  # the interim after speech, waiting its time
        tasks: set[asyncio.Task[None]] = set()
        rate = 0
        interim_wanted = False
        try:
            first = True
            async for request in requests:
                if first:
                    first = False
                    config = request.streaming_config
                    if not request.recognizer or not config.config.language_codes:
                        raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "the first request carries the config")
                    decoding = config.config.explicit_decoding_config
                    if decoding.encoding != cloud_speech.ExplicitDecodingConfig.AudioEncoding.LINEAR16:
                        raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "only LINEAR16 is simulated")
                    rate = decoding.sample_rate_hertz or WHISPER_RATE
                    seen.recognizer = request.recognizer
                    seen.language = config.config.language_codes[0]
                    seen.model = config.config.model
                    seen.sample_rate = rate
                    interim_wanted = config.streaming_features.interim_results
                    continue
                audio = request.audio
                seen.audio_bytes += len(audio)
                if seen.audio_bytes > _AUDIO_MAX_BYTES:
                    raise _Refused(grpc.StatusCode.OUT_OF_RANGE, "audio longer than a stream may carry")
                loud = rms_pcm16(audio) > QUIET_RMS
                if loud:
                    # The person (still) speaks: a final still waiting out the pause is called
                    # off, and the utterance goes on.
                    if pending is not None and not pending.done():
                        pending.cancel()
                    if after is not None and not after.done():
                        after.cancel()
                    pending = after = None
                    if utterance.closed:
                        utterance = _Utterance()
                    last_loud = time.monotonic()
                    utterance.speech_s += len(audio) / 2 / rate
                if utterance.audio or loud:
                    utterance.audio += audio
                if loud and interim_wanted and utterance.speech_s >= utterance.interims_due * INTERIM_EVERY_S:
                    utterance.interims_due += 1
                    # One interim at a time: on shared cores a queue of them would hold the
                    # final back past the latency model's time (the fake's cost, not Google's).
                    if not utterance.interim_running:
                        utterance.interim_running = True
                        reach_s = seen.audio_bytes / 2 / rate
                        self._spawn(tasks, self._interim(utterance, bytes(utterance.audio), rate, reach_s, seen, out))
                if not loud and utterance.audio and pending is None and not utterance.closed:
                    hearing = self._hearing(utterance, rate, seen)
                    pending = asyncio.create_task(self._final(utterance, hearing, last_loud, seen, out))
                    if interim_wanted:
                        after = asyncio.create_task(self._interim_after(utterance, hearing, rate, last_loud, seen, out))
            # Half-closed: whatever was said is finished now.
            if utterance.audio and pending is None and not utterance.closed:
                hearing = self._hearing(utterance, rate, seen)
                pending = asyncio.create_task(self._final(utterance, hearing, last_loud or time.monotonic(), seen, out))
            if pending is not None:
                await pending
            if after is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await after
            while tasks:  # interims still recognising
                running = list(tasks)
                await asyncio.gather(*running, return_exceptions=True)
                tasks.difference_update(running)
            await out.put(None)
        except _Refused as refused:
            await out.put(refused)
        finally:
            if pending is not None:
                pending.cancel()
            if after is not None:
                after.cancel()
            for task in tasks:
                task.cancel()

    async def _interim(
        self,
        utterance: _Utterance,
        audio: bytes,
        rate: int,
        reach_s: float,
        seen: Recognition,
        out: asyncio.Queue[cloud_speech.StreamingRecognizeResponse | _Refused | None],
    ) -> None:
        try:
            words = await self.recognise(_to_whisper_rate(audio, rate), seen.language)
        finally:
            utterance.interim_running = False
        # Never after the utterance's final, nor behind an interim that reached further.
        if words and not utterance.closed and reach_s > utterance.interim_reach_s:
            self._send_interim(utterance, words, reach_s, seen, out)

    def _send_interim(
        self,
        utterance: _Utterance,
        words: str,
        reach_s: float,
        seen: Recognition,
        out: asyncio.Queue[cloud_speech.StreamingRecognizeResponse | _Refused | None],
    ) -> None:
        sent = " ".join(_WORD.findall(words.lower())) if self.plain_interims else words
        utterance.interim_reach_s = reach_s
        seen.interims.append(sent)
        out.put_nowait(_result(sent, is_final=False, language=seen.language, reach_s=reach_s))

    def _hearing(self, utterance: _Utterance, rate: int, seen: Recognition) -> asyncio.Future[str]:
        """Whisper's reading of the utterance up to the pause, begun now (for the final and
        the interim after speech alike)."""
        utterance.reach_s = seen.audio_bytes / 2 / rate
        hearing = asyncio.ensure_future(self.recognise(_to_whisper_rate(bytes(utterance.audio), rate), seen.language))
        hearing.add_done_callback(_consume)  # read by whichever result wants it, or by none
        return hearing

    async def _interim_after(
        self,
        utterance: _Utterance,
        hearing: asyncio.Future[str],
        rate: int,
        last_loud: float,
        seen: Recognition,
        out: asyncio.Queue[cloud_speech.StreamingRecognizeResponse | _Refused | None],
    ) -> None:
        """The words up to the pause as an interim, the drawn interim time after the last
        loud chunk (or when the words are in, if later); called off if the person goes on."""
        due = last_loud + self.stt_interim_after.draw(self._rng)
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        words = await asyncio.shield(hearing)
        if words and not utterance.closed:
            seen.interim_waits_s.append(time.monotonic() - last_loud)
            # Nothing loud came since (it would have called this off): it reaches all audio in.
            self._send_interim(utterance, words, seen.audio_bytes / 2 / rate, seen, out)

    async def _final(
        self,
        utterance: _Utterance,
        hearing: asyncio.Future[str],
        last_loud: float,
        seen: Recognition,
        out: asyncio.Queue[cloud_speech.StreamingRecognizeResponse | _Refused | None],
    ) -> None:
        """Recognise what was said up to the pause while the endpointer waits it out; the
        final goes out at the drawn time, or when the words are in if that is later."""
        due = last_loud + self.stt_final.draw(self._rng)
        try:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
        except asyncio.CancelledError:
            raise  # the person went on: these words are stale
        # Past the wait: the utterance is over (a recogniser that lags holds the final back).
        words = await asyncio.shield(hearing)
        utterance.closed = True
        seen.finals.append(words)
        seen.final_waits_s.append(time.monotonic() - last_loud)
        if words:
            await out.put(_result(words, is_final=True, language=seen.language, reach_s=utterance.reach_s))

    @staticmethod
    def _spawn(tasks: set[asyncio.Task[None]], work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        tasks.add(task)

    # --- Text-to-Speech -----------------------------------------------------------------

    async def _synthesize(
        self, requests: AsyncIterator[cloud_tts.StreamingSynthesizeRequest], context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[cloud_tts.StreamingSynthesizeResponse]:
        seen = Synthesis()
        self.syntheses.append(seen)
        failure, self.fail_next_synthesis = self.fail_next_synthesis, None
        self.streams_open += 1
        rate = TTS_DEFAULT_RATE
        first = True
        try:
            async for request in requests:
                if first:
                    first = False
                    config = request.streaming_config
                    voice = config.voice.name
                    if not any(family in voice.lower() for family in _STREAMING_VOICES):
                        seen.failed = True
                        await context.abort(
                            grpc.StatusCode.INVALID_ARGUMENT,
                            f"voice {voice!r} does not support streaming synthesis (Chirp 3 HD and Journey do)",
                        )
                    audio_config = config.streaming_audio_config
                    if audio_config.audio_encoding not in (
                        cloud_tts.AudioEncoding.PCM,
                        cloud_tts.AudioEncoding.LINEAR16,
                    ):
                        seen.failed = True
                        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "only PCM is simulated")
                    speaking_rate = audio_config.speaking_rate or 1.0
                    if not 0.25 <= speaking_rate <= 2.0:
                        seen.failed = True
                        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "speaking_rate must be in [0.25, 2.0]")
                    rate = audio_config.sample_rate_hertz or TTS_DEFAULT_RATE
                    seen.voice, seen.language = voice, config.voice.language_code
                    seen.speaking_rate, seen.sample_rate = speaking_rate, rate
                    continue
                markup = request.input.markup or request.input.text
                arrived = time.monotonic()
                seen.inputs.append(markup)
                due = arrived + self.tts_first_byte.draw(self._rng)
                pcm, made_at = await self.synthesise(markup, seen.speaking_rate)
                audio = resample_pcm16(pcm, made_at, rate)
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                step = max(2, int(rate * TTS_CHUNK_S) * 2)
                started = time.monotonic()
                for index, start in enumerate(range(0, len(audio), step)):
                    # Faster than it is heard, never all at once: a listener who interrupts
                    # finds the rest of the sentence still being made.
                    await asyncio.sleep(max(0.0, started + index * TTS_CHUNK_S / self.tts_speed - time.monotonic()))
                    if failure is not None and seen.chunks >= failure.after:
                        seen.failed = True
                        await context.abort(failure.code, failure.message)
                    if seen.first_byte_s is None:
                        seen.first_byte_s = time.monotonic() - arrived
                    piece = audio[start : start + step]
                    seen.chunks += 1
                    seen.audio_bytes += len(piece)
                    yield cloud_tts.StreamingSynthesizeResponse(audio_content=piece)
            if first:
                seen.failed = True
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first request carries the config")
        except asyncio.CancelledError:
            seen.cancelled = True
            raise
        finally:
            self.streams_open -= 1


def _consume(task: asyncio.Future[str]) -> None:
    if not task.cancelled():
        task.exception()


def _result(words: str, *, is_final: bool, language: str, reach_s: float) -> cloud_speech.StreamingRecognizeResponse:
    return cloud_speech.StreamingRecognizeResponse(
        results=[
            cloud_speech.StreamingRecognitionResult(
                alternatives=[cloud_speech.SpeechRecognitionAlternative(transcript=words, confidence=0.9)],
                is_final=is_final,
                stability=0.0 if is_final else 0.5,
                result_end_offset=timedelta(seconds=reach_s),
                language_code=language.lower(),
            )
        ]
    )


def rms_pcm16(pcm: bytes) -> float:
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if samples.size else 0.0


def resample_pcm16(pcm: bytes, rate_in: int, rate_out: int) -> bytes:
    if rate_in == rate_out or not pcm:
        return pcm
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16)
    return bytes(soxr.resample(samples, rate_in, rate_out).astype(np.int16).tobytes())


def _to_whisper_rate(pcm: bytes, rate: int) -> bytes:
    return resample_pcm16(pcm, rate, WHISPER_RATE)


def throwaway_credentials(path: Path) -> Path:
    """A service-account file signed by nobody Google knows: what switches the product's
    Google speech on when its endpoints are the fakes (which never read a token)."""
    import json

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    account = {
        "type": "service_account",
        "project_id": "avagenc-simulated",
        "private_key_id": "0",
        "private_key": pem,
        "client_email": "speech@avagenc-simulated.iam.gserviceaccount.com",
        "client_id": "0",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    path.write_text(json.dumps(account))
    return path
