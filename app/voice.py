"""Building the call doors: the speech engines (Google Cloud or offline, or a mix, as the
settings choose), the doors over the turns and the wallet, the chat's view of a live call (for
a wake note said on it), and hanging up at shutdown.

Voice (Pipecat, the speech engines) is imported only inside these functions, so a root
that never builds a call door never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import asyncpg

from agents import Segment, SpokenReply
from chat import CallElsewhere, LiveCall, People, Tickets, TokenVerifier, Turns, Wallet
from database import Listener
from settings import Settings
from telemetry import carried, continuing, span
from web.doors import Traffic

if TYPE_CHECKING:
    from pipecat.services.stt_service import STTService
    from pipecat.services.tts_service import TTSService

    from voice import Engines, VoiceDoors

log = logging.getLogger("avagenc")

# How long shutdown waits for the Whisper preload thread: a native thread still loading
# the model when the interpreter exits aborts the process (exit 134).
PRELOAD_JOIN_S = 60.0
# How long live calls get for Ava's goodbye at shutdown before they are cut.
_CALLS_END_S = 10.0
# The interpreter's switch interval while voice loads in a thread beside the serving loop
# (VoiceLater): the longest a woken loop waits for the loading thread to let go.
_LOADING_SWITCH_S = 0.0005
# How long the server must have had no request in flight before the call doors begin
# loading (VoiceLater): a person's next message within it is answered without them beside
# it, and a client's burst after a wake-up (sign-in, a page, a turn) comes in well under it.
LOAD_AFTER_QUIET_S = 0.3
# The longest the loading waits for that quiet after the server listens: an instance never
# idle still gets its doors (and its startup heap frozen, app.server.freeze_startup_heap).
LOAD_WAIT_MAX_S = 10.0
# The browser's door loads once no call has been live for this long (or one asks for it):
# loaded beside a woken instance's first call, it made that call's reply 1.6x a warm one's
# (BENCHMARKS.md "Cold start: the browser's door comes last").
BROWSER_AFTER_CALLS_S = 2.0
# ...and at the latest this long after the other doors, calls or not.
BROWSER_WAIT_MAX_S = 60.0


def choose_engines(
    settings: Settings, stack: contextlib.AsyncExitStack
) -> tuple[Engines, str, threading.Thread | None]:
    """Speech engines for calls as VOICE_HEARING / VOICE_SPEECH choose (by default Google
    Cloud with credentials, offline otherwise; any mix), a line describing them, and the
    thread loading the offline models, when one was started."""
    from voice import Engines
    from voice.prosody import emotion_to_ssml, strip_stray_tags

    transforms = [("*", emotion_to_ssml), ("*", strip_stray_tags)]
    credentials = settings.google_speech_credentials
    hearing = settings.voice_hearing
    speech = settings.voice_speech
    if hearing == "auto":
        hearing = "google" if credentials is not None else "offline"
    if speech == "auto":
        # The streaming voice with credentials: its first audio comes about half a second
        # sooner than the HTTP voice's (docs/sockets.md#google-speech); `google-http` stays
        # selectable for the full SSML prosody.
        speech = "google-streaming" if credentials is not None else "offline"
    preload: threading.Thread | None = None
    offline: Engines | None = None
    offline_line = ""
    if hearing == "offline" or speech == "offline":
        from voice.engines.offline import offline_engines, preload_offline

        if settings.voice_preload:
            preload = threading.Thread(
                target=preload_offline, args=(settings.voice_tts,), name="speech-preload", daemon=True
            )
            preload.start()
            stack.push_async_callback(asyncio.to_thread, preload.join, PRELOAD_JOIN_S)
        offline, offline_line = offline_engines(
            tts=settings.voice_tts,
            transforms=transforms,
            models_dir=settings.avagenc_home / "models",
            stt_workers=settings.voice_stt_workers,
            window_min_s=settings.voice_whisper_window_min_s,
        )
        if hearing == "offline" and speech == "offline":
            return offline, offline_line, preload
    assert credentials is not None, "Settings refuses Google speech without credentials"
    from voice.engines.google import ProsodyGoogleTTSService, SsmlGoogleHttpTTSService, google_stt

    path = str(credentials)
    parts: list[str] = []
    stt: Callable[[], STTService]
    tts: Callable[[], TTSService]
    if hearing == "google":
        stt = lambda: google_stt(path, settings.google_stt_languages, endpoint=settings.google_stt_endpoint)  # noqa: E731
        stt_by_language: dict[str, Any] = {}
        parts.append("Google Cloud STT (streaming)")
    else:
        assert offline is not None
        stt, stt_by_language = offline.stt, dict(offline.stt_by_language)
        parts.append("offline hearing")
    if speech == "google-streaming":
        tts = lambda: ProsodyGoogleTTSService(  # noqa: E731
            credentials_path=path,
            voice=settings.google_streaming_voice,
            endpoint=settings.google_tts_endpoint,
            text_transforms=transforms,
        )
        tts_by_language: dict[str, Any] = {}
        parts.append("Google Cloud TTS (streaming)")
    elif speech == "google-http":
        tts = lambda: SsmlGoogleHttpTTSService(  # noqa: E731
            credentials_path=path, voice=settings.google_tts_voice, text_transforms=transforms
        )
        tts_by_language = {}
        parts.append("Google Cloud TTS (HTTP, SSML)")
    else:
        assert offline is not None
        tts, tts_by_language = offline.tts, dict(offline.tts_by_language)
        parts.append("offline speech")
    line = " + ".join(parts) + (f" ({offline_line})" if offline is not None else "")
    engines = Engines(stt=stt, tts=tts, stt_by_language=stt_by_language, tts_by_language=tts_by_language)
    return engines, line, preload


def build_voice(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    dsn: str,
    people: People,
    verifier: TokenVerifier,
    tickets: Tickets,
    turns: Turns,
    wallet: Wallet,
) -> tuple[VoiceDoors, str, threading.Thread | None]:
    """The call doors, their engines' description and the thread loading the offline models
    (None when none was started); live calls are hung up first when the stack unwinds."""
    from voice import CallLimits, CallSlots, TurnTiming, VoiceDoors

    engines, speech, preload = choose_engines(settings, stack)
    voice = VoiceDoors(
        people=people,
        verifier=verifier,
        tickets=tickets,
        turns=turns,
        engines=engines,
        guard=lambda person: wallet.guard(person.id),
        bill=lambda call, slice_index, usage: wallet.charge_voice(
            person_id=call.person.id, call_id=call.id, slice_index=slice_index, channel=call.channel, usage=usage
        ),
        limits=CallLimits(
            duration_max_s=settings.call_duration_max_s,
            idle_s=settings.call_idle_s,
            per_process_max=settings.calls_per_process_max,
        ),
        timing=TurnTiming(
            vad_stop_s=settings.voice_vad_stop_s,
            speech_timeout_s=settings.voice_speech_timeout_s,
            finished_timeout_s=settings.voice_finished_timeout_s,
            vad_start_s=settings.voice_vad_start_s,
            pause_s=settings.voice_pause_s,
            speculative_first_call=settings.speculative_first_call,
        ),
    )
    voice.registry.slots = CallSlots.for_url(dsn)  # one call per person across every instance
    stack.push_async_callback(end_calls, voice)
    return voice, speech, preload


async def end_calls(voice: VoiceDoors) -> None:
    """Every live call hears Ava's goodbye and gets `hangup` (reason `shutdown`); what has
    not ended within _CALLS_END_S is cut. A browser pipeline still running after that is
    cancelled, since one left to the loop's final cancel-all never finishes."""
    await voice.end_all_calls(reason="shutdown", timeout_s=_CALLS_END_S)
    # The browser's door may never have been built (VoiceLater builds it last); without it
    # no browser call exists, and importing it now would only slow the shutdown.
    webrtc = sys.modules.get("voice.webrtc")
    if webrtc is not None:
        await webrtc.end_webrtc_calls()


def live_call_on(voice: VoiceDoors) -> LiveCall:
    """The chat's view of a person's live call in this process: its channel and its voice."""

    def live_call(person_id: str) -> tuple[str, Callable[[SpokenReply], Awaitable[None]]] | None:
        call = voice.registry.live_for(person_id)
        return None if call is None or call.speak is None else (call.channel, call.speak)

    return live_call


# What a process asks the process holding a person's call to say on it: a wake note's reply
# (chat.wakes.CallElsewhere). Heard on every process's one LISTEN connection.
SAY_CHANNEL = "avagenc_call_say"
# NOTIFY payloads stop at 8,000 bytes; a reply longer than this is said in part (the thread has it all).
_SAY_BYTES_MAX = 7_000
# Whether some session holds the person's call slot (voice.call_slots: a session-level
# advisory lock on a bigint key, which pg_locks shows split into classid and objid).
_CALL_HELD_SQL = """
SELECT EXISTS (
    SELECT FROM pg_locks
    WHERE locktype = 'advisory' AND objsubid = 1 AND granted
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('call:' || $1, 0)
)
"""


def _say_payload(person_id: str, reply: SpokenReply, traceparent: str | None = None) -> str:
    """The reply's sentences, as many from the start as fit in one NOTIFY, and the trace
    the holding process continues (a W3C traceparent, only while tracing is on)."""
    segments = list(reply.segments)
    while True:
        fields: dict[str, Any] = {"person": person_id, "segments": [[s.text, s.emotion] for s in segments]}
        if traceparent is not None:
            fields["trace"] = traceparent
        payload = json.dumps(fields, ensure_ascii=False)
        if len(payload.encode()) <= _SAY_BYTES_MAX or not segments:
            return payload
        segments.pop()


def call_elsewhere_on(doors: Callable[[], VoiceDoors | None], pool: asyncpg.Pool) -> CallElsewhere:
    """The chat's view of a person's call held by another process: its slot is held in the
    database and not by a live call here; saying on it is a NOTIFY that process hears.
    `doors` gives this process's call doors, None while they are still being built."""

    async def call_elsewhere(person_id: str) -> Callable[[SpokenReply], Awaitable[None]] | None:
        voice = doors()
        here = voice is not None and voice.registry.live_for(person_id) is not None
        if here or not await pool.fetchval(_CALL_HELD_SQL, person_id):
            return None

        async def say(reply: SpokenReply) -> None:
            # The holding process says it, its `say` under this span (the NOTIFY carries the
            # trace, docs/operations.md#traces): here, the asking.
            with span("say elsewhere", person=person_id):
                payload = _say_payload(person_id, reply, carried())
                await pool.execute("SELECT pg_notify($1, $2)", SAY_CHANNEL, payload)

        return say

    return call_elsewhere


def hear_calls_elsewhere(
    doors: Callable[[], VoiceDoors | None], listener: Listener, stack: contextlib.AsyncExitStack
) -> None:
    """Say on this process's live calls what other processes ask (`call_elsewhere_on`). A
    message for a call that is not here (it ended, or it is another's) is dropped: the thread
    has the reply anyway."""
    saying: set[asyncio.Task[None]] = set()

    async def say(
        speak: Callable[[SpokenReply], Awaitable[None]], reply: SpokenReply, person_id: str, traceparent: object
    ) -> None:
        try:
            # The asking process's trace goes on here: the call's `say` is a child of its
            # `say elsewhere` (a root, as before, when tracing is off there or the value is bad).
            with continuing(traceparent):
                await speak(reply)
        except Exception:  # the call ended meanwhile
            log.warning("could not say a note of %s on the call", person_id)

    def heard(payload: str | None) -> None:
        if payload is None:
            return  # listening (re)started: nothing to catch up on, a missed one is in the thread
        try:
            data = json.loads(payload)
            person_id = str(data["person"])
            segments = tuple(Segment(str(t), None if e is None else str(e)) for t, e in data["segments"])
        except (ValueError, KeyError, TypeError):
            log.warning("a call message that cannot be read")
            return
        voice = doors()
        call = None if voice is None else voice.registry.live_for(person_id)
        if call is None or call.speak is None or not segments:
            return
        spoken = SpokenReply(segments=segments, end_call=False)
        task = asyncio.create_task(say(call.speak, spoken, person_id, data.get("trace")))
        saying.add(task)
        task.add_done_callback(saying.discard)

    async def cancel() -> None:
        for task in list(saying):
            task.cancel()

    listener.watch(SAY_CHANNEL, heard)
    stack.push_async_callback(cancel)


class VoiceLater:
    """The call doors built while the server already serves text (`avagenc serve`).

    Importing voice (Pipecat, WebRTC, NumPy, the speech engines) is most of a server's
    start: measured in bench/cold_start.py, it kept `/readyz` seconds away, and with
    scale-to-zero that is the first request's wait (issue 24). So the serving process
    answers text as soon as its database is ready, imports voice in a worker thread, then
    builds the doors on the loop and hands them to `attach` (which adds their routes). A
    call that arrives meanwhile waits for the doors (web.DoorsStarting), so nothing is
    refused; everything built here is closed by `close`, at the place in the server's
    shutdown where the doors would have been.

    The import begins once the server listens (`serving`, set by the root): begun earlier,
    it took the interpreter's lock from the server's own start half the time. Then it waits
    until the server has had no request in flight for `quiet_s` (`traffic`, counted by the
    edge, web.doors.DoorsStarting) or a call door is reached, whichever comes first, at
    most `wait_max_s`: loaded beside a woken instance's first text turn, the doors made it
    1.5x a warm one on a quiet machine and up to 7x on a busy one. Once begun, it runs to
    the end. While it runs, the interpreter hands its lock over every `_LOADING_SWITCH_S`
    instead of 5 ms, so a text turn waking on the loop waits that long for it, not 5 ms
    per wake-up (docs/scaling.md#cold-start).

    It builds in two stages: first every door but the browser's (`calls_ready`, the doors
    handed to `attach`), then the browser's WebRTC door (`attach_browser`), whose import
    (aiortc, aioice, PyAV, DNS) is about a third of voice's: a speaker's or a phone's call
    placed on a woken instance waits for the first stage only, and the second waits until
    no call has been live for a moment or a browser asks for its door (`browser_wanted`).
    `ready` is set when both have ended."""

    def __init__(self, *, quiet_s: float = LOAD_AFTER_QUIET_S, wait_max_s: float = LOAD_WAIT_MAX_S) -> None:
        self.ready = asyncio.Event()
        self.calls_ready = asyncio.Event()
        self.browser_wanted = asyncio.Event()
        self.serving = asyncio.Event()
        self.traffic = Traffic()
        self._quiet_s = quiet_s
        self._wait_max_s = wait_max_s
        self.doors: VoiceDoors | None = None
        self.browser = False
        self.speech = "loading in the background"
        self.preload: threading.Thread | None = None
        self._stack = contextlib.AsyncExitStack()
        self._task: asyncio.Task[None] | None = None

    def start(
        self,
        build: Callable[[contextlib.AsyncExitStack], tuple[VoiceDoors, str, threading.Thread | None]],
        attach: Callable[[VoiceDoors], None],
        attach_browser: Callable[[VoiceDoors], None],
    ) -> None:
        async def load() -> None:
            await self.serving.wait()
            began = await self.traffic.quiet(self._quiet_s, at_most_s=self._wait_max_s)
            log.info("voice doors loading: %s", began)
            switch_s = sys.getswitchinterval()
            sys.setswitchinterval(min(switch_s, _LOADING_SWITCH_S))
            try:
                await self._first_stage(build, attach)
                if self.doors is not None:
                    await self._until_no_call(self.doors)
                    await self._browser_stage(self.doors, attach_browser)
            finally:
                sys.setswitchinterval(switch_s)
                self.calls_ready.set()
                self.ready.set()

        self._task = asyncio.create_task(load(), name="voice-later")

    async def _first_stage(
        self,
        build: Callable[[contextlib.AsyncExitStack], tuple[VoiceDoors, str, threading.Thread | None]],
        attach: Callable[[VoiceDoors], None],
    ) -> None:
        try:
            await asyncio.to_thread(importlib.import_module, "voice")  # the slow part, off the loop
            doors, self.speech, self.preload = build(self._stack)
            attach(doors)
            self.doors = doors
            log.info("voice doors ready: speech=%s", self.speech)
        except Exception:
            self.speech = "unavailable"
            log.exception("the call doors could not be built; text goes on")
        finally:
            self.calls_ready.set()

    async def _until_no_call(self, doors: VoiceDoors) -> None:
        """Until the browser's door is asked for, or no call has been live for
        BROWSER_AFTER_CALLS_S, at most BROWSER_WAIT_MAX_S."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BROWSER_WAIT_MAX_S
        quiet_since = loop.time()
        while not self.browser_wanted.is_set() and loop.time() < deadline:
            if len(doors.registry):
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= BROWSER_AFTER_CALLS_S:
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):
                    await self.browser_wanted.wait()

    async def _browser_stage(self, doors: VoiceDoors, attach_browser: Callable[[VoiceDoors], None]) -> None:
        try:
            await asyncio.to_thread(importlib.import_module, "voice.webrtc")
            attach_browser(doors)
            self.browser = True
            log.info("browser call door ready")
        except Exception:
            log.exception("the browser's call door could not be built; other calls go on")

    def live_call(self, person_id: str) -> tuple[str, Callable[[SpokenReply], Awaitable[None]]] | None:
        """`live_call_on` once the doors exist; no call is live before."""
        return None if self.doors is None else live_call_on(self.doors)(person_id)

    async def close(self) -> None:
        """Stop loading (if still at it), end live calls, close what the doors opened."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._stack.aclose()
