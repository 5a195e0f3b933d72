"""The server half of the voice-latency benchmark: the real app with the offline engines
and the offline model, plus a Pipecat observer that timestamps each call's frames.

`bench.voice_latency` starts this module as its own process, so the clients streaming
microphone audio never share the server's interpreter or event loop. It serves the
product as `avagenc serve` does (`app.server.running`, uvicorn on a plain asyncio loop, INFO
logging), with no product code changed. The only addition sits at the seam the
composition root already has, `VoiceDoors.engines`: each call's STT service is the
product's own instance, built by the product's own factory, with an event handler that
attaches a Pipecat observer to the call's `PipelineWorker` once the pipeline runs. The
observer (told only about each frame's first push, so it costs little) records when the
frames that mark a turn's stages left the processor that made them:

    VAD stop -> transcript -> user turn stopped -> LLM context -> reply text (the turn)
    -> first TTS audio (espeak) -> bot started speaking (the output transport's first write)

plus Pipecat's own TTFB and processing metrics. Times are on the pipeline clock, converted
to `time.monotonic()`; on Linux that is CLOCK_MONOTONIC, the same clock in every process,
so the driver can line them up with what its clients sent and heard.

A call is named by the driver with an extra query parameter (`bench_call`), which the
product ignores; an ASGI wrapper puts it in a context variable that the engine factory,
running in the same request task, reads. `GET /bench/voice/timelines` returns what was
recorded; `GET /bench/voice/config` the settings in force.

(No `from __future__ import annotations`: FastAPI reads the route annotations at runtime.)
"""

import argparse
import asyncio
import contextlib
import gc
import logging
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from fastapi import FastAPI
from pipecat.frames.frames import (
    AggregatedTextFrame,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InterruptionFrame,
    LLMContextFrame,
    MetricsFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.metrics.metrics import ProcessingMetricsData, TTFBMetricsData
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.services.stt_service import STTService
from pydantic import SecretStr

from app.server import freeze_startup_heap, running
from settings import Settings
from voice import Engines
from voice.engines.whisper import WhisperSTTService

log = logging.getLogger("bench.voice_server")

QUERY_TAG = "bench_call"
# Twilio's voice webhook is on, so bench.voice_phone's callers dial in as real calls do (a
# verified number, a signed webhook, its call token); the codes go to this server's log.
TWILIO_AUTH_TOKEN = "bench-twilio-auth-token"  # a bench's own, signs nothing real
# A call's record is bounded like everything else; a turn records about a dozen events.
EVENTS_PER_CALL_MAX = 20_000
# The frames whose first push marks a stage of a turn. Audio frames are many, so only the
# first one after each new LLM context is kept, per processor that pushes it.
_MARKS: frozenset[type[Frame]] = frozenset(
    (
        VADUserStartedSpeakingFrame,
        VADUserStoppedSpeakingFrame,
        TranscriptionFrame,
        UserStoppedSpeakingFrame,
        LLMContextFrame,
        AggregatedTextFrame,
        BotStartedSpeakingFrame,
        BotStoppedSpeakingFrame,
        InterruptionFrame,
    )
)

_call_tag: ContextVar[str | None] = ContextVar("bench_call_tag", default=None)

Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class TagCalls:
    """ASGI wrapper: a WebSocket's `bench_call` query parameter, visible to the engine
    factory that the speaker door calls in the same task."""

    def __init__(self, app: FastAPI) -> None:
        self._app = app

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] == "websocket":
            query = parse_qs(bytes(scope.get("query_string", b"")).decode())
            _call_tag.set(query.get(QUERY_TAG, [None])[0])
        await self._app(scope, receive, send)


class Timeline(BaseObserver):
    """Records, for one call, when each marking frame was first pushed and by whom."""

    def __init__(self, events: list[dict[str, Any]], *, clock_start_ns: int) -> None:
        super().__init__(observe_every_push=False)
        self._events = events
        self._clock_start_ns = clock_start_ns
        self._audio_armed: set[str] = set()

    def _add(self, kind: str, at_ns: int, source: str, detail: Any = None) -> None:
        if len(self._events) < EVENTS_PER_CALL_MAX:
            at_s = (self._clock_start_ns + at_ns) / 1e9
            self._events.append({"kind": kind, "t": at_s, "source": source, "detail": detail})

    async def on_push_frame(self, data: FramePushed) -> None:
        frame, source = data.frame, data.source.name
        if isinstance(frame, LLMContextFrame):
            self._audio_armed = {"tts", "output"}
        if isinstance(frame, TTSAudioRawFrame):
            # The TTS makes the frame; the output transport re-chunks and pushes its own
            # copies on after writing them to the socket.
            stage = "output" if "Output" in source else "tts"
            if stage in self._audio_armed:
                self._audio_armed.discard(stage)
                self._add(f"TTSAudioRawFrame:{stage}", data.timestamp, source)
        elif isinstance(frame, MetricsFrame):
            for item in frame.data:
                if isinstance(item, TTFBMetricsData | ProcessingMetricsData) and item.value > 0:
                    self._add(type(item).__name__, data.timestamp, item.processor, item.value)
        elif type(frame) in _MARKS:  # exactly: TTSTextFrame is an AggregatedTextFrame too
            text = getattr(frame, "text", None)
            self._add(type(frame).__name__, data.timestamp, source, text)


# A call tagged so (`bench.voice_phone`'s "before" level) is heard as phone calls were before
# the short window came to them: every utterance through the 30 s window.
FULL_WINDOW_TAG = "phone30-"


def observed(engines: Engines, timelines: dict[str, list[dict[str, Any]]]) -> Engines:
    """The product's engines, with each call's pipeline watched by a `Timeline`."""

    def stt() -> STTService:
        service = engines.stt()
        tag = _call_tag.get() or f"untagged-{len(timelines)}"
        if tag.startswith(FULL_WINDOW_TAG) and isinstance(service, WhisperSTTService):
            service.expected = None  # the phone's hearing before issue 29's short window: the 30 s window only
        events = timelines.setdefault(tag, [])

        def attach(processor: FrameProcessor, _frame: Frame) -> None:
            # Runs before the processor handles a frame; the first one arrives once the
            # worker has set the processor up, so the worker and its clock exist. Once
            # the observer is on, the handler takes itself off: no cost per frame after.
            clock_ns = processor.get_clock().get_time()
            if clock_ns == 0:
                return  # the clock starts before any frame flows; wait for it all the same
            processor.remove_event_handler("on_before_process_frame", attach)
            start_ns = time.monotonic_ns() - clock_ns
            processor.pipeline_worker.add_observer(Timeline(events, clock_start_ns=start_ns))

        service.add_event_handler("on_before_process_frame", attach)
        return service

    return Engines(stt=stt, tts=engines.tts)


class Collections:
    """Every pass of the garbage collector in this process from now on: its generation,
    when it began (time.monotonic) and how long it stopped the interpreter. A full pass
    stops the event loop, calls included, for as long as it walks the heap."""

    def __init__(self) -> None:
        self.passes: list[dict[str, float]] = []
        self._started = 0.0
        gc.callbacks.append(self._heard)

    def _heard(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.monotonic()
        else:
            took = time.monotonic() - self._started
            self.passes.append({"generation": info["generation"], "t": self._started, "s": took})


def add_bench_routes(
    app: FastAPI, timelines: dict[str, list[dict[str, Any]]], config: dict[str, Any], collections: Collections
) -> None:
    async def get_timelines() -> dict[str, list[dict[str, Any]]]:
        return timelines

    async def get_collections() -> list[dict[str, float]]:
        return collections.passes

    async def get_config() -> dict[str, Any]:
        return config

    app.add_api_route("/bench/voice/timelines", get_timelines, methods=["GET"])
    app.add_api_route("/bench/voice/config", get_config, methods=["GET"])
    app.add_api_route("/bench/voice/collections", get_collections, methods=["GET"])


async def serve(*, database_url: str, state_dir: Path, fd: int, observe: bool) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=database_url,
        avagenc_home=state_dir,
        session_secret=SecretStr("bench-secret-" + "x" * 40),
        gemini_api_key=None,  # the offline model
        google_speech_credentials=None,  # the offline engines: Whisper tiny.en + VOICE_TTS (neural by default)
        # Every person gets the most the setting allows, so no guard ever stops a call.
        signup_grant_micros=10**15,
        twilio_auth_token=SecretStr(TWILIO_AUTH_TOKEN),
        twilio_account_sid=None,  # verification codes go to the log, not out as text messages
        twilio_from_number=None,
    )  # VOICE_VAD_STOP_S, VOICE_*_TIMEOUT_S, CALLS_PER_PROCESS_MAX still come from the environment
    async with running(settings) as (services, app):
        timelines: dict[str, list[dict[str, Any]]] = {}
        if observe:
            services.voice.engines = observed(services.voice.engines, timelines)
        config = {
            "vad_stop_s": settings.voice_vad_stop_s,
            "speech_timeout_s": settings.voice_speech_timeout_s,
            "finished_timeout_s": settings.voice_finished_timeout_s,
            "whisper_window_min_s": settings.voice_whisper_window_min_s,
            "voice_tts": settings.voice_tts,
            "calls_per_process_max": settings.calls_per_process_max,
            "adapters": services.adapters,
            "observer": observe,
        }
        add_bench_routes(app, timelines, config, Collections())
        # As `avagenc serve`: startup's objects leave the collector's sight once built.
        frozen = asyncio.create_task(freeze_startup_heap(services), name="freeze-startup-heap")
        # The driver made and bound the listening socket, so it knew the port before we ran.
        listener = socket.socket(fileno=fd)
        # As `avagenc serve`: access log on, lifespan off, the loop asyncio.run gave us.
        server = uvicorn.Server(uvicorn.Config(TagCalls(app), log_level="info", lifespan="off"))
        await server.serve(sockets=[listener])
        frozen.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description="The server side of bench.voice_latency (started by it).")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--fd", type=int, required=True, help="an inherited listening socket")
    parser.add_argument("--no-observer", action="store_true", help="serve without the frame timeline")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            serve(database_url=args.database_url, state_dir=args.state_dir, fd=args.fd, observe=not args.no_observer)
        )


if __name__ == "__main__":
    main()
