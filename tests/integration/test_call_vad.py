"""Every call's VAD shares the process's one Silero model and keeps its own state
(voice/pipeline.py, `CallSilero`): building a call loads nothing, two calls heard at once
decide their speech apart, and a call's VAD is what Pipecat's own analyzer would be.

Real espeak-ng speech through the real model, the two calls' audio interleaved frame by
frame on their own threads, as two calls' VADs run in one process.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams, VADState

from tests.fakes.speech import silence, speech_pcm16
from voice.pipeline import PauseAwareVAD, TurnTiming, call_vad, silero_session

RATE = 16_000
STEP = int(RATE * 0.02) * 2  # 20 ms frames


def _vad() -> PauseAwareVAD:
    vad = call_vad(TurnTiming())
    vad.set_sample_rate(RATE)
    return vad


async def _states(vad: SileroVADAnalyzer, pcm: bytes) -> list[VADState]:
    return [await vad.analyze_audio(pcm[i : i + STEP]) for i in range(0, len(pcm), STEP)]


async def test_calls_share_one_model_and_building_one_loads_nothing() -> None:
    silero_session()  # loaded once, as a server's startup does
    started = time.perf_counter()
    first, second = _vad(), _vad()
    built_s = time.perf_counter() - started
    assert first._model.session is second._model.session is silero_session()
    assert first._model is not second._model
    # Pipecat's analyzer took 70-90 ms per call on a quiet machine (loading the model).
    assert built_s < 0.02, built_s


def _confidences(vad: PauseAwareVAD, pcm: bytes) -> list[float]:
    window = 2 * vad.num_frames_required()
    return [_score(vad.voice_confidence(pcm[i : i + window])) for i in range(0, len(pcm) - window + 1, window)]


def _score(confidence: object) -> float:
    """Silero's confidence for one window (Pipecat hands back the model's one-element array)."""
    return float(np.asarray(confidence).reshape(-1)[0])


async def test_two_calls_at_once_keep_their_own_state() -> None:
    one = silence(0.3) + await speech_pcm16("turn on the bedroom light") + silence(0.6)
    other = silence(0.8) + await speech_pcm16("what can you do") + silence(1.0)
    other = other[: len(one)] + silence(max(0, len(one) - len(other)) / 2 / RATE)
    quiet = silence(len(one) / 2 / RATE)
    # Alone: what each call's VAD makes of its audio.
    alone = [_confidences(_vad(), pcm) for pcm in (one, other)]
    alone_states = [await _states(_vad(), pcm) for pcm in (one, quiet)]
    assert VADState.SPEAKING in alone_states[0] and set(alone_states[1]) == {VADState.QUIET}
    # Together, window by window, each on its own thread over the one shared model: a state
    # shared between them would carry one call's speech into the other's scores.
    first, second = _vad(), _vad()
    window = 2 * first.num_frames_required()
    together: list[list[float]] = [[], []]
    for i in range(0, len(one) - window + 1, window):
        a, b = await asyncio.gather(
            asyncio.to_thread(first.voice_confidence, one[i : i + window]),
            asyncio.to_thread(second.voice_confidence, other[i : i + window]),
        )
        together[0].append(_score(a))
        together[1].append(_score(b))
    assert np.allclose(together[0], alone[0], atol=1e-5)
    assert np.allclose(together[1], alone[1], atol=1e-5)
    assert not np.allclose(alone[0], alone[1], atol=0.05), "the two calls heard different speech"
    # And the decisions: a call hearing speech beside one hearing silence.
    talking, silent = _vad(), _vad()
    states: list[list[VADState]] = [[], []]
    for i in range(0, len(one), STEP):
        a_state, b_state = await asyncio.gather(
            talking.analyze_audio(one[i : i + STEP]), silent.analyze_audio(quiet[i : i + STEP])
        )
        states[0].append(a_state)
        states[1].append(b_state)
    assert states == alone_states


async def test_a_calls_vad_decides_as_pipecats_own_analyzer() -> None:
    pcm = silence(0.3) + await speech_pcm16("what can you do") + silence(0.6)
    params = VADParams(start_secs=0.1, stop_secs=0.2)
    ours = PauseAwareVAD(params=params)
    theirs = SileroVADAnalyzer(params=params)
    for vad in (ours, theirs):
        vad.set_sample_rate(RATE)
    assert await _states(ours, pcm) == await _states(theirs, pcm)
    # Everything Pipecat's analyzer sets up, ours has (it skips only the model's loading).
    assert set(vars(theirs)) <= set(vars(ours))
