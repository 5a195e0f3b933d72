"""The one voice pipeline every door uses (SPEC §9.1):

    transport in -> STT -> captions -> user turn (Silero VAD + turn stop) -> Ava -> TTS -> transport out

Doors differ only in their transport (a partner speaker's WebSocket, WebRTC, a phone
stream); engines differ only in which STT/TTS the composition root hands in. The user
aggregator detects the end of the person's turn and broadcasts barge-ins; Ava's
processor runs the turn; the TTS speaks each sentence with its emotion's prosody.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
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
from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from voice.agent import AvaVoiceAgent
from voice.captions import UserCaptions


@dataclass(frozen=True, slots=True)
class Engines:
    """How to make this process's speech engines; one fresh pair per call."""

    stt: Callable[[], STTService]
    tts: Callable[[], TTSService]


@dataclass(frozen=True, slots=True)
class TurnTiming:
    """How quickly the end of the person's turn is decided. Short pauses answer faster;
    too short and Ava talks over someone who was only taking a breath."""

    vad_stop_s: float = 0.2
    speech_timeout_s: float = 0.3


@dataclass
class CallPipeline:
    worker: PipelineWorker
    agent: AvaVoiceAgent
    extra: list[FrameProcessor] = field(default_factory=list)


def build_call(
    *,
    transport: BaseTransport,
    engines: Engines,
    agent: AvaVoiceAgent,
    sample_rate_in: int,
    sample_rate_out: int,
    timing: TurnTiming = TurnTiming(),
    before_output: list[FrameProcessor] | None = None,
) -> CallPipeline:
    """Assemble one call's pipeline and the worker that runs it."""
    user_turns = LLMContextAggregatorPair(
        LLMContext(),
        user_params=LLMUserAggregatorParams(
            vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=timing.vad_stop_s)),
            user_turn_strategies=UserTurnStrategies(
                stop=[SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=timing.speech_timeout_s)]
            ),
        ),
    )
    extra = before_output or []
    pipeline = Pipeline(
        [
            transport.input(),
            engines.stt(),
            UserCaptions(),
            user_turns.user(),
            agent,
            engines.tts(),
            *extra,
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
