"""The Google speech adapters (voice.engines.google) against the simulated Google APIs
(bench.cloudsim.speech), over real gRPC on 127.0.0.1: words heard as interim then final
results, each sentence's emotion reaching the streaming voice as rate and pause markup, an
error mid-stream, a cancelled stream, and the settings that point the product at them.

The fakes hear with the product's Whisper and speak with espeak-ng; their latency models
are the bench's business, so here the recogniser's end-of-utterance wait is short and the
voice answers at once. The offline voices' side of the TTS port is tests/contract/
test_tts_contract.py, which runs the streaming voice through the same suite."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Literal

import grpc
import pytest
from pipecat.frames.frames import (
    AggregatedTextFrame,
    ErrorFrame,
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    MetricsFrame,
    StartFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
)
from pipecat.metrics.metrics import TTSUsageMetricsData
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.tests.utils import run_test
from pipecat.workers.runner import WorkerRunner
from pydantic import SecretStr

from app.voice import choose_engines
from bench.cloudsim.latency import LogNormal
from bench.cloudsim.speech import (
    Failure,
    SimulatedSpeech,
    Synthesis,
    espeak_synthesise,
    resample_pcm16,
    throwaway_credentials,
)
from settings import Settings
from voice import Engines
from voice.engines.google import (
    ProsodyGoogleTTSService,
    SsmlGoogleHttpTTSService,
    google_stt,
    pause_tag,
    streaming_prosody,
)
from voice.engines.whisper import preload_whisper
from voice.prosody import PROSODY, emotion_to_ssml, segment_ssml, strip_stray_tags, text_type_for

RATE = 16_000
CHUNK = 2 * RATE // 50  # 20 ms of PCM16
TRANSFORMS = [("*", emotion_to_ssml), ("*", strip_stray_tags)]
# The recogniser's wait after the last loud audio before it calls the utterance over: long
# enough that the gaps between words (sent faster than real time here) never end it.
ENDPOINTER = LogNormal(p50_s=0.25, p95_s=0.3)
WAIT_MAX_S = 30.0  # a bound on every wait below, never a measure


@pytest.fixture(scope="module")
def credentials(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return throwaway_credentials(tmp_path_factory.mktemp("speech") / "key.json")


@pytest.fixture(scope="module", autouse=True)
def _whisper_loaded() -> None:
    preload_whisper()  # as a server does at startup: the first utterance does not load it


@pytest.fixture
async def speech() -> AsyncIterator[SimulatedSpeech]:
    async with SimulatedSpeech(stt_final=ENDPOINTER) as simulated:
        yield simulated


async def _said(text: str) -> bytes:
    """`text` spoken at 16 kHz with 200 ms of silence before it."""
    pcm, rate = await espeak_synthesise(text, 1.0)
    return bytes(2 * RATE // 5) + resample_pcm16(pcm, rate, RATE)


class _Collect(FrameProcessor):
    """Keeps what passes (in the direction it watches) and says when `until` is met."""

    def __init__(self, direction: FrameDirection, until: Callable[[Frame], bool]) -> None:
        super().__init__()
        self.frames: list[Frame] = []
        self.met = asyncio.Event()
        self._direction = direction
        self._until = until

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == self._direction and not isinstance(frame, StartFrame):
            self.frames.append(frame)
            if self._until(frame):
                self.met.set()
        await self.push_frame(frame, direction)


class _Call:
    """One recogniser in a running Pipecat pipeline, fed audio as a call would be."""

    def __init__(self, stt: FrameProcessor, until: Callable[[Frame], bool]) -> None:
        self.up = _Collect(FrameDirection.UPSTREAM, until)
        self.down = _Collect(FrameDirection.DOWNSTREAM, until)
        self.worker = PipelineWorker(
            Pipeline([self.up, stt, self.down]),
            params=PipelineParams(audio_in_sample_rate=RATE),
            cancel_on_idle_timeout=False,
        )
        self._runner = WorkerRunner(handle_sigint=False)
        self._run: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Call:
        started = asyncio.Event()

        async def _started(_worker: object, _frame: object) -> None:
            started.set()

        self.worker.add_event_handler("on_pipeline_started", _started)
        await self._runner.add_workers(self.worker)
        self._run = asyncio.create_task(self._runner.run())
        await asyncio.wait_for(started.wait(), WAIT_MAX_S)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self._run is not None
        if not self._run.done():
            await self.worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self._run, WAIT_MAX_S)

    async def send(self, pcm: bytes) -> None:
        for start in range(0, len(pcm), CHUNK):
            await self.worker.queue_frame(InputAudioRawFrame(pcm[start : start + CHUNK], RATE, 1))

    async def quiet_until_met(self) -> None:
        """Silence in real time (the recogniser's pause is timed) until `until` is met."""
        for _ in range(int(WAIT_MAX_S / 0.02)):
            if self.up.met.is_set() or self.down.met.is_set():
                return
            await self.worker.queue_frame(InputAudioRawFrame(bytes(CHUNK), RATE, 1))
            await asyncio.sleep(0.02)
        raise AssertionError("the recogniser never answered")

    @property
    def heard(self) -> list[Frame]:
        return self.down.frames


def _final(frame: Frame) -> bool:
    return isinstance(frame, TranscriptionFrame)


async def test_words_are_heard_as_interim_then_final_results(speech: SimulatedSpeech, credentials: Path) -> None:
    stt = google_stt(str(credentials), ["en-US"], endpoint=speech.endpoint)
    async with _Call(stt, _final) as call:
        await call.send(await _said("Please turn on the bedroom light now."))
        await call.quiet_until_met()
    kinds = [type(f) for f in call.heard]
    final = next(f for f in call.heard if isinstance(f, TranscriptionFrame))
    assert "turn on the bedroom" in final.text.lower()
    assert InterimTranscriptionFrame in kinds and kinds.index(InterimTranscriptionFrame) < kinds.index(
        TranscriptionFrame
    )
    (seen,) = speech.recognitions
    assert seen.recognizer == "projects/avagenc-simulated/locations/global/recognizers/_"
    assert (seen.language, seen.model, seen.sample_rate) == ("en-US", "latest_long", RATE)
    assert seen.finals == [final.text] and not seen.failed


async def test_an_error_mid_stream_is_reported_and_the_next_words_are_heard(
    speech: SimulatedSpeech, credentials: Path
) -> None:
    speech.fail_next_recognition = Failure(code=grpc.StatusCode.UNAVAILABLE, message="backend restarted", after=0)
    stt = google_stt(str(credentials), ["en-US"], endpoint=speech.endpoint)
    said = await _said("Turn off the kitchen lamp.")
    async with _Call(stt, lambda f: isinstance(f, ErrorFrame) or _final(f)) as call:
        await call.send(said)
        await call.quiet_until_met()
        errors = [f for f in call.up.frames if isinstance(f, ErrorFrame)]
        assert errors and "backend restarted" in errors[0].error
        assert not [f for f in call.heard if _final(f)]
        # The adapter opens a new stream and hears what is said next.
        call.up.met.clear()
        call.down.met.clear()
        call.up.frames.clear()
        await call.send(said)
        await call.quiet_until_met()
    assert [f for f in call.heard if _final(f)], "the words after the error are heard"
    assert speech.recognitions[0].failed and not speech.recognitions[-1].failed


async def test_a_call_that_ends_mid_utterance_cancels_its_stream(speech: SimulatedSpeech, credentials: Path) -> None:
    stt = google_stt(str(credentials), ["en-US"], endpoint=speech.endpoint)
    async with _Call(stt, lambda _f: False) as call:
        await call.send(await _said("I was just about to say something"))
        for _ in range(int(WAIT_MAX_S / 0.01)):  # until the fake has the stream open
            if speech.streams_open:
                break
            await asyncio.sleep(0.01)
        await call.worker.cancel()
    for _ in range(int(WAIT_MAX_S / 0.01)):  # until the fake has seen the client go
        if not speech.streams_open:
            break
        await asyncio.sleep(0.01)
    (seen,) = speech.recognitions
    assert seen.cancelled and seen.audio_bytes > 0 and not seen.finals


# --- Streaming text-to-speech -----------------------------------------------------------


async def _speak(tts: FrameProcessor, text: str, emotion: str | None) -> tuple[list[Frame], list[Frame]]:
    down, up = await run_test(
        tts,
        frames_to_send=[
            LLMFullResponseStartFrame(),
            AggregatedTextFrame(text, text_type_for(emotion)),
            LLMFullResponseEndFrame(),
        ],
        pipeline_params=PipelineParams(audio_out_sample_rate=RATE),
    )
    return list(down), list(up)


@pytest.mark.parametrize("emotion", ["furious", "devastated", "thinking", None])
async def test_each_emotion_reaches_the_streaming_voice_as_rate_and_pause(
    speech: SimulatedSpeech, credentials: Path, emotion: str | None
) -> None:
    tts = ProsodyGoogleTTSService(
        credentials_path=str(credentials), endpoint=speech.endpoint, text_transforms=TRANSFORMS
    )
    down, up = await _speak(tts, "Tom [& Jerry] are here.", emotion)
    assert not [f for f in up if isinstance(f, ErrorFrame)] and [f for f in down if isinstance(f, TTSAudioRawFrame)]
    (seen,) = speech.syntheses
    prosody = PROSODY[emotion or "neutral"]
    assert seen.speaking_rate == pytest.approx(float(prosody.rate.rstrip("%")) / 100)
    # Brackets in the words are dropped: a reply can never write a markup tag of its own.
    assert seen.inputs == [f"Tom & Jerry are here. {pause_tag(prosody.pause_ms)}"]
    assert seen.voice == "en-US-Chirp3-HD-Charon" and seen.sample_rate == RATE


def test_rates_are_clamped_to_what_google_accepts_and_pauses_pick_a_tag() -> None:
    assert streaming_prosody(segment_ssml("Hi.", "devastated")) == ("Hi. [pause long]", 0.75)
    assert streaming_prosody(segment_ssml("Hi.", "anxious"))[0] == "Hi. [pause short]"
    assert streaming_prosody("plain words") == ("plain words [pause]", 1.0)  # a neutral sentence's pause
    assert streaming_prosody('<speak><prosody rate="900%">x</prosody></speak>') == ("x", 2.0)


async def test_an_error_mid_sentence_is_reported_after_the_audio_before_it(
    speech: SimulatedSpeech, credentials: Path
) -> None:
    speech.fail_next_synthesis = Failure(code=grpc.StatusCode.RESOURCE_EXHAUSTED, message="quota", after=2)
    tts = ProsodyGoogleTTSService(
        credentials_path=str(credentials), endpoint=speech.endpoint, text_transforms=TRANSFORMS
    )
    down, up = await _speak(tts, "This sentence is long enough to need several pieces of audio.", None)
    errors = [f for f in up if isinstance(f, ErrorFrame)]
    assert errors and "quota" in errors[0].error
    audio = b"".join(f.audio for f in down if isinstance(f, TTSAudioRawFrame))
    (seen,) = speech.syntheses
    assert seen.failed and seen.chunks == 2 and len(audio) == seen.audio_bytes  # nothing lost, nothing made up


@pytest.mark.parametrize("after", [0, 2])
async def test_usage_is_what_google_bills_a_refused_sentence_nothing(
    speech: SimulatedSpeech, credentials: Path, after: int
) -> None:
    """Usage was reported when the stream opened, before Google had answered, so a
    sentence Google refused (an error before any audio) was billed. A sentence it
    accepted and then failed part-way had its audio made, and is billed."""
    speech.fail_next_synthesis = Failure(code=grpc.StatusCode.RESOURCE_EXHAUSTED, message="quota", after=after)
    tts = ProsodyGoogleTTSService(
        credentials_path=str(credentials), endpoint=speech.endpoint, text_transforms=TRANSFORMS
    )
    down, up = await run_test(
        tts,
        frames_to_send=[
            LLMFullResponseStartFrame(),
            AggregatedTextFrame("This sentence is long enough to need several pieces of audio.", text_type_for(None)),
            LLMFullResponseEndFrame(),
        ],
        pipeline_params=PipelineParams(audio_out_sample_rate=RATE, enable_metrics=True, enable_usage_metrics=True),
    )
    assert [f for f in up if isinstance(f, ErrorFrame) and "quota" in f.error]
    usage = [d.value for f in down if isinstance(f, MetricsFrame) for d in f.data if isinstance(d, TTSUsageMetricsData)]
    (seen,) = speech.syntheses
    assert seen.failed and seen.chunks == after and seen.inputs
    # The call's meter counts what Google bills, once: nothing for a refusal.
    assert sum(usage) == seen.characters == (len(seen.inputs[0]) if after else 0)
    assert len(usage) == (1 if after else 0)


async def test_a_sentence_cut_before_its_first_audio_is_billed_what_google_received(
    speech: SimulatedSpeech, credentials: Path
) -> None:
    """Usage waits for Google to accept a sentence (its first audio); one cut short before
    that (a barge-in while Google is still making it) had reached Google whole, and is
    billed, once."""
    speech.tts_first_byte = LogNormal(p50_s=5.0, p95_s=6.0)  # still being made when cut
    tts = ProsodyGoogleTTSService(credentials_path=str(credentials), endpoint=speech.endpoint)
    reported: list[str] = []

    async def report(text: str) -> None:  # what the pipeline's usage metrics would carry
        reported.append(text)

    tts.start_tts_usage_metrics = report  # type: ignore[method-assign]
    text = segment_ssml("A sentence the person speaks over before it is heard.", "neutral")
    first = asyncio.ensure_future(anext(tts.run_tts(text, "context-1")))
    for _ in range(int(WAIT_MAX_S / 0.01)):  # until Google has the words
        if speech.syntheses and speech.syntheses[0].inputs:
            break
        await asyncio.sleep(0.01)
    first.cancel()  # what an interruption does to the sentence being synthesised
    with contextlib.suppress(asyncio.CancelledError):
        await first
    seen, markup = await _the_one_synthesis_closed(speech, text)
    assert seen.cancelled and seen.chunks == 0
    assert [len(r) for r in reported] == [seen.characters] == [len(markup)]


async def test_a_voice_google_does_not_stream_is_refused_by_the_api(speech: SimulatedSpeech, credentials: Path) -> None:
    tts = ProsodyGoogleTTSService(
        credentials_path=str(credentials), endpoint=speech.endpoint, voice="en-US-Neural2-F", text_transforms=TRANSFORMS
    )
    _down, up = await _speak(tts, "Hello there.", None)
    assert [f for f in up if isinstance(f, ErrorFrame) and "does not support streaming" in f.error]


async def test_a_sentence_cut_short_cancels_its_stream_and_is_billed_its_characters(
    speech: SimulatedSpeech, credentials: Path
) -> None:
    tts = ProsodyGoogleTTSService(credentials_path=str(credentials), endpoint=speech.endpoint)
    text = segment_ssml("A long sentence that the person interrupts before it is over.", "neutral")
    sentence = tts.run_tts(text, "context-1")
    first = await anext(sentence)
    while not isinstance(first, TTSAudioRawFrame):  # past the metrics frames
        first = await anext(sentence)
    await sentence.aclose()  # what an interruption does to the sentence being spoken
    seen, markup = await _the_one_synthesis_closed(speech, text)
    assert seen.cancelled and seen.characters == len(markup)


@contextlib.asynccontextmanager
async def _engines_chosen(
    home: Path,
    credentials: Path,
    speech: Literal["auto", "offline", "google-http", "google-streaming"],
    *,
    hearing: Literal["auto", "offline", "google"] = "auto",
    endpoint: str | None = None,
) -> AsyncIterator[tuple[Engines, str, threading.Thread | None]]:
    """What app.voice.choose_engines picks with these settings and the throwaway credentials
    (VOICE_SPEECH `speech`, VOICE_HEARING `hearing`, both Google APIs at `endpoint`), open
    for the block."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        avagenc_home=home,
        session_secret=SecretStr("x" * 40),
        google_speech_credentials=credentials,
        voice_hearing=hearing,
        voice_speech=speech,
        google_tts_endpoint=endpoint,
        google_stt_endpoint=endpoint,
        voice_preload=False,
    )
    async with contextlib.AsyncExitStack() as stack:
        yield choose_engines(settings, stack)


async def test_the_settings_point_the_product_at_the_fakes(
    speech: SimulatedSpeech, credentials: Path, tmp_path: Path
) -> None:
    chosen = _engines_chosen(tmp_path, credentials, "google-streaming", hearing="offline", endpoint=speech.endpoint)
    async with chosen as (engines, line, _preload):
        stt, tts = engines.for_language("en")
        assert "offline hearing" in line and "Google Cloud TTS (streaming)" in line
        assert type(stt).__name__ == "WhisperSTTService"
        down, _up = await _speak(tts, "Sure, turning it on.", "ecstatic")
    assert [f for f in down if isinstance(f, TTSAudioRawFrame)]
    assert speech.syntheses[-1].speaking_rate == pytest.approx(1.22)
    with pytest.raises(ValueError, match="GOOGLE_SPEECH_CREDENTIALS"):
        Settings(_env_file=None, session_secret=SecretStr("x" * 40), voice_hearing="google")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("voice_speech", "line_says", "tts_kind"),
    [
        ("auto", "Google Cloud TTS (streaming)", ProsodyGoogleTTSService),
        ("google-http", "Google Cloud TTS (HTTP, SSML)", SsmlGoogleHttpTTSService),
    ],
)
async def test_auto_picks_the_streaming_voice_with_credentials_and_the_http_voice_stays_selectable(
    credentials: Path,
    tmp_path: Path,
    voice_speech: Literal["auto", "google-http"],
    line_says: str,
    tts_kind: type[FrameProcessor],
) -> None:
    async with _engines_chosen(tmp_path, credentials, voice_speech) as (engines, line, preload):
        _stt, tts = engines.for_language("en")
    assert line == f"Google Cloud STT (streaming) + {line_says}" and preload is None
    assert type(tts) is tts_kind


async def _the_one_synthesis_closed(speech: SimulatedSpeech, text: str) -> tuple[Synthesis, str]:
    """Once Google's stream has closed: the one synthesis it saw, and the markup `text` is sent as."""
    for _ in range(int(WAIT_MAX_S / 0.01)):
        if not speech.streams_open:
            break
        await asyncio.sleep(0.01)
    (seen,) = speech.syntheses
    markup, _rate = streaming_prosody(text)
    return seen, markup
