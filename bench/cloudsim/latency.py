"""The latency models of the simulated cloud path, all in one place with their sources.

Every figure here is a published or field-measured one, as collected in issue 28 (the
issue names the measurements; no URL is repeated here). Replace a model with measured
figures by editing this file only: the simulator and the bench read nothing else.

- Gemini 2.5 Flash, thinking off, multi-turn chat with tools: time to the first token or
  tool call p50 ~ 550 ms, p95 ~ 850 ms, with a rare slow answer up to ~ 2.4 s; output at
  ~ 220 tokens/s; a function call arrives whole in one streamed event at its first-token
  time, and text and a function call may share one response.
- Google Speech-to-Text (`latest_long`, streaming): final result ~ 880 ms p50 after the
  end of speech. No p95 was published; the spread below is an assumption. When its
  interim result with the words up to the end of speech comes is not published either:
  `GOOGLE_STT_INTERIM_AFTER_SPEECH` is an assumption (its reasoning is beside it).
- Google Text-to-Speech: first audio byte ~ 200 ms streaming, ~ 700 ms without streaming.
  Spreads are assumptions, and so is the pace of the rest of a streamed sentence.
- Both speech fakes (bench/cloudsim/speech.py) draw from these per utterance / sentence.
- Offline hearing and speech (this machine, BENCHMARKS.md "Voice latency", the landed
  offline passes): end of speech -> VAD stop 226 ms, Whisper 144 ms, turn end 18 ms;
  first audio of a sentence 30 ms. Medians only: the turn-level bench adds them as
  constants (bench/cloud_voice.py says so in its report).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

_Z95 = 1.6448536269514722  # the standard normal's 95th percentile


@dataclass(frozen=True, slots=True)
class LogNormal:
    """A lognormal fitted to a median and a 95th percentile, with a rare slow tail."""

    p50_s: float
    p95_s: float
    tail_probability: float = 0.0
    tail_low_s: float = 0.0
    tail_high_s: float = 0.0

    @property
    def sigma(self) -> float:
        # The tail lies above the body's p95, so the body is fitted to leave room for it:
        # P(body > p95) * (1 - tail) + tail = 5 %.
        share_above = (0.05 - self.tail_probability) / (1.0 - self.tail_probability)
        z = _inverse_normal(1.0 - share_above)
        return math.log(self.p95_s / self.p50_s) / z

    def draw(self, rng: random.Random) -> float:
        if self.tail_probability and rng.random() < self.tail_probability:
            return rng.uniform(self.tail_low_s, self.tail_high_s)
        return rng.lognormvariate(math.log(self.p50_s), self.sigma)


@dataclass(frozen=True, slots=True)
class ModelLatency:
    """How a streamed model answer is paced."""

    first_token: LogNormal
    tokens_per_s: float
    # How many output tokens one streamed event carries (Gemini's chunks vary; small
    # chunks make the first sentence's end as early as the rate allows).
    tokens_per_event: int = 8

    def first_token_s(self, rng: random.Random) -> float:
        return self.first_token.draw(rng)


GEMINI_2_5_FLASH = ModelLatency(
    first_token=LogNormal(p50_s=0.55, p95_s=0.85, tail_probability=0.015, tail_low_s=1.2, tail_high_s=2.4),
    tokens_per_s=220.0,
)

# No waiting at all: contract tests (pacing is a bench's business, never a test's).
INSTANT = ModelLatency(first_token=LogNormal(p50_s=1e-9, p95_s=2e-9), tokens_per_s=1e9, tokens_per_event=8)

GOOGLE_STT_FINAL = LogNormal(p50_s=0.88, p95_s=1.2)  # p95 assumed
# ASSUMPTION, no figure is published: the interim result holding the words up to the end
# of speech comes this long after the last loud audio. Google streams interims while audio
# comes in, and the final's ~880 ms is mostly its endpointer waiting out the pause, not
# recognition; an interim needs only recognition and the network, taken here as about a
# third of the final's time (p50 300 ms, p95 500 ms). The lead it gives the speculative
# first call is the final's time minus this, so a slower interim means a smaller lead:
# measure it against real Google before trusting the all-simulated speculating rows.
GOOGLE_STT_INTERIM_AFTER_SPEECH = LogNormal(p50_s=0.30, p95_s=0.50)
GOOGLE_TTS_STREAMING_FIRST_BYTE = LogNormal(p50_s=0.20, p95_s=0.30)  # p95 assumed
GOOGLE_TTS_FIRST_BYTE = LogNormal(p50_s=0.70, p95_s=0.95)  # without streaming; p95 assumed
# After its first byte a streamed sentence arrives this many times faster than it is
# heard (an assumption: no figure was published; it only has to outrun playback).
GOOGLE_TTS_STREAMING_SPEED = 4.0

# Offline hearing: end of speech -> the turn's end (the VAD's stop, Whisper, the turn-end
# wait), drawn per turn; offline speech: a sentence's first audio (its text -> the first
# TTS frame). Both measured by `bench.voice_latency --utterances 100 --calls 4 --per-call 25`
# on a quiet machine, one call, 100 turns (BENCHMARKS.md, "The offline check on a quiet
# machine (session 7)"): the turn's end 246 / 316 ms p50 / p95, first audio 23 ms p50.
OFFLINE_HEARING = LogNormal(p50_s=0.246, p95_s=0.316)
OFFLINE_SPEECH_FIRST_AUDIO_S = 0.023

# How long before the turn ends its words are foreseen, where the call door begins Ava's
# first call. Measured in the call's own pipeline (bench.turn_end): under load 0 of 10 finished
# requests were foreseen before their turn ended ("The turn's end, sooner"), since the turn
# ends the moment Whisper's guess is in; on a quiet machine 6-7 of 13, by 20 / 42 ms p50 / p95
# ("Trailing utterances a person would make"). Taken as none; `--lead-ms` asks what one buys.
SPECULATIVE_TRANSCRIPT_AHEAD_S = 0.0
# A person who goes on speaking does so this long after the first guess began (an
# assumption: the VAD's pause is 60 ms, its stop 200 ms; resuming in between).
WENT_ON_AFTER_S = 0.1


def _inverse_normal(p: float) -> float:
    """The standard normal quantile (bisection is plenty for a parameter file)."""
    low, high = -10.0, 10.0
    for _ in range(100):
        mid = (low + high) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2
