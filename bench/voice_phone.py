"""The phone door at the speaker door's pace? End of speech -> first audible reply over a
phone call (`WS /v1/voice/phone`, Twilio Media Streams, docs/sockets.md#phone-stream),
beside the partner speaker door measured the same way in the same run, 1 call and
several simultaneous calls, with where each turn's time went on the server.

The speaker clients are `bench.voice_latency`'s. The phone client is a Twilio Media Streams
peer as Twilio behaves:

- it dials in as a real call does: its person verifies a number of their own (`POST
  /v1/phones`, the code read from the server's log, where the offline stand-in writes it),
  and Twilio's signed voice webhook for a call from that number answers TwiML carrying a
  single-use call token (the phone door takes nothing else, docs/sockets.md#authentication);
- it sends `connected`, then `start` (stream and call ids, `audio/x-mulaw` at 8000 Hz, the
  call token as a custom parameter), then a `media` event every 20 ms for the
  whole call, numbered (`sequenceNumber`, `chunk`, `timestamp`), 160 bytes of base64 μ-law
  each: silence (0xFF) when the person is quiet, the same espeak-ng clips the speaker
  clients say (brought to 8 kHz μ-law) when they talk; and `stop` when it hangs up;
- it plays what comes back in real time: each `media` payload joins a playback buffer;
  a `mark` from the server is echoed back once the audio before it has played; a `clear`
  empties the buffer and echoes every mark still pending at once.

*End of speech* is when the last non-silent 20 ms frame of the clip was sent; *first
audible reply* is when the first `media` event whose decoded audio is above the same
threshold arrived (`bench.voice_latency` says why those two moments). The phone sends no
captions, so what the server heard and answered is read from its frame timeline
(`bench.voice_server`'s observer, which also gives the stages of each turn).

Levels, in this order so that the machine's drift touches both doors alike: speaker 1
call, phone 1 call, the same phone call heard as before issue 29's short window (every
utterance through the 30 s window: `bench.voice_server`'s `FULL_WINDOW_TAG`), speaker
`--calls` simultaneous calls, phone the same. The target is
the phone's p50 at one call <= 1.2x the speaker's in the same run. `make bench` runs a short
setting (`--utterances 6 --per-call 2`). Exit 1 only when a single call got fewer than half
the replies asked for (the door is broken); simultaneous calls short of replies (a machine
shared with other work queues them behind the recogniser past a caller's 20 s) and a missed
target are reported, not failed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
import json
import os
import platform
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from xml.etree import ElementTree

import httpx
import numpy as np
from pipecat.audio.resamplers.base_audio_resampler import BaseAudioResampler
from pipecat.audio.utils import create_stream_resampler, pcm_to_ulaw, ulaw_to_pcm
from pipecat.audio.vad.vad_analyzer import VADState
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bench.report import write
from bench.servers import BenchFailed, exit_with, logs_kept_on_failure
from bench.turn_overhead import Watched, cpu_model, fresh_database, postmaster_pid
from bench.voice_latency import (
    FRAME_BYTES,
    FRAME_S,
    SAYINGS,
    SILENT_RMS,
    STAGES,
    WARM_UP,
    Clip,
    Dial,
    Heard,
    Turn,
    VoiceCall,
    attach_timelines,
    level,
    make_clip,
    quantiles_ms,
    spans_s,
    voice_call,
    voice_server,
    with_cpu,
)
from bench.voice_server import FULL_WINDOW_TAG, TWILIO_AUTH_TOKEN
from voice.phone_line import LineUpsampler
from voice.pipeline import TurnTiming, call_vad

RESULTS = Path(__file__).parent / "results"
LINE_RATE = 8_000
ULAW_FRAME = int(LINE_RATE * FRAME_S)  # one byte per sample
ULAW_SILENCE = b"\xff" * ULAW_FRAME
STREAM_SID = "MZbench0000000000000000000000000"
TARGET_RATIO = 1.2  # phone p50 against the speaker's, one call, same run
# The same single call heard as phone calls were before the short window (the 30 s window
# for every utterance), measured beside it in the same run.
BEFORE = "phone, 1 call, 30 s window (before)"


def _ulaw_table() -> np.ndarray:
    """G.711 μ-law byte -> linear PCM16."""
    u = ~np.arange(256, dtype=np.uint8)
    exponent = (u >> 4) & 0x07
    magnitude = (((u & 0x0F).astype(np.int32) << 3) + 0x84) << exponent.astype(np.int32)
    return np.where(u & 0x80, -(magnitude - 0x84), magnitude - 0x84).astype(np.int16)


ULAW_TO_PCM = _ulaw_table()


def ulaw_rms(ulaw: bytes) -> float:
    samples = ULAW_TO_PCM[np.frombuffer(ulaw, dtype=np.uint8)].astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if len(samples) else 0.0


async def phone_clip(clip: Clip) -> Clip:
    """The same utterance as 20 ms frames of 8 kHz μ-law, with the same timing."""
    audio = b"".join(clip.frames)
    ulaw: bytes = await pcm_to_ulaw(audio, 16_000, LINE_RATE, create_stream_resampler())
    ulaw += b"\xff" * (-len(ulaw) % ULAW_FRAME)
    frames = tuple(ulaw[i : i + ULAW_FRAME] for i in range(0, len(ulaw), ULAW_FRAME))
    loud = [i for i, frame in enumerate(frames) if ulaw_rms(frame) > SILENT_RMS]
    if not loud:
        raise BenchFailed(f"the phone clip of {clip.text!r} is silent")
    return Clip(clip.text, clip.expected, clip.speech, frames, loud[0], loud[-1])


class PhoneCall(VoiceCall):
    """A Twilio Media Streams peer: media every 20 ms, playback in real time, marks echoed
    when played, and all pending at once on `clear`."""

    def __init__(self, ws: ClientConnection, tag: str) -> None:
        super().__init__(ws, tag)
        self.sequence = 2  # `connected` and `start` were 0 and 1
        self.chunk = 0
        self.marks_sent = 0
        self.marks_echoed = 0
        self.clears = 0
        self._played_until = 0.0
        self._pending: list[tuple[float, str]] = []  # (when its audio has played, name)

    async def _send(self, event: dict[str, Any]) -> None:
        self.sequence += 1
        await self.ws.send(json.dumps({**event, "sequenceNumber": str(self.sequence), "streamSid": STREAM_SID}))

    async def _echo(self, name: str) -> None:
        self.marks_echoed += 1
        await self._send({"event": "mark", "mark": {"name": name}})

    async def listen(self) -> None:
        async for message in self.ws:
            at = time.monotonic()
            event = json.loads(message)
            kind = event.get("event")
            if kind == "media":
                payload = base64.b64decode(event["media"]["payload"])
                self._played_until = max(at, self._played_until) + len(payload) / LINE_RATE
                self.heard.append(Heard(at, payload, None, ulaw_rms(payload)))
            elif kind == "mark":
                self.marks_sent += 1
                self._pending.append((max(at, self._played_until), str(event["mark"]["name"])))
                self.heard.append(Heard(at, None, {"type": "mark"}, 0.0))
            elif kind == "clear":
                self.clears += 1
                self._played_until = at
                pending, self._pending = self._pending, []
                for _, name in pending:
                    await self._echo(name)
                self.heard.append(Heard(at, None, {"type": "clear"}, 0.0))
            else:
                self.heard.append(Heard(at, None, {"type": str(kind)}, 0.0))

    async def playback(self) -> None:
        """Echo each mark once the audio before it has played, as Twilio does."""
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            while self._pending and self._pending[0][0] <= now:
                _, name = self._pending.pop(0)
                await self._echo(name)

    async def send_frame(self, frame: bytes | None) -> None:
        self.chunk += 1
        media = {
            "track": "inbound",
            "chunk": str(self.chunk),
            "timestamp": str(self.chunk * 20),
            "payload": base64.b64encode(frame if frame is not None else ULAW_SILENCE).decode(),
        }
        await self._send({"event": "media", "media": media})


_numbers = itertools.count(1)


async def code_from_log(log_path: Path, number: str) -> str:
    """The verification code the offline stand-in wrote to the server's log for `number`."""
    marker = f"phone verification code for {number}: "
    async with asyncio.timeout(10):
        while True:
            text = await asyncio.to_thread(log_path.read_text, errors="replace")
            lines = [line for line in text.splitlines() if marker in line]
            if lines:
                return lines[-1].rsplit(marker, 1)[1].strip()
            await asyncio.sleep(0.05)


async def dial_in(port: int, token: str, tag: str, log_path: Path) -> str:
    """The call token a call from the person's verified number gets from the signed webhook."""
    from voice import twilio_signature  # the bench signs as Twilio does

    number = f"+62811{os.getpid() % 10_000:04d}{next(_numbers):04d}"
    person = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        added = await client.post("/v1/phones", json={"number": number}, headers=person)
        if added.status_code != 202:
            raise BenchFailed(f"adding {number} failed: {added.status_code} {added.text[:300]}")
        code = await code_from_log(log_path, number)
        verified = await client.post(f"/v1/phones/{added.json()['id']}/verify", json={"code": code}, headers=person)
        if verified.status_code != 200:
            raise BenchFailed(f"verifying {number} failed: {verified.status_code} {verified.text[:300]}")
        url = f"http://127.0.0.1:{port}/v1/voice/phone/incoming"
        form = {"AccountSid": "ACbench", "CallSid": f"CAbench{tag}", "From": number, "To": "+15005550006"}
        signature = twilio_signature(TWILIO_AUTH_TOKEN, url, list(form.items()))
        answer = await client.post(
            url,
            content=urlencode(form),
            headers={"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": signature},
        )
    if answer.status_code != 200:
        raise BenchFailed(f"the phone webhook answered {answer.status_code} {answer.text[:300]}")
    parameter = ElementTree.fromstring(answer.text).find("./Connect/Stream/Parameter")
    if parameter is None or parameter.get("name") != "call_token":
        raise BenchFailed(f"the phone webhook answered no call token: {answer.text[:300]}")
    return str(parameter.get("value"))


@contextlib.asynccontextmanager
async def phone_call(port: int, call_token: str, tag: str, lateness_s: list[float]) -> AsyncIterator[PhoneCall]:
    query = urlencode({"bench_call": tag})  # Twilio's own URL carries no query; the call token goes in `start`
    async with connect(f"ws://127.0.0.1:{port}/v1/voice/phone?{query}", max_size=2**20) as ws:
        await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        start = {
            "accountSid": "ACbench",
            "streamSid": STREAM_SID,
            "callSid": f"CAbench{tag}",
            "tracks": ["inbound"],
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": LINE_RATE, "channels": 1},
            "customParameters": {"call_token": call_token, "time_zone": "Asia/Jakarta"},
        }
        await ws.send(json.dumps({"event": "start", "sequenceNumber": "1", "start": start, "streamSid": STREAM_SID}))
        call = PhoneCall(ws, tag)
        tasks = [asyncio.create_task(c) for c in (call.listen(), call.microphone(), call.playback())]
        try:
            yield call
        finally:
            with contextlib.suppress(ConnectionClosed):
                await call._send({"event": "stop", "stop": {"accountSid": "ACbench", "callSid": f"CAbench{tag}"}})
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                    await task
            lateness_s.extend(call.lateness_s)


def from_timeline(turns: list[Turn], timelines: dict[str, list[dict[str, Any]]]) -> None:
    """What the server heard and answered on calls that send no captions (the phone)."""
    for turn in turns:
        events = timelines.get(turn.call, [])
        start, end = turn.server.get("vad_stop"), turn.server.get("first_write")
        if start is None:
            continue
        until = (end or start) + 15.0
        heard = [str(e["detail"]) for e in events if e["kind"] == "TranscriptionFrame" and start <= e["t"] <= until]
        said = [str(e["detail"]) for e in events if e["kind"] == "AggregatedTextFrame" and start <= e["t"] <= until]
        turn.heard = turn.heard or " ".join(heard[:1])
        turn.replies = turn.replies or [(text, None) for text in said]


def latencies(turns: list[Turn]) -> list[float]:
    return [t.latency_s for t in turns if t.latency_s is not None]


def ms(value: float) -> str:
    return "-" if value != value else f"{value:,.0f}"


def report(levels: dict[str, list[Turn]], context: dict[str, Any]) -> str:
    calls = context["calls"]
    p50 = {name: quantiles_ms(latencies(turns))[0] for name, turns in levels.items()}
    ratio_1 = p50["phone, 1 call"] / p50["speaker, 1 call"]
    ratio_n = p50[f"phone, {calls} calls"] / p50[f"speaker, {calls} calls"]
    lines = [
        f"## The phone door beside the speaker door ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {os.cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}; load average "
        f"{context['load_before']:.2f} before, {context['load_after']:.2f} after; "
        f"whole run {context['elapsed_s']:.0f} s. "
        f"Offline engines ({context['config']['adapters']['speech']}). "
        + "; ".join(f"{name}: {usage}" for name, usage in context["cpu"].items())
        + ".",
        "",
        "| door, level | turns with reply | p50 ms | p95 ms | phone / speaker p50 | target |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, turns in levels.items():
        a, b = quantiles_ms(latencies(turns))
        cell, target = "", ""
        if name == "phone, 1 call":
            cell = f"{ratio_1:.2f}x"
            target = f"<= {TARGET_RATIO}x: " + ("met" if ratio_1 <= TARGET_RATIO else "**missed**")
        elif name == BEFORE:
            cell = f"{p50[name] / p50['speaker, 1 call']:.2f}x"
        elif name.startswith("phone"):
            cell = "-" if ratio_n != ratio_n else f"{ratio_n:.2f}x"
        lines.append(f"| {name} | {len(latencies(turns))} of {len(turns)} | {ms(a)} | {ms(b)} | {cell} | {target} |")
    lines += [
        "",
        "Where the time goes (server-side stages from the frame observer, p50 / p95 ms):",
        "",
        "| stage | " + " | ".join(levels) + " |",
        "|---|" + "---:|" * len(levels),
    ]
    for label, start, end in STAGES:
        cells = []
        for turns in levels.values():
            a, b = quantiles_ms(spans_s(turns, start, end))
            cells.append(f"{ms(a)} / {ms(b)}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    whisper = [
        quantiles_ms([t.server["whisper_s"] for t in turns if "whisper_s" in t.server]) for turns in levels.values()
    ]
    lines.append(
        "| Pipecat metric: Whisper processing | " + " | ".join(f"{ms(a)} / {ms(b)}" for a, b in whisper) + " |"
    )
    failed = {name: sum(1 for t in turns if t.problem or not t.answered) for name, turns in levels.items()}
    lines += [
        "",
        "Turns without the expected reply: " + ", ".join(f"{name} {n}" for name, n in failed.items()) + ". "
        f"Twilio marks: {context['marks_sent']} sent by the server, {context['marks_echoed']} echoed by the "
        f"clients once played; `clear` events: {context['clears']} (Pipecat sends one as each utterance starts).",
        "",
        "Every phone turn (ms after the end of speech):",
        "",
        "| call | said | heard | reply | ms to reply | VAD stop | transcript | turn end | first write | note |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, turns in levels.items():
        if not name.startswith("phone"):
            continue
        for t in turns:
            rel = [t.server.get(k) for k in ("vad_stop", "transcript", "turn_end", "first_write")]
            row = " | ".join("-" if v is None else ms((v - t.ended_at) * 1000) for v in rel)
            reply = t.replies[0][0] if t.replies else ""
            latency = "-" if t.latency_s is None else ms(t.latency_s * 1000)
            note = t.problem or ("" if t.answered else "unexpected answer")
            lines.append(f"| {t.call} | {t.clip.text} | {t.heard} | {reply} | {latency} | {row} | {note} |")
    return "\n".join(lines) + "\n"


async def measure(
    args: argparse.Namespace, admin_url: str, pg_source: str, work: Path
) -> tuple[dict[str, list[Turn]], dict[str, Any]]:
    speaker_clips = {text: await make_clip(text, expected) for text, expected in (*SAYINGS, WARM_UP)}
    line_clips = {text: await phone_clip(clip) for text, clip in speaker_clips.items()}
    lateness_s: list[float] = []
    phones: list[PhoneCall] = []

    @contextlib.asynccontextmanager
    async def dial_phone(port: int, token: str, tag: str, lateness: list[float]) -> AsyncIterator[VoiceCall]:
        call_token = await dial_in(port, token, tag, work / "server.log")
        async with phone_call(port, call_token, tag, lateness) as call:
            phones.append(call)
            yield call

    plan_ = (
        ("speaker, 1 call", voice_call, speaker_clips, 1, args.utterances, "speaker-solo"),
        ("phone, 1 call", dial_phone, line_clips, 1, args.utterances, "phone-solo"),
        (BEFORE, dial_phone, line_clips, 1, args.utterances, FULL_WINDOW_TAG + "solo"),
        (f"speaker, {args.calls} calls", voice_call, speaker_clips, args.calls, args.per_call, "speaker-crowd"),
        (f"phone, {args.calls} calls", dial_phone, line_clips, args.calls, args.per_call, "phone-crowd"),
    )
    levels: dict[str, list[Turn]] = {}
    cpu: dict[str, str] = {}
    async with (
        fresh_database(admin_url, 40) as (database_url, _pg_version),
        voice_server(database_url, work, observe=True) as (port, pid),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
    ):
        config = (await client.get("/bench/voice/config")).raise_for_status().json()
        postmaster = await postmaster_pid(database_url) if pg_source == "embedded" else None
        watched = Watched(server=pid, postmaster=postmaster)
        for name, dial, clips, calls, wanted, prefix in plan_:

            async def work_(
                dial: Dial = dial, clips: dict[str, Clip] = clips, calls: int = calls, wanted: int = wanted,
                prefix: str = prefix,
            ) -> list[Turn]:  # fmt: skip
                return await level(dial, port, clips, calls, wanted, prefix, lateness_s)

            levels[name], cpu[name] = await with_cpu(watched, work_)
        timelines = (await client.get("/bench/voice/timelines")).raise_for_status().json()
    everything = [t for turns in levels.values() for t in turns]
    attach_timelines(everything, timelines)
    from_timeline(everything, timelines)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_name(args.out.stem + "_timelines.json").write_text(json.dumps(timelines, indent=1))
    context = {
        "config": config,
        "calls": args.calls,
        "cpu": cpu,
        "marks_sent": sum(p.marks_sent for p in phones),
        "marks_echoed": sum(p.marks_echoed for p in phones),
        "clears": sum(p.clears for p in phones),
    }
    return levels, context


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.voice_phone",
        description="End of speech -> first audible reply over the phone door, beside the speaker door.",
    )
    parser.add_argument("--utterances", type=int, default=12, help="measured turns on the single call of each door")
    parser.add_argument("--calls", type=int, default=4, help="simultaneous calls at the second level")
    parser.add_argument("--per-call", type=int, default=3, help="measured turns per simultaneous call")
    parser.add_argument("--out", type=Path, default=RESULTS / "voice_phone.md")
    parser.add_argument(
        "--vad-audio-time",
        action="store_true",
        help="only where the VAD stops after each saying, per door and way in, in audio time (no server)",
    )
    return parser.parse_args()


async def run(args: argparse.Namespace, admin_url: str, pg_source: str) -> int:
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    with logs_kept_on_failure("avagenc-bench-phone-") as work:
        levels, context = await measure(args, admin_url, pg_source, work)
    context.update(elapsed_s=time.perf_counter() - started, load_before=load_before, load_after=os.getloadavg()[0])
    text = report(levels, context)
    print(text)
    write(args.out, text)
    wanted = {name: (args.utterances if "1 call" in name else args.calls * args.per_call) for name in levels}
    short = [name for name, turns in levels.items() if len(latencies(turns)) * 2 < wanted[name]]
    if short:
        print(f"too few replies on {', '.join(short)}; those figures mean nothing", file=sys.stderr)
    # A single call that goes unanswered is broken; simultaneous calls on a machine shared with
    # other work can queue behind the recogniser past the 20 s a caller waits (reported above).
    return 1 if any("1 call" in name for name in short) else 0


# --- `--vad-audio-time`: where the VAD's stop falls, in the audio's own time -----------------


async def vad_stop_frames(frames: tuple[bytes, ...], last_loud: int, up: BaseAudioResampler | None) -> int | None:
    """Frames of 20 ms from the clip's last loud frame to the one on which the call's VAD
    (`voice.pipeline.call_vad`, the default timing) stops; μ-law frames come up through `up`."""
    vad = call_vad(TurnTiming())
    vad.set_sample_rate(16_000)
    speaking = False
    tail = (b"\xff" * ULAW_FRAME if up is not None else bytes(FRAME_BYTES),) * int(2 / FRAME_S)
    for i, frame in enumerate(frames + tail):
        pcm = frame if up is None else await ulaw_to_pcm(frame, LINE_RATE, 16_000, up)
        state = await vad.analyze_audio(pcm)
        speaking = speaking or state == VADState.SPEAKING
        if speaking and state == VADState.QUIET:
            return i - last_loud
    return None


async def vad_audio_time() -> str:
    """The end of speech -> VAD stop of each saying as the speaker door and the phone door hear
    it, counted in frames of audio (no server, no clock: the machine's load plays no part)."""
    rows: dict[str, list[float]] = {"speaker (16 kHz, no resampling)": [], "phone, Pipecat's SoX way in": []}
    rows["phone, LineUpsampler (now)"] = []
    for text, expected in SAYINGS:
        speaker = await make_clip(text, expected)
        phone = await phone_clip(speaker)
        ways: list[tuple[str, tuple[bytes, ...], int, BaseAudioResampler | None]] = [
            ("speaker (16 kHz, no resampling)", speaker.frames, speaker.last_loud, None),
            ("phone, Pipecat's SoX way in", phone.frames, phone.last_loud, create_stream_resampler()),
            ("phone, LineUpsampler (now)", phone.frames, phone.last_loud, LineUpsampler()),
        ]
        for name, frames, last, up in ways:
            stop = await vad_stop_frames(frames, last, up)
            if stop is not None:
                rows[name].append(stop * FRAME_S * 1000)
    lines = [
        f"## End of speech -> VAD stop in audio time ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"{len(SAYINGS)} sayings, espeak-ng, the call's VAD at the default timing, 20 ms frames; "
        "milliseconds of audio from the last loud frame to the frame the VAD stopped on.",
        "",
        "| door, way in | stops | p50 ms | p95 ms | max ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, stops in rows.items():
        a, b = quantiles_ms([v / 1000 for v in stops])
        lines.append(f"| {name} | {len(stops)} of {len(SAYINGS)} | {ms(a)} | {ms(b)} | {max(stops):.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    args = parse_args()
    if args.vad_audio_time:
        text = asyncio.run(vad_audio_time())
        print(text)
        write(args.out.with_name("voice_phone_vad.md"), text)
        return
    exit_with(lambda admin_url, pg_source: run(args, admin_url, pg_source))


if __name__ == "__main__":
    main()
