"""Narrowband hearing and speaking: how well the offline recogniser hears a phone line, by
which of the choices at hand, and whether Ava's voice survives the line.

*Hearing.* Clips go down a phone line as a call's audio does: PCM16 to 8 kHz μ-law (what a
handset network carries), back to PCM16 and up to 16 kHz by the same resampler the phone
door's serializer uses (`voice.phone_line.LineUpsampler`; `--line-in both` also makes every
clip with Pipecat's SoX resampler, the door's before issue 29's third pass, and hears both),
with the silence around them the pipeline's segments carry. The
clips are the 14 commands and 8 that name the team in two voices (the neural voice and
espeak-ng), plus phrases made in other espeak-ng voices, speeds and pitches, standing in
for people's voices. Each choice hears every clip; the word error rate (normalised as `bench.voice_intelligibility`
does) and the time per clip are reported side by side, timed in the same run:

- `full`: faster-whisper's own path through Whisper's 30 s window (what the phone door uses);
- `short N`: the short window of the speaker door, at least N seconds;
- `short N + fill`: the same, with a faint noise above 4 kHz where the line left nothing
  (Whisper was trained on full-band audio; an empty upper band is itself unusual to it),
  at -60 dBFS and at louder and fainter levels;
- `short 15 + fill, the 30 s window when unsure`: the filled short window, and the full
  window again when the decoder's average log-probability is below Whisper's -1.0;
- `base full`: the multilingual Whisper base in English, through the 30 s window.

The phone door's choice is also weighed reason by reason: for each reason a short decode is
heard again (`voice.engines.whisper.second_look`: the decoder unsure, a command naming no
device, a word near a known one), how many clips it sent to the 30 s window, how many of
those the second look changed, and the word errors and device words each subset of the
reasons would give (the 30 s window's words taken from the `full` choice where no second
look ran).

`--shifts` hears every clip three times, its speech starting 0.3, 0.5 and 0.7 s into the
segment (where the VAD's start falls varies from call to call): borderline decodes flip on
small changes, and the three together tell a real difference from a lucky one.

The choice is the fastest whose word errors are no more than `full`'s on the same clips and
that heard as many of the device words ("bedroom", "light"…): a command cannot do without
them, whatever the word error rate says.
Speculation during the pause is not a hearing choice (it reuses the same transcription,
begun earlier) and is on for phone calls whichever wins; its gain shows in
`bench.voice_phone`.

*Speaking.* Ava's 32 typical replies (and the team's names) in the neural voice, each in its
emotion, through the phone door's `LineSignal` (anti-aliased 8 kHz, the line's high-pass,
a phone's loudness), to μ-law and back, heard through the full 30 s window, one listener
whichever way of hearing wins above, so the voice's figure moves only with the voice;
target <= 5 % word error. The active speech level of each sentence on the line is reported
in dBm0 (about -20 is a telephone network's nominal speech level).

*Vocabulary* (`--vocabulary`, issue 29's names): the same clips plus commands that name
the team ("Zee, turn on the bedroom light"), each heard down the phone line and as the
speaker door hears it (16 kHz, no line), with no prompt, the room's names
(`voice.vocabulary`, what calls use) and the names with the sandbox devices, in the same
run. Besides the word error rate it counts, word by word, how many of the team's names and
of the device words in what was said were heard.

`--limit N` hears the first N clips of each set only (a smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pipecat.audio.utils import create_stream_resampler, pcm_to_ulaw, ulaw_to_pcm

from agents import SANDBOX_DEVICE_NAMES, team_names
from bench.report import write
from bench.turn_overhead import cpu_model
from bench.voice_intelligibility import REPLIES, edit_distance, words
from voice.engines.espeak import synthesize
from voice.engines.hibari import HIBARI_RATE, preload_hibari, synthesize_neural
from voice.engines.whisper import (
    TINY_EN,
    UNSURE,
    Recogniser,
    decode_short,
    fill_upper_band,
    second_look,
    set_models_dir,
    transcribe_full_window,
    transcribe_pcm16,
    whisper_model,
)
from voice.engines.whisper import UNSURE_LOG_PROB as DOOR_UNSURE_LOG_PROB
from voice.phone_line import DBM0_FROM_DBFS, LineSignal, LineUpsampler
from voice.prosody import emotion_to_ssml, strip_stray_tags, text_type_for
from voice.vocabulary import NO_DEVICE, doubt, doubts, room_prompt, room_words, zee_addressed

RESULTS = Path(__file__).parent / "results"
RATE = 16_000
LINE_RATE = 8_000
LEAD_S = 0.5  # before the speech: what the segmented STT buffers ahead of the VAD's start
TAIL_S = 0.5  # after it: the segment's padding after the VAD's stop
TARGET_SPEAKING_WER = 0.05
SHIFT_S = 0.2  # `--shifts`: the speech this much earlier and later in its segment
FILL_DBFS = -60.0  # the faint noise above 4 kHz of the `fill` choices
# `second look`: a short decode less sure than this (average log-probability; Whisper's own
# threshold for decoding again) is heard again through the 30 s window.
UNSURE_LOG_PROB = -1.0

COMMANDS: tuple[str, ...] = (
    "turn on the bedroom light",
    "turn off the bedroom light",
    "turn on the living room light",
    "turn off the living room light",
    "open the living room curtain",
    "close the living room curtain",
    "play some jazz",
    "remind me in five minutes to call mom",
    "hello",
    "hi there",
    "good morning",
    "thank you",
    "thanks a lot",
    "what can you do",
)
# Other speakers, roughly: espeak-ng voices and variants, with a rate and a pitch each.
PEOPLE: tuple[tuple[str, str, str, str], ...] = (
    ("what's on my calendar tomorrow", "en-us+m3", "85%", "-10%"),
    ("set the living room to twenty two degrees", "en-gb", "115%", "0%"),
    ("turn off all the lights please", "en+f2", "100%", "+15%"),
    ("any new email today", "en-us+f4", "125%", "+5%"),
    ("pause the music", "en-gb-x-rp", "90%", "-5%"),
    ("what time is it", "en+m7", "110%", "0%"),
    ("close the curtain halfway", "en-us+f3", "95%", "+20%"),
    ("remind me to buy milk at six", "en-gb-scotland", "100%", "-15%"),
    ("turn the volume down a little", "en-us", "140%", "0%"),
    ("who are you", "en+klatt", "80%", "+10%"),
)
# Commands that name who should act, as people say them to the room.
ADDRESSED: tuple[str, ...] = (
    "Zee, turn on the bedroom light",
    "Zee, turn off the living room light",
    "ask Zee to close the living room curtain",
    "Yori, play some jazz",
    "Yori, pause the music",
    "Rafal, any new email today",
    "Rafal, what's on my calendar tomorrow",
    "Ava, what can you do",
)
NAMES: tuple[tuple[str, str | None], ...] = (
    ("Zee has turned on the light.", None),
    ("Yori is playing your playlist.", "affectionate"),
    ("Rafal found two new emails.", None),
    ("I'll ask Zee, Yori and Rafal.", None),
)


async def to_16k(pcm: bytes, rate: int) -> bytes:
    resampler = create_stream_resampler()
    return await resampler.resample(pcm, rate, RATE) + await resampler.flush()


LINE_IN = "line"  # the phone door's way in (LineUpsampler)
SOX_IN = "sox"  # Pipecat's stream resampler, the door's way in before


async def down_the_line(pcm16k: bytes, line_in: str = LINE_IN) -> bytes:
    """16 kHz PCM16 -> 8 kHz μ-law -> 16 kHz PCM16, as a phone call's audio reaches Whisper."""
    ulaw: bytes = await pcm_to_ulaw(pcm16k, RATE, LINE_RATE, create_stream_resampler())
    up = LineUpsampler() if line_in == LINE_IN else create_stream_resampler()
    back: bytes = await ulaw_to_pcm(ulaw, LINE_RATE, RATE, up)
    return back


def padded(pcm16k: bytes) -> bytes:
    return bytes(int(LEAD_S * RATE) * 2) + pcm16k + bytes(int(TAIL_S * RATE) * 2)


@dataclass(frozen=True, slots=True)
class Clip:
    text: str
    source: str  # which voice said it
    audio: bytes  # 16 kHz PCM16 after the phone line


async def command_clips(line_in: str = LINE_IN) -> list[Clip]:
    clips = []
    for text in (*COMMANDS, *ADDRESSED):
        pcm, rate = await synthesize_neural(text)
        clips.append(Clip(text, "neural", await down_the_line(padded(await to_16k(pcm, rate)), line_in)))
        pcm, rate = await synthesize(text)
        clips.append(Clip(text, "espeak-ng", await down_the_line(padded(await to_16k(pcm, rate)), line_in)))
    return clips


async def people_clips(line_in: str = LINE_IN) -> list[Clip]:
    clips = []
    for text, voice, speed, pitch in PEOPLE:
        ssml = f'<speak><prosody rate="{speed}" pitch="{pitch}">{text}</prosody></speak>'
        pcm, rate = await synthesize(ssml, voice=voice)
        source = f"espeak-ng {voice} {speed} {pitch}"
        clips.append(Clip(text, source, await down_the_line(padded(await to_16k(pcm, rate)), line_in)))
    return clips


def with_fill(pcm: bytes, dbfs: float = FILL_DBFS) -> bytes:
    """Faint noise where the line left nothing (above 3.9 kHz), seeded, at `dbfs` (the phone
    door's own fill, `voice.engines.whisper.fill_upper_band`)."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768.0
    return bytes((fill_upper_band(samples, dbfs) * 32767).astype("<i2").tobytes())


BASE_EN = Recogniser(model="base", language="en")
Hear = Callable[[bytes], str]
FULL = "full (30 s window; the phone door's before issue 29's short window)"
SECOND_LOOK = "short 15 + fill, the 30 s window when unsure"


def filled_second_look(pcm: bytes) -> str:
    """The filled short window, and the 30 s window again when its decoder was unsure."""
    text, avg_logprob = decode_short(np.frombuffer(with_fill(pcm), dtype="<i2").astype(np.float32) / 32768.0, TINY_EN)
    return transcribe_full_window(pcm, TINY_EN) if avg_logprob < UNSURE_LOG_PROB else text


SHORT_FIRST = "short 15 + fill, the 30 s window when unsure or not what the room expects (the phone door's)"
EXPECTED = room_words()


def short_first_unfilled(pcm: bytes) -> str:
    """The short window without the fill, the 30 s window when unsure or not what the room expects."""
    text, avg_logprob = decode_short(np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0, TINY_EN)
    if avg_logprob < UNSURE_LOG_PROB or doubt(text, EXPECTED):
        return transcribe_full_window(pcm, TINY_EN)
    return text


@dataclass(frozen=True, slots=True)
class Look:
    """What the phone door's choice did with one clip: its short decode, every reason to hear
    it again, and whether it did."""

    short: str
    reasons: tuple[str, ...]  # UNSURE, NO_DEVICE, NEAR (all that apply)
    second: bool


NEAR = "a word near a known one"
LOOKS: dict[int, Look] = {}  # by hash of the clip's audio


def short_first_traced(pcm: bytes) -> str:
    """`transcribe_narrowband` step by step (its own functions, in its order), noting why."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    text, avg_logprob = decode_short(fill_upper_band(samples), TINY_EN)
    reasons = ([UNSURE] if avg_logprob < DOOR_UNSURE_LOG_PROB else []) + [
        NO_DEVICE if r == NO_DEVICE else NEAR for r in doubts(text, EXPECTED)
    ]
    second = bool(second_look(text, avg_logprob, EXPECTED))
    LOOKS[hash(pcm)] = Look(zee_addressed(text, EXPECTED), tuple(reasons), second)
    heard = transcribe_full_window(pcm, TINY_EN) if second else text
    return zee_addressed(heard, EXPECTED)


CHOICES: dict[str, Hear] = {
    FULL: lambda a: transcribe_full_window(a, TINY_EN),
    SHORT_FIRST: short_first_traced,
    "short 15, the 30 s window when unsure or not what the room expects": short_first_unfilled,
    SECOND_LOOK: filled_second_look,
    "short 15 (the speaker door's)": lambda a: transcribe_pcm16(a, TINY_EN, min_window_s=15),
    "short 15 + fill -60 dBFS": lambda a: transcribe_pcm16(with_fill(a), TINY_EN, min_window_s=15),
    "short 15 + fill -50 dBFS": lambda a: transcribe_pcm16(with_fill(a, -50), TINY_EN, min_window_s=15),
    "short 15 + fill -70 dBFS": lambda a: transcribe_pcm16(with_fill(a, -70), TINY_EN, min_window_s=15),
    "short 20": lambda a: transcribe_pcm16(a, TINY_EN, min_window_s=20),
    "short 20 + fill -60 dBFS": lambda a: transcribe_pcm16(with_fill(a), TINY_EN, min_window_s=20),
    "short 24": lambda a: transcribe_pcm16(a, TINY_EN, min_window_s=24),
    "base full (multilingual base, English)": lambda a: transcribe_full_window(a, BASE_EN),
}


def shifted(clips: list[Clip]) -> list[Clip]:
    """Each clip as it is, with its speech `SHIFT_S` earlier and `SHIFT_S` later in the segment."""
    cut = int(SHIFT_S * RATE) * 2
    return [
        *clips,
        *(Clip(c.text, c.source + f" (lead {LEAD_S - SHIFT_S:.1f} s)", c.audio[cut:]) for c in clips),
        *(Clip(c.text, c.source + f" (lead {LEAD_S + SHIFT_S:.1f} s)", bytes(cut) + c.audio) for c in clips),
    ]


@dataclass
class Heard:
    clip: Clip
    text: str
    errors: int
    words: int
    seconds: float


def hear_all(hear: Hear, clips: list[Clip]) -> list[Heard]:
    results = []
    for clip in clips:
        started = time.perf_counter()
        text = hear(clip.audio)
        took = time.perf_counter() - started
        reference = words(clip.text)
        results.append(Heard(clip, text, edit_distance(reference, words(text)), len(reference), took))
    return results


def wer(heard: list[Heard]) -> float:
    return sum(h.errors for h in heard) / max(1, sum(h.words for h in heard))


def median_ms(heard: list[Heard]) -> float:
    return statistics.median(h.seconds for h in heard) * 1000 if heard else float("nan")


def active_dbm0(pcm8k: bytes) -> float:
    """Active speech level: RMS over the 20 ms frames louder than -50 dBFS, in dBm0."""
    samples = np.frombuffer(pcm8k, dtype="<i2").astype(np.float64) / 32768.0
    frame = LINE_RATE // 50
    frames = samples[: len(samples) // frame * frame].reshape(-1, frame)
    energy = np.mean(frames**2, axis=1)
    active = energy[energy > 10 ** (-50 / 10)]
    if not len(active):
        return float("-inf")
    return 10 * math.log10(float(np.mean(active))) + DBM0_FROM_DBFS


@dataclass
class Spoken:
    text: str
    heard: str
    errors: int
    words: int
    level_dbm0: float
    peak: float


async def speak_down_the_line(text: str, emotion: str | None, hear: Hear) -> Spoken:
    ssml = await strip_stray_tags(await emotion_to_ssml(text, text_type_for(emotion)), "")
    pcm, rate = await synthesize_neural(ssml)
    assert rate == HIBARI_RATE
    line = LineSignal()
    at_8k = await line.feed(pcm, rate) + await line.flush()
    ulaw: bytes = await pcm_to_ulaw(at_8k, LINE_RATE, LINE_RATE, create_stream_resampler())
    decoded: bytes = await ulaw_to_pcm(ulaw, LINE_RATE, RATE, create_stream_resampler())
    heard = await asyncio.to_thread(hear, padded(decoded))
    reference = words(text)
    samples = np.frombuffer(at_8k, dtype="<i2").astype(np.float64) / 32768.0
    peak = float(np.max(np.abs(samples))) if len(samples) else 0.0
    return Spoken(text, heard, edit_distance(reference, words(heard)), len(reference), active_dbm0(at_8k), peak)


SOX_SUFFIX = " [clips up through Pipecat's SoX resampler]"


async def run(limit: int | None, shifts: bool = False, choices: list[str] | None = None, line_in: str = LINE_IN) -> str:
    set_models_dir(Path(tempfile.mkdtemp(prefix="avagenc-bench-models-")))
    preload_hibari()
    whisper_model(TINY_EN.model)
    whisper_model(BASE_EN.model)
    ways = [LINE_IN, SOX_IN] if line_in == "both" else [line_in]
    sets: dict[str, list[Clip]] = {}
    commands: list[Clip] = []
    people: list[Clip] = []
    for way in ways:
        commands, people = await command_clips(way), await people_clips(way)
        if limit:
            commands, people = commands[: 2 * limit], people[:limit]
        sets[way] = shifted(commands + people) if shifts else commands + people
    clips = sets[ways[0]]
    hear_all(CHOICES[FULL], clips[:2])  # warm-up
    chosen_choices = {name: hear for name, hear in CHOICES.items() if not choices or name in (FULL, *choices)}
    results: dict[str, list[Heard]] = {}
    for way, way_clips in sets.items():
        suffix = "" if way == ways[0] else SOX_SUFFIX
        for name, hear in chosen_choices.items():
            results[name + suffix] = await asyncio.to_thread(hear_all, hear, way_clips)
    full = results[FULL]
    devices = {w for d in SANDBOX_DEVICE_NAMES for w in words(d)}
    fit = [  # no more word errors than the full window, and every device word it heard (same clips)
        name
        for name, heard in results.items()
        if not name.endswith(SOX_SUFFIX)
        and sum(h.errors for h in heard) <= sum(h.errors for h in full)
        and hit_rate(heard, devices)[1] >= hit_rate(full, devices)[1]
    ]
    chosen = min(fit, key=lambda name: median_ms(results[name]))
    replies = REPLIES[:limit] if limit else REPLIES
    spoken = [await speak_down_the_line(text, emotion, CHOICES[FULL]) for text, emotion in (*replies, *NAMES)]
    text = report(results, chosen, spoken, len(commands), len(people), shifts)
    if SHORT_FIRST in results:
        text += report_second_looks(results[SHORT_FIRST], results[FULL], devices)
    return text


def report_second_looks(door: list[Heard], full: list[Heard], devices: set[str]) -> str:
    """Each reason for a second look weighed, and each subset of them, on the same clips."""
    looks = [LOOKS[hash(h.clip.audio)] for h in door]
    lines = [
        "",
        "### The phone door's second looks, reason by reason",
        "",
        "| reason | clips it applies to | alone on them | second look changed the words | word errors "
        "short / after | device words heard short / after |",
        "|---|---:|---:|---:|---:|---:|",
    ]

    def scored(text: str, h: Heard) -> tuple[int, int]:
        reference = words(h.clip.text)
        return edit_distance(reference, words(text)), said(reference, words(text), devices)[1]

    for reason in (UNSURE, NO_DEVICE, NEAR):
        picked = [(h, look) for h, look in zip(door, looks, strict=True) if reason in look.reasons]
        alone = sum(1 for _, look in picked if look.reasons == (reason,))
        changed = sum(1 for h, look in picked if look.second and words(h.text) != words(look.short))
        short = [scored(look.short, h) for h, look in picked]
        after = [scored(h.text, h) for h, _ in picked]
        lines.append(
            f"| {reason} | {len(picked)} | {alone} | {changed} | {sum(e for e, _ in short)} / "
            f"{sum(e for e, _ in after)} | {sum(d for _, d in short)} / {sum(d for _, d in after)} |"
        )
    lines += [
        "",
        "What each set of reasons would give on these clips (the 30 s window's words from this run's "
        "second look where one ran, else from the `full` choice):",
        "",
        "| second look for | clips heard twice | word errors | device words heard |",
        "|---|---:|---:|---:|",
    ]
    full_errors = sum(h.errors for h in full)
    full_devices = hit_rate(full, devices)[1]
    for size in range(4):
        for subset in itertools.combinations((UNSURE, NO_DEVICE, NEAR), size):
            errors = heard_devices = twice = 0
            for h, f, look in zip(door, full, looks, strict=True):
                again = any(r in look.reasons for r in subset)
                window = h.text if look.second else zee_addressed(f.text, EXPECTED)
                e, d = scored(window if again else look.short, h)
                errors, heard_devices, twice = errors + e, heard_devices + d, twice + again
            lines.append(f"| {', '.join(subset) or 'nothing'} | {twice} | {errors} | {heard_devices} |")
    lines += ["", f"The 30 s window alone: {full_errors} word errors, {full_devices} device words heard.", ""]
    return "\n".join(lines)


def report(
    results: dict[str, list[Heard]], chosen: str, spoken: list[Spoken], commands: int, people: int, shifts: bool
) -> str:
    lines = [
        f"## Narrowband hearing and speaking ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {cpu_model()}, Python {platform.python_version()}. {commands} command clips ({len(COMMANDS)} "
        f"commands and {len(ADDRESSED)} naming the team, x neural voice and espeak-ng) and {people} phrases in "
        "other espeak-ng voices, each down an 8 kHz μ-law line and back up to 16 kHz; every choice hears every "
        "clip in this run" + (", each at three places in its segment (`--shifts`)." if shifts else "."),
        "",
        "| choice | word errors, commands | word errors, other voices | WER, all | device words heard "
        "| time per clip p50 | max |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    devices = {w for d in SANDBOX_DEVICE_NAMES for w in words(d)}
    for name, heard in results.items():
        ours = [h for h in heard if not h.clip.source.startswith("espeak-ng ")]
        theirs = [h for h in heard if h.clip.source.startswith("espeak-ng ")]
        mark = " **chosen**" if name == chosen else ""
        said_devices, heard_devices = hit_rate(heard, devices)
        lines.append(
            f"| {name}{mark} | {sum(h.errors for h in ours)} | {sum(h.errors for h in theirs)} | {wer(heard):.1%} | "
            f"{heard_devices} of {said_devices} | {median_ms(heard):.0f} ms | "
            f"{max(h.seconds for h in heard) * 1000:.0f} ms |"
        )
    lines += ["", "Misheard, by choice:", ""]
    for name, heard in results.items():
        wrong = [f"{h.clip.text!r} ({h.clip.source}) -> {h.text!r}" for h in heard if h.errors]
        lines.append(f"- {name}: " + ("; ".join(wrong) if wrong else "none"))
    words_total = sum(s.words for s in spoken)
    errors = sum(s.errors for s in spoken)
    levels = [s.level_dbm0 for s in spoken]
    speaking_wer = errors / max(1, words_total)
    verdict = "met" if speaking_wer <= TARGET_SPEAKING_WER else "MISSED"
    lines += [
        "",
        f"Ava's voice on the line: {len(spoken)} sentences ({words_total} words), neural voice through the "
        f"phone door's LineSignal, μ-law and back, heard by {FULL}: WER **{speaking_wer:.1%}** "
        f"(target <= {TARGET_SPEAKING_WER:.0%}: {verdict}). Active speech level on the line: median "
        f"{statistics.median(levels):.1f} dBm0, {min(levels):.1f} to {max(levels):.1f}; highest peak "
        f"{max(s.peak for s in spoken):.2f} of full scale.",
        "",
    ]
    for s in spoken:
        if s.errors:
            lines.append(f"- {s.text!r} -> {s.heard!r} ({s.errors} of {s.words})")
    return "\n".join(lines) + "\n"


async def both_doors(texts: list[tuple[str, str, str | None]]) -> tuple[list[Clip], list[Clip]]:
    """Each (text, voice, espeak voice or None for the neural one) as the speaker door hears it
    (16 kHz) and as the phone door does (down the line and back)."""
    speaker, phone = [], []
    for text, source, voice in texts:
        if voice is None:
            pcm, rate = await synthesize_neural(text)
        else:
            pcm, rate = await synthesize(text, voice=voice) if voice else await synthesize(text)
        wide = padded(await to_16k(pcm, rate))
        speaker.append(Clip(text, source, wide))
        phone.append(Clip(text, source, await down_the_line(wide)))
    return speaker, phone


def said(reference: list[str], heard: list[str], keys: set[str]) -> tuple[int, int]:
    """(how many of `keys` were said, how many of those were heard), word by word."""
    wanted = Counter(w for w in reference if w in keys)
    got = Counter(w for w in heard if w in keys)
    return sum(wanted.values()), sum(min(n, got[w]) for w, n in wanted.items())


def hit_rate(heard: list[Heard], keys: set[str]) -> tuple[int, int]:
    pairs = [said(words(h.clip.text), words(h.text), keys) for h in heard]
    return sum(p[0] for p in pairs), sum(p[1] for p in pairs)


async def run_vocabulary(limit: int | None) -> str:
    preload_hibari()
    whisper_model(TINY_EN.model)
    prompt = room_prompt()
    with_devices = room_prompt(with_devices=True)
    texts: list[tuple[str, str, str | None]] = []
    for text in (*COMMANDS[:limit], *ADDRESSED[:limit]):
        texts += [(text, "neural", None), (text, "espeak-ng", "")]
    for text, voice, speed, pitch in PEOPLE[:limit]:
        texts.append((f'<speak><prosody rate="{speed}" pitch="{pitch}">{text}</prosody></speak>', voice, voice))
    speaker, phone = await both_doors(texts)
    for clips in (speaker, phone):  # the reference is the words, not the SSML around them
        clips[:] = [Clip(_plain(c.text), c.source, c.audio) for c in clips]
    hear_all(lambda a: transcribe_full_window(a, TINY_EN), phone[:2])  # warm-up
    runs: list[tuple[str, list[Clip], Hear]] = [
        ("phone, full window, no prompt", phone, lambda a: transcribe_full_window(a, TINY_EN)),
        ("phone, full window + names", phone, lambda a: transcribe_full_window(a, TINY_EN, prompt=prompt)),
        (
            "phone, full window + names and devices",
            phone,
            lambda a: transcribe_full_window(a, TINY_EN, prompt=with_devices),
        ),
        ("phone, short 15 + names", phone, lambda a: transcribe_pcm16(a, TINY_EN, prompt=prompt)),
        ("speaker, short 15, no prompt", speaker, lambda a: transcribe_pcm16(a, TINY_EN)),
        ("speaker, short 15 + names", speaker, lambda a: transcribe_pcm16(a, TINY_EN, prompt=prompt)),
        (
            "speaker, short 15 + names and devices",
            speaker,
            lambda a: transcribe_pcm16(a, TINY_EN, prompt=with_devices),
        ),
    ]
    results = {name: await asyncio.to_thread(hear_all, hear, clips) for name, clips, hear in runs}
    quiet = bytes(RATE * 2)
    noise = (np.random.default_rng(1).standard_normal(RATE) * 60).astype("<i2").tobytes()
    invented = {
        name: [hear(quiet), hear(noise)] for name, _, hear in runs if "+" in name
    }  # what the prompt makes of a second of silence and of faint noise (should be nothing)
    return report_vocabulary(results, f"{prompt!r}; with devices {with_devices!r}", invented, len(speaker))


def _plain(text: str) -> str:
    return text.split(">", 2)[-1].split("<", 1)[0] if text.startswith("<speak>") else text


def report_vocabulary(results: dict[str, list[Heard]], prompt: str, invented: dict[str, list[str]], clips: int) -> str:
    names = {n.lower() for n in team_names()}
    devices = {w for d in SANDBOX_DEVICE_NAMES for w in words(d)}
    lines = [
        f"## Vocabulary: the room's names, heard or not ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {cpu_model()}, Python {platform.python_version()}. {clips} clips at each door (commands and "
        "commands naming the team, neural voice and espeak-ng; phrases in other espeak-ng voices); the prompts: "
        f"{prompt}.",
        "",
        "| door, how heard | WER, all | team names heard | device words heard | time per clip p50 | max |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, heard in results.items():
        said_names, heard_names = hit_rate(heard, names)
        said_devices, heard_devices = hit_rate(heard, devices)
        lines.append(
            f"| {name} | {wer(heard):.1%} | {heard_names} of {said_names} | {heard_devices} of {said_devices} | "
            f"{median_ms(heard):.0f} ms | {max(h.seconds for h in heard) * 1000:.0f} ms |"
        )
    lines += [
        "",
        "Silence and faint noise (1 s each) with the prompt: "
        + "; ".join(f"{name}: {texts!r}" for name, texts in invented.items()),
        "",
        "Misheard:",
        "",
    ]
    for name, heard in results.items():
        wrong = [f"{h.clip.text!r} ({h.clip.source}) -> {h.text!r}" for h in heard if h.errors]
        lines.append(f"- {name}: " + ("; ".join(wrong) if wrong else "none"))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--limit", type=int, default=None, help="only the first N clips of each set (a smoke run)")
    parser.add_argument("--out", type=Path, default=RESULTS / "voice_narrowband.md")
    parser.add_argument("--shifts", action="store_true", help="every clip at three places in its segment")
    parser.add_argument(
        "--choice", action="append", default=None, help="hear by this choice (and the full window) only; repeatable"
    )
    parser.add_argument("--vocabulary", action="store_true", help="the room's prompt against none, both doors")
    parser.add_argument(
        "--line-in",
        choices=(LINE_IN, SOX_IN, "both"),
        default=LINE_IN,
        help="how clips come up from 8 kHz: the phone door's upsampler, Pipecat's SoX, or both (each heard)",
    )
    args = parser.parse_args()
    if args.vocabulary and args.out == parser.get_default("out"):
        args.out = RESULTS / "voice_vocabulary.md"
    text = asyncio.run(
        run_vocabulary(args.limit) if args.vocabulary else run(args.limit, args.shifts, args.choice, args.line_in)
    )
    write(args.out, text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
