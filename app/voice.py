"""Building the call doors: the speech engines (Google Cloud with credentials, offline
otherwise), the doors over the turns and the wallet, the chat's view of a live call (for
a wake note said on it), and hanging up at shutdown.

Voice (Pipecat, the speech engines) is imported only inside these functions, so a root
that never builds a call door never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from agents import SpokenReply
from chat import LiveCall, People, Tickets, TokenVerifier, Turns, Wallet
from settings import Settings

if TYPE_CHECKING:
    from voice import Engines, VoiceDoors

log = logging.getLogger("avagenc")

# How long shutdown waits for the Whisper preload thread: a native thread still loading
# the model when the interpreter exits aborts the process (exit 134).
PRELOAD_JOIN_S = 60.0
# How long live calls get for Ava's goodbye at shutdown before they are cut.
_CALLS_END_S = 10.0


def choose_engines(
    settings: Settings, stack: contextlib.AsyncExitStack
) -> tuple[Engines, str, threading.Thread | None]:
    """Speech engines for calls: Google Cloud with credentials, offline otherwise; and the
    thread loading the offline models, when one was started."""
    from voice import Engines
    from voice.prosody import emotion_to_ssml, strip_stray_tags

    transforms = [("*", emotion_to_ssml), ("*", strip_stray_tags)]
    if settings.google_speech_credentials is not None:
        from voice.engines.google import SsmlGoogleHttpTTSService, google_stt

        path = str(settings.google_speech_credentials)
        return (
            Engines(
                stt=lambda: google_stt(path, settings.google_stt_languages),
                tts=lambda: SsmlGoogleHttpTTSService(
                    credentials_path=path, voice=settings.google_tts_voice, text_transforms=transforms
                ),
            ),
            "Google Cloud STT + TTS",
            None,
        )
    from voice.engines.offline import offline_engines, preload_offline

    preload: threading.Thread | None = None
    if settings.voice_preload:
        preload = threading.Thread(
            target=preload_offline, args=(settings.voice_tts,), name="speech-preload", daemon=True
        )
        preload.start()
        stack.push_async_callback(asyncio.to_thread, preload.join, PRELOAD_JOIN_S)
    engines, speech = offline_engines(
        tts=settings.voice_tts,
        transforms=transforms,
        models_dir=settings.avagenc_home / "models",
        stt_workers=settings.voice_stt_workers,
    )
    return engines, speech, preload


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
        ),
    )
    voice.registry.slots = CallSlots.for_url(dsn)  # one call per person across every instance
    stack.push_async_callback(end_calls, voice)
    return voice, speech, preload


async def end_calls(voice: VoiceDoors) -> None:
    """Every live call hears Ava's goodbye and gets `hangup` (reason `shutdown`); what has
    not ended within _CALLS_END_S is cut. A browser pipeline still running after that is
    cancelled, since one left to the loop's final cancel-all never finishes."""
    from voice import end_webrtc_calls

    await voice.end_all_calls(reason="shutdown", timeout_s=_CALLS_END_S)
    await end_webrtc_calls()


def live_call_on(voice: VoiceDoors) -> LiveCall:
    """The chat's view of a person's live call in this process: its channel and its voice."""

    def live_call(person_id: str) -> tuple[str, Callable[[SpokenReply], Awaitable[None]]] | None:
        call = voice.registry.live_for(person_id)
        return None if call is None or call.speak is None else (call.channel, call.speak)

    return live_call


class VoiceLater:
    """The call doors built while the server already serves text (`avagenc serve`).

    Importing voice (Pipecat, WebRTC, NumPy, the speech engines) is most of a server's
    start: measured in bench/cold_start.py, it kept `/readyz` seconds away, and with
    scale-to-zero that is the first request's wait (issue 24). So the serving process
    answers text as soon as its database is ready, imports voice in a worker thread, then
    builds the doors on the loop and hands them to `attach` (which adds their routes). A
    call that arrives meanwhile waits for the doors (web.DoorsStarting), so nothing is
    refused; everything built here is closed by `close`, at the place in the server's
    shutdown where the doors would have been."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.doors: VoiceDoors | None = None
        self.speech = "loading in the background"
        self.preload: threading.Thread | None = None
        self._stack = contextlib.AsyncExitStack()
        self._task: asyncio.Task[None] | None = None

    def start(
        self,
        build: Callable[[contextlib.AsyncExitStack], tuple[VoiceDoors, str, threading.Thread | None]],
        attach: Callable[[VoiceDoors], None],
    ) -> None:
        async def load() -> None:
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
                self.ready.set()

        self._task = asyncio.create_task(load(), name="voice-later")

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
