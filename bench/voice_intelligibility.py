"""Is Ava's offline voice understood? Each of her typical replies is spoken by the neural
voice and by espeak-ng, heard back by the product's own Whisper tiny.en, and scored.

- *Word error rate* (WER): word-level edit distance between the sentence and what Whisper
  heard, over the number of words in the sentences, after normalising both sides the same
  way (lower case, punctuation off, numbers written as words: Whisper writes "22" for
  "twenty two", which is not a mishearing).
- *Time to first audio* per sentence: from handing the sentence's SSML (as the pipeline's
  transforms make it, in its emotion) to the TTS until the first 40 ms audio chunk at the
  pipeline rate is ready; each TTS runs alone in this process, after a warm-up. The
  neural voice speaks a long sentence's first clause apart, as the product does, so this
  is when that first part is ready.
- Indonesian: a few of Ava's Indonesian replies spoken by espeak-ng's Indonesian voice
  (the one Indonesian voice that ships offline), heard by the multilingual Whisper base
  forced to Indonesian, with its time per clip beside tiny.en's on the English clips.

Targets: neural WER <= 8 %, time to first audio p95 <= 60 ms. `--limit N` runs
the first N sentences only (a smoke run). Writes Markdown to `--out` and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from num2words import num2words
from pipecat.audio.utils import create_stream_resampler

from bench.report import write
from bench.turn_overhead import cpu_model
from voice.engines.espeak import synthesize
from voice.engines.hibari import HIBARI_RATE, preload_hibari, speak_neural, synthesize_neural
from voice.engines.whisper import BASE_ID, TINY_EN, Recogniser, set_models_dir, transcribe_pcm16, whisper_model
from voice.prosody import emotion_to_ssml, strip_stray_tags, text_type_for

RESULTS = Path(__file__).parent / "results"
PIPELINE_RATE = 16_000
CHUNK_S = 0.04
TARGET_WER = 0.08
TARGET_TTFA_P95_MS = 60.0

# Ava's typical replies (offline model and persona style), each with the emotion it carries.
REPLIES: tuple[tuple[str, str | None], ...] = (
    ("Done, the bedroom light is on.", "relieved"),
    ("The living room light is off now.", None),
    ("I've set a reminder for five minutes from now.", None),
    ("Yori is playing some jazz in the living room.", "affectionate"),
    ("Sorry, I couldn't find a device called the garage door.", "guilty"),
    ("You have three new emails from your manager.", None),
    ("Good morning! It's sunny and twenty two degrees today.", "ecstatic"),
    ("All the lights are off now.", None),
    ("Rafal added lunch with Sarah to your calendar on Friday.", None),
    ("What can I do for you?", None),
    ("Anytime!", "affectionate"),
    ("The living room curtain is open.", None),
    ("I closed the curtain for you.", None),
    ("Your meeting with the design team starts at three o'clock.", None),
    ("I'll ask Zee to turn on the kitchen light.", None),
    ("Hmm, let me think about that for a moment.", "thinking"),
    ("That didn't work, I'm really sorry.", "devastated"),
    ("Oh no, the heater is still on!", "shocked"),
    ("I'm not sure which light you mean.", "confused"),
    ("The bedroom is at twenty one degrees.", None),
    ("Goodbye, talk to you soon.", "affectionate"),
    ("I can pass home requests to Zee, or just chat.", None),
    ("Your next reminder is at seven in the evening.", None),
    ("I found two devices in the kitchen.", None),
    ("Playing your morning playlist now.", "ecstatic"),
    ("The front door is locked.", "relieved"),
    ("I sent the email to your sister.", None),
    ("You don't have anything on your calendar tomorrow.", None),
    ("Are you sure you want me to turn everything off?", "anxious"),
    ("The music is paused.", None),
    ("Okay, I turned the volume down a little.", "shy"),
    ("Your wallet has enough for about two hours of calls.", None),
)
INDONESIAN: tuple[str, ...] = (
    "Lampu kamar tidur sudah menyala.",
    "Semua lampu sudah mati.",
    "Maaf, yang itu belum bisa aku lakukan.",
    "Tirai ruang tamu sudah terbuka.",
    "Sama sama, senang bisa membantu.",
    "Aku sudah memasang pengingat lima menit lagi.",
)

_NUMBER = re.compile(r"\d+")


def words(text: str) -> list[str]:
    """Lower case, numbers as words, punctuation off (apostrophes kept inside words)."""
    text = _NUMBER.sub(lambda m: " " + num2words(int(m.group())) + " ", text.lower())
    return re.findall(r"[a-z]+(?:'[a-z]+)?", text.replace("-", " "))


def edit_distance(reference: list[str], heard: list[str]) -> int:
    row = list(range(len(heard) + 1))
    for i in range(1, len(reference) + 1):
        diagonal, row[0] = row[0], i
        for j in range(1, len(heard) + 1):
            substitution = diagonal + (reference[i - 1] != heard[j - 1])
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, substitution)
    return row[len(heard)]


async def to_16k(pcm: bytes, rate: int) -> bytes:
    resampler = create_stream_resampler()
    return await resampler.resample(pcm, rate, PIPELINE_RATE) + await resampler.flush()


# A voice: an SSML sentence to its audio, part by part as each is ready (PCM16, rate).
Speak = Callable[[str], AsyncIterator[tuple[bytes, int]]]


@dataclass
class Scored:
    text: str
    heard: str
    errors: int
    words: int
    ttfa_s: float
    audio: bytes  # PCM16 at 16 kHz, as Whisper heard it


async def score(speak: Speak, text: str, emotion: str | None, recogniser: Recogniser) -> Scored:
    ssml = await strip_stray_tags(await emotion_to_ssml(text, text_type_for(emotion)), "")
    started = time.perf_counter()
    ttfa_s, audio = float("nan"), b""
    async for pcm, rate in speak(ssml):
        audio += await to_16k(pcm, rate)
        if ttfa_s != ttfa_s and len(audio) >= int(PIPELINE_RATE * CHUNK_S) * 2:
            ttfa_s = time.perf_counter() - started  # the first chunk the TTS yields is ready
    heard = await asyncio.to_thread(transcribe_pcm16, audio, recogniser)
    reference = words(text)
    return Scored(text, heard, edit_distance(reference, words(heard)), len(reference), ttfa_s, audio)


def wer(scored: list[Scored]) -> float:
    return sum(s.errors for s in scored) / max(1, sum(s.words for s in scored))


def quantile_ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def neural(ssml: str) -> AsyncIterator[tuple[bytes, int]]:
    async for part, _ in speak_neural(ssml):
        yield part, HIBARI_RATE


async def espeak_en(ssml: str) -> AsyncIterator[tuple[bytes, int]]:
    yield await synthesize(ssml)


async def espeak_id(ssml: str) -> AsyncIterator[tuple[bytes, int]]:
    yield await synthesize(ssml, voice="id")


async def run(limit: int | None) -> str:
    replies = REPLIES[:limit] if limit else REPLIES
    indonesian = INDONESIAN[: max(1, limit // 5)] if limit else INDONESIAN
    set_models_dir(Path(tempfile.mkdtemp(prefix="avagenc-bench-models-")))
    loaded = time.perf_counter()
    preload_hibari()
    hibari_load_s = time.perf_counter() - loaded
    whisper_model(TINY_EN.model)
    loaded = time.perf_counter()
    whisper_model(BASE_ID.model)  # joins the two halves and checks the hash first
    base_load_s = time.perf_counter() - loaded
    await synthesize_neural("Warm up.")
    await synthesize("Warm up.")

    voices: dict[str, list[Scored]] = {}
    for name, speak in (("neural (hibari-tts)", neural), ("espeak-ng", espeak_en)):
        voices[name] = [await score(speak, text, emotion, TINY_EN) for text, emotion in replies]
    base = [await score(espeak_id, text, None, BASE_ID) for text in indonesian]

    def whisper_s(scored: list[Scored], recogniser: Recogniser) -> list[float]:
        times = []
        for s in scored[:6]:
            started = time.perf_counter()
            transcribe_pcm16(s.audio, recogniser)
            times.append(time.perf_counter() - started)
        return times

    tiny_times = whisper_s(voices["espeak-ng"], TINY_EN)
    base_times = whisper_s(base, BASE_ID)
    return report(voices, base, tiny_times, base_times, hibari_load_s, base_load_s)


def report(
    voices: dict[str, list[Scored]],
    base: list[Scored],
    tiny_times: list[float],
    base_times: list[float],
    hibari_load_s: float,
    base_load_s: float,
) -> str:
    neural = voices["neural (hibari-tts)"]
    lines = [
        f"## Intelligibility of Ava's offline voice ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {cpu_model()}, Python {platform.python_version()}. {len(neural)} of Ava's typical replies,",
        "each in its emotion, heard back by Whisper tiny.en; WER after number normalisation.",
        "",
        "| voice | sentences | words | WER | time to first audio p50 / p95 | target |",
        "|---|---|---|---|---|---|",
    ]
    for name, scored in voices.items():
        ttfa = [s.ttfa_s for s in scored]
        target = (
            f"WER <= {TARGET_WER:.0%}: {'met' if wer(scored) <= TARGET_WER else 'MISSED'}; "
            f"p95 <= {TARGET_TTFA_P95_MS:.0f} ms: "
            f"{'met' if quantile_ms(ttfa, 0.95) <= TARGET_TTFA_P95_MS else 'MISSED'}"
            if scored is neural
            else "baseline"
        )
        lines.append(
            f"| {name} | {len(scored)} | {sum(s.words for s in scored)} | {wer(scored):.1%} | "
            f"{quantile_ms(ttfa, 0.5):.0f} / {quantile_ms(ttfa, 0.95):.0f} ms | {target} |"
        )
    lines += [
        "",
        f"Neural voice load: {hibari_load_s * 1000:.0f} ms (once per process, at startup).",
        "",
        "Indonesian (espeak-ng `id` voice, heard by Whisper base forced to Indonesian):",
        "",
        "| recogniser | clips | WER | time per clip p50 / max | model load |",
        "|---|---|---|---|---|",
        f"| Whisper base, `id` | {len(base)} | {wer(base):.1%} | {statistics.median(base_times) * 1000:.0f} / "
        f"{max(base_times) * 1000:.0f} ms | {base_load_s * 1000:.0f} ms (join + hash + load) |",
        f"| Whisper tiny.en (espeak-ng English clips above) | {len(tiny_times)} | - | "
        f"{statistics.median(tiny_times) * 1000:.0f} / {max(tiny_times) * 1000:.0f} ms | - |",
        "",
        "Misheard sentences:",
        "",
    ]
    for name, scored in [*voices.items(), ("Whisper base, id", base)]:
        for s in scored:
            if s.errors:
                lines.append(f"- {name}: {s.text!r} -> {s.heard!r} ({s.errors} of {s.words})")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences (a smoke run)")
    parser.add_argument("--out", type=Path, default=RESULTS / "voice_intelligibility.md")
    args = parser.parse_args()
    text = asyncio.run(run(args.limit))
    write(args.out, text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
