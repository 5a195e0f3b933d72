"""The one voice pipeline every door uses (docs/sockets.md#voice-pipeline):

    transport in -> STT -> captions -> user turn (Silero VAD + turn stop) -> Ava -> TTS
        -> captions in step -> transport out

Doors differ only in their transport (a partner speaker's WebSocket, WebRTC, a phone
stream); engines differ only in which STT/TTS the composition root hands in. The user
aggregator detects the end of the person's turn and broadcasts barge-ins; Ava's
processor runs the turn; the TTS speaks each sentence with its emotion's prosody.

Three things are wired here beyond Pipecat's defaults. The VAD tells a speculating STT the
moment the person falls quiet and when they go on (`PauseAwareVAD`), so recognition
overlaps the VAD's stop wait. The turn ends sooner when the person's words sound finished
than when they trail off (`FinishedWordsStop`). And the assistant's captions are sent as
each sentence's audio starts (`AssistantCaptions` after the TTS), not when the TTS lets
them through.
The recogniser and the voice follow the person's language (`build_call(language=...)`).

Silero's model is loaded once per process and shared by every call of every door; each
call keeps only its own recurrent state (`CallSilero`). Pipecat's analyzer loaded the model
again for each call, on the event loop, while building the call: 70-90 ms on a quiet machine,
0.2-0.4 s under load, with every other call's audio and turns waiting. The shared model is
loaded at startup beside the speech engines (`preload_vad`), or else by the first call's VAD
on its own thread, never on the loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol, runtime_checkable

from pipecat.audio.vad.silero import SileroOnnxModel, SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams, VADState
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.services.stt_service import STTService
from pipecat.services.tts_service import TTSService
from pipecat.transports.base_transport import BaseTransport
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from voice.agent import AvaVoiceAgent
from voice.captions import AssistantCaptions, UserCaptions
from voice.tracing import CallTrace
from voice.turn_end import FinishedWordsStop, Foresight


@dataclass(frozen=True, slots=True)
class Engines:
    """How to make this process's speech engines; one fresh pair per call.

    `stt`/`tts` serve every language without an entry of its own in the `*_by_language`
    maps (keyed by ISO 639-1 code, e.g. "id")."""

    stt: Callable[[], STTService]
    tts: Callable[[], TTSService]
    stt_by_language: Mapping[str, Callable[[], STTService]] = field(default_factory=dict)
    tts_by_language: Mapping[str, Callable[[], TTSService]] = field(default_factory=dict)

    def for_language(self, language: str) -> tuple[STTService, TTSService]:
        """A fresh recogniser and voice for a call with someone who speaks `language`."""
        stt = self.stt_by_language.get(language, self.stt)
        tts = self.tts_by_language.get(language, self.tts)
        return stt(), tts()


@runtime_checkable
class PauseListener(Protocol):
    """An STT that can start work when the person pauses (see `WhisperSTTService`)."""

    def speech_paused(self) -> None: ...

    def speech_resumed(self) -> None: ...


@runtime_checkable
class Foreseeing(Protocol):
    """An STT that can tell a guess's words before the turn ends (see `WhisperSTTService`)."""

    def set_foresight(self, foresight: Foresight) -> None: ...


@runtime_checkable
class BandAware(Protocol):
    """An STT that hears narrowband audio (a phone line) its own way (see `WhisperSTTService`)."""

    def hear_narrowband(self) -> None: ...


_silero: Any = None  # the process's one Silero ONNX session (onnxruntime's runs are thread-safe)
_silero_lock = threading.Lock()


def silero_session() -> Any:
    """The process's Silero session, loaded on the first call (thread-safe, blocking)."""
    global _silero
    with _silero_lock:
        if _silero is None:
            path = resources.files("pipecat.audio.vad.data").joinpath("silero_vad.onnx")
            # Pipecat's wrapper opens the session with its options (CPU, one thread per run).
            _silero = SileroOnnxModel(str(path), force_onnx_cpu=True).session  # type: ignore[no-untyped-call]
        return _silero


def preload_vad() -> None:
    """Load Silero's model now (servers call this at startup, in a background thread)."""
    silero_session()


class CallSilero(SileroOnnxModel):
    """Silero's recurrent state and audio context for one call, over the process's one
    session: what Pipecat's wrapper keeps per instance, without loading the model again."""

    def __init__(self) -> None:  # the base's would load the model
        self.sample_rates = [8_000, 16_000]
        self.reset_states()  # type: ignore[no-untyped-call]  # untyped in Pipecat

    @property
    def session(self) -> Any:
        # Read on the VAD's own thread (Pipecat runs the model in the analyzer's executor).
        return silero_session()


class PauseAwareVAD(SileroVADAnalyzer):
    """Silero VAD that also reports a pause once it has lasted `pause_s` (well before the
    stop that follows `stop_secs` of quiet), and the speech that resumes after it.

    The VAD dips out of "speaking" for a frame or two between words all the time; waiting
    for a little quiet keeps those dips from starting a transcription that is thrown away.
    The model is the process's (`CallSilero`); the state is this call's.
    """

    def __init__(self, *, listener: PauseListener | None = None, pause_s: float = 0.06, **kwargs: Any) -> None:
        # Not SileroVADAnalyzer.__init__: it loads the model. What it sets besides is set here
        # (tests/integration/test_call_vad.py compares the two).
        VADAnalyzer.__init__(self, **kwargs)
        self._model = CallSilero()
        self._windows_since_reset = 0
        self._low_confidence_windows = 0
        self.listener = listener
        self._pause_s = pause_s
        self._last_state = VADState.QUIET
        self._quiet_bytes = 0
        self._paused = False

    async def analyze_audio(self, buffer: bytes) -> VADState:
        state = await super().analyze_audio(buffer)
        before, self._last_state = self._last_state, state
        if self.listener is None:
            return state
        if state == VADState.STOPPING:
            self._quiet_bytes = self._quiet_bytes + len(buffer) if before == VADState.STOPPING else len(buffer)
            quiet_s = self._quiet_bytes / (2 * self.num_channels * self.sample_rate)
            if not self._paused and quiet_s >= self._pause_s:
                self._paused = True
                self.listener.speech_paused()
        elif state == VADState.SPEAKING and self._paused:
            self._paused = False
            self.listener.speech_resumed()
        elif state == VADState.QUIET:
            self._paused = False  # the stop that follows a pause; the STT takes it from here
        return state


@dataclass(frozen=True, slots=True)
class TurnTiming:
    """How quickly the end of the person's turn is decided. Short pauses answer faster;
    too short and Ava talks over someone who was only taking a breath."""

    vad_stop_s: float = 0.2
    # After the VAD's stop, how long Ava waits for more when the words so far sound
    # unfinished ("turn on the") and when they sound finished (`voice.turn_end`). Equal
    # values give one fixed wait, as Pipecat's speech timeout does.
    speech_timeout_s: float = 0.8
    # No wait at all when they sound finished: the turn ends on Whisper's words or the stop,
    # whichever is later (voice.turn_end says why a wait there guarded no one).
    finished_timeout_s: float = 0.0
    # Speech the VAD needs before it believes someone is talking. Pipecat's 0.2 s must be
    # unbroken, and a short word's stop consonant breaks it: "thank you", "no", "hi" went
    # unheard at some frame alignments (28 of 144 tries); 0.1 s missed none.
    vad_start_s: float = 0.1
    # Quiet after which recognition starts speculatively; 0 (or >= vad_stop_s) turns it off.
    pause_s: float = 0.06
    # Whether Ava's first model call begins on finished-sounding words during the turn-end
    # wait (voice.turn_end, chat.speculation).
    speculative_first_call: bool = True


@dataclass
class CallPipeline:
    worker: PipelineWorker
    agent: AvaVoiceAgent
    extra: list[FrameProcessor] = field(default_factory=list)


def call_vad(timing: TurnTiming, stt: STTService | None = None) -> PauseAwareVAD:
    """The VAD a call listens with; it tells `stt` of pauses when it can speculate."""
    params = VADParams(start_secs=timing.vad_start_s, stop_secs=timing.vad_stop_s)
    speculating = 0 < timing.pause_s < timing.vad_stop_s  # a pause the stop does not already cover
    listener = stt if speculating and isinstance(stt, PauseListener) else None
    return PauseAwareVAD(listener=listener, pause_s=timing.pause_s, params=params)


def turn_stop(timing: TurnTiming, language: str = "en", foresight: Foresight | None = None) -> FinishedWordsStop:
    """How a call decides that the person, speaking `language`, has finished their turn
    (telling `foresight` the words it waits on, when the timing speculates)."""
    # Settings refuse a finished wait longer than the unfinished one; the strategy asserts it.
    return FinishedWordsStop(
        finished_s=timing.finished_timeout_s,
        unfinished_s=timing.speech_timeout_s,
        language=language,
        foresight=foresight if timing.speculative_first_call else None,
    )


def build_call(
    *,
    transport: BaseTransport,
    engines: Engines,
    agent: AvaVoiceAgent,
    sample_rate_in: int,
    sample_rate_out: int,
    timing: TurnTiming = TurnTiming(),
    before_output: list[FrameProcessor] | None = None,
    language: str = "en",
    narrowband: bool = False,
    trace: CallTrace | None = None,
    foresight: Foresight | None = None,
) -> CallPipeline:
    """Assemble one call's pipeline and the worker that runs it; `narrowband` when the
    person's audio came at less than 16 kHz (a phone line), whatever rate the pipeline runs
    at; `trace` places the taps that make each turn's voice spans (voice.tracing);
    `foresight` hears the words of a turn about to end (voice.turn_end)."""
    stt, tts = engines.for_language(language)
    heard: list[FrameProcessor] = []
    ended: list[FrameProcessor] = []
    spoken: list[FrameProcessor] = []
    if trace is not None:
        hearing, turning, speaking = trace.taps()
        heard, ended, spoken = [hearing], [turning], [speaking]
    if narrowband and isinstance(stt, BandAware):
        stt.hear_narrowband()
    stop = turn_stop(timing, language, foresight)
    if foresight is not None and timing.speculative_first_call and isinstance(stt, Foreseeing):
        stt.set_foresight(stop.guesses())  # its guesses, with the turn's earlier words
    user_turns = LLMContextAggregatorPair(
        LLMContext(),
        user_params=LLMUserAggregatorParams(
            vad_analyzer=call_vad(timing, stt),
            user_turn_strategies=UserTurnStrategies(stop=[stop]),
            # A turn that ends with no words runs nothing. Pipecat's default "recovery" adds a
            # developer note and resends the context, whose newest user message is the
            # previous one: Ava answered that request twice when Whisper was slow.
            empty_user_turn=None,
        ),
    )
    extra = before_output or []
    pipeline = Pipeline(
        [
            transport.input(),
            stt,
            *heard,
            UserCaptions(),
            user_turns.user(),
            *ended,
            agent,
            tts,
            AssistantCaptions(),
            *extra,
            *spoken,
            transport.output(),
        ]
    )
    worker = PipelineWorker(
        pipeline,
        params=PipelineParams(
            audio_in_sample_rate=sample_rate_in,
            audio_out_sample_rate=sample_rate_out,
            enable_metrics=True,
            enable_usage_metrics=True,
        ),
        # Our own call limits end idle calls; Pipecat's 5-minute idle cancel would cut
        # a call short without a goodbye.
        idle_timeout_secs=None,
        enable_rtvi=False,
    )
    return CallPipeline(worker=worker, agent=agent, extra=extra)
