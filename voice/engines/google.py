"""Google Cloud speech adapters for production voice (docs/sockets.md#voice-pipeline).

Imported by the composition root only, and only when Google speech is switched on, so
the offline default never loads the Google SDKs.

Text-to-speech: only Google's HTTP (non-streaming) API takes SSML, and only non-Chirp,
non-Journey voices (Neural2, WaveNet, Standard) honour `<prosody>`. Pipecat's
`GoogleHttpTTSService` builds its own SSML around `escape(text)`, which would read our
markup aloud, so `SsmlGoogleHttpTTSService` passes the `<speak>` document made by
`voice.prosody` through unchanged, and refuses a Chirp or Journey voice outright (those
would silently ignore every emotion). Speech-to-text is Pipecat's streaming
`GoogleSTTService` (v2), which also speaks Indonesian.

Streaming text-to-speech (`ProsodyGoogleTTSService`, Chirp 3 HD voices, first audio in
about 200 ms against about 700 ms for the HTTP call, docs/sockets.md#google-speech) takes no
SSML at all, so each sentence's emotion is carried by what those voices accept: the
speaking rate of the stream (one stream per sentence, so one rate per sentence) and a
`[pause short]` / `[pause]` / `[pause long]` markup tag for the pause after it. Pitch and
volume have no field in streaming synthesis and are dropped.

Both streaming services can be pointed at another endpoint (GOOGLE_STT_ENDPOINT,
GOOGLE_TTS_ENDPOINT): a loopback one (the simulated cloud path of bench/cloudsim) is
reached over a plain channel, anything else over TLS with the service account.

Foresight (issue 28, docs/agents.md#a-speculative-first-call): Google's final result comes
well after the end of speech (its endpointer waits the pause out, ~880 ms), while its
interim results already hold the words. So the recogniser tells a `Foresight` (the turn's
end, voice.turn_end) the newest interim's words once the person has paused and that
interim covers the speech up to the pause, and Ava's first model call begins on them
while the final is awaited. "Covers" is read from Google's own `result_end_offset` (how
far into the stream's audio the result reaches): an interim reaching to within
`PAUSE_REACH_S` of the audio the VAD had heard when it reported the pause (`speech_paused`)
includes every word said before the pause; one that reaches less may miss the last word,
and a guess that misses a word is dropped and billed, which costs the person money. So
nothing is told mid-speech, nor from an interim without an end offset. Speaking again
(`speech_resumed`, or the VAD's start after its stop) withdraws what was told (`resumed`).
Google's `stability` is not read: it guesses whether an interim's words will change as
more audio comes, which says nothing about whether they reach the pause, and the fake
(bench/cloudsim/speech.py) sends one constant, so what it would buy was not measured.
When the final differs from the interim only in case or punctuation ("Turn on the
light." against "turn on the light") the turn still adopts the call: it compares words
(chat.speculation `words_of`) and keeps the foreseen spelling, so the request is equal.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

import grpc
from google.api_core.client_options import ClientOptions
from google.cloud import speech_v2, texttospeech_v1
from google.cloud.speech_v2.services.speech.transports import SpeechGrpcAsyncIOTransport
from google.cloud.texttospeech_v1.services.text_to_speech.transports import TextToSpeechGrpcAsyncIOTransport
from google.oauth2 import service_account
from pipecat.frames.frames import (
    ErrorFrame,
    Frame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    VADUserStartedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.google.stt import GoogleSTTService
from pipecat.services.google.tts import GoogleHttpTTSService, GoogleTTSService
from pipecat.services.settings import ServiceSettings, TTSSettings
from pipecat.transcriptions.language import Language
from pipecat.utils.types import is_given

from voice.prosody import read_segment
from voice.turn_end import Foresight

DEFAULT_VOICE = "en-US-Neural2-F"
DEFAULT_LANGUAGE = "en-US"
DEFAULT_STREAMING_VOICE = "en-US-Chirp3-HD-Charon"
# The speaking rates a streaming voice accepts (Google refuses the stream outside them).
RATE_MIN, RATE_MAX = 0.25, 2.0
# Chirp 3 HD's pause tags by the longest pause each stands for (docs/sockets.md#google-speech):
# the emotions' pauses run 100-500 ms (voice.prosody.PROSODY).
PAUSE_TAGS = ((150, "[pause short]"), (350, "[pause]"))
PAUSE_LONG = "[pause long]"
CHUNK_S = 0.04  # audio frames of 40 ms, as the offline voices send them
# Keep-alive pings on a channel the adapter opens itself, so an idle call's connection
# stays warm between sentences (docs/sockets.md#google-speech).
_KEEPALIVE = (("grpc.keepalive_time_ms", 20_000), ("grpc.keepalive_timeout_ms", 10_000))
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
# Voice families that skip SSML entirely in Google's API (and so in Pipecat's service).
_NO_SSML_FAMILIES = ("chirp", "journey")
# An interim that reaches this close to the audio heard when the VAD reported a pause
# covers the speech before it: the pause is reported after the call's `pause_s` (60 ms,
# voice.pipeline.TurnTiming) of quiet, and the recogniser is handed each frame before the
# VAD reads it, so the speech ended at least this long before that point. (A VOICE_PAUSE_S
# shorter than this would let an interim that far short of the pause through; a longer one
# only asks more of it.)
PAUSE_REACH_S = 0.06


class UnsupportedVoice(ValueError):
    """The Google voice cannot speak SSML prosody, so emotions would be lost."""


def check_ssml_voice(voice: str) -> None:
    """Raise `UnsupportedVoice` for a voice that ignores SSML (Chirp, Journey)."""
    if any(family in voice.lower() for family in _NO_SSML_FAMILIES):
        raise UnsupportedVoice(
            f"Google voice {voice!r} ignores SSML, so emotions would not be heard; "
            f"choose a Neural2, WaveNet or Standard voice such as {DEFAULT_VOICE!r}"
        )


def passthrough_ssml(text: str) -> str | None:
    """Our SSML unchanged, or None when the text is not an SSML document."""
    return text if text.lstrip().startswith("<speak") else None


class SsmlGoogleHttpTTSService(GoogleHttpTTSService):
    """Google HTTP TTS that speaks the per-sentence SSML from `voice.prosody` as it is."""

    def __init__(self, *, voice: str = DEFAULT_VOICE, language: str = DEFAULT_LANGUAGE, **kwargs: Any) -> None:
        check_ssml_voice(voice)  # before the client is made: fail at startup, not mid-call
        super().__init__(settings=GoogleHttpTTSService.Settings(voice=voice, language=language), **kwargs)

    def _construct_ssml(self, text: str) -> str:
        ssml = passthrough_ssml(text)
        # Text that reached us without the prosody transform still gets Google's own SSML.
        return ssml if ssml is not None else super()._construct_ssml(text)

    async def _update_settings(self, delta: ServiceSettings) -> dict[str, Any]:
        assert isinstance(delta, TTSSettings), "a TTS service is only sent TTS settings"
        # A voice change mid-call must not switch emotions off either.
        if is_given(delta.voice) and isinstance(delta.voice, str):
            check_ssml_voice(delta.voice)
        return await super()._update_settings(delta)


def is_loopback(endpoint: str) -> bool:
    """True for `127.0.0.1:port`, `localhost:port`, `[::1]:port`: a local fake, no TLS."""
    host = endpoint.rsplit(":", 1)[0] if not endpoint.startswith("[") else endpoint.split("]")[0] + "]"
    return host in _LOOPBACK


def pause_tag(pause_ms: int) -> str:
    """The markup tag for a pause of about `pause_ms` ("" for none)."""
    if pause_ms <= 0:
        return ""
    return next((tag for longest, tag in PAUSE_TAGS if pause_ms <= longest), PAUSE_LONG)


def streaming_prosody(text: str) -> tuple[str, float]:
    """One sentence (a `voice.prosody` SSML document or plain text) as Chirp 3 HD markup and
    its speaking rate. Square brackets in the words are dropped so a reply can never write
    a markup tag of its own."""
    segment = read_segment(text)
    words = " ".join(segment.text.replace("[", "").replace("]", "").split())
    tag = pause_tag(segment.pause_ms)
    markup = f"{words} {tag}" if words and tag else words
    return markup, min(max(segment.rate, RATE_MIN), RATE_MAX)


class ProsodyGoogleTTSService(GoogleTTSService):
    """Google streaming TTS (Chirp 3 HD) that speaks each sentence at its emotion's rate,
    with its emotion's pause as markup; optionally at another endpoint."""

    def __init__(
        self,
        *,
        voice: str = DEFAULT_STREAMING_VOICE,
        language: str = DEFAULT_LANGUAGE,
        endpoint: str | None = None,
        **kwargs: Any,
    ) -> None:
        self._endpoint = endpoint  # read by _create_client, which the base calls
        super().__init__(settings=GoogleTTSService.Settings(voice=voice, language=language), **kwargs)

    def _create_client(
        self, credentials: str | None, credentials_path: str | None
    ) -> texttospeech_v1.TextToSpeechAsyncClient:
        if self._endpoint is None:
            return super()._create_client(credentials, credentials_path)
        if is_loopback(self._endpoint):
            channel = grpc.aio.insecure_channel(self._endpoint, options=_KEEPALIVE)
            return texttospeech_v1.TextToSpeechAsyncClient(transport=TextToSpeechGrpcAsyncIOTransport(channel=channel))
        return texttospeech_v1.TextToSpeechAsyncClient(
            credentials=_credentials(credentials, credentials_path),
            client_options=ClientOptions(api_endpoint=self._endpoint),
        )

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        markup, rate = streaming_prosody(text)
        if not markup:
            return
        settings: TTSSettings = self._settings
        voice = texttospeech_v1.VoiceSelectionParams(language_code=str(settings.language), name=str(settings.voice))
        config = texttospeech_v1.StreamingSynthesizeConfig(
            voice=voice,
            streaming_audio_config=texttospeech_v1.StreamingAudioConfig(
                audio_encoding=texttospeech_v1.AudioEncoding.PCM,
                sample_rate_hertz=self.sample_rate,
                speaking_rate=rate,
            ),
        )

        async def requests() -> AsyncIterator[texttospeech_v1.StreamingSynthesizeRequest]:
            yield texttospeech_v1.StreamingSynthesizeRequest(streaming_config=config)
            yield texttospeech_v1.StreamingSynthesizeRequest(
                input=texttospeech_v1.StreamingSynthesisInput(markup=markup)
            )

        assert isinstance(self._client, texttospeech_v1.TextToSpeechAsyncClient)
        chunk_bytes = max(2, int(self.sample_rate * CHUNK_S) * 2)
        buffer = b""
        stream: Any = None
        # Google bills the characters of a request it accepted, pause tag included, and
        # none of one it refused (docs/money.md#voice-seconds). A stream's call returns
        # before Google has answered, so its usage is reported when Google does: with its
        # first audio, at its end without audio, or when we cut it short (a barge-in) after
        # sending it whole; never for a stream that ends in an error before any audio.
        billed = False
        try:
            stream = await self._client.streaming_synthesize(requests())
            async for response in stream:
                if not billed:
                    billed = True
                    await self.start_tts_usage_metrics(markup)
                buffer += response.audio_content
                while len(buffer) >= chunk_bytes:
                    await self.stop_ttfb_metrics()
                    yield TTSAudioRawFrame(buffer[:chunk_bytes], self.sample_rate, 1, context_id=context_id)
                    buffer = buffer[chunk_bytes:]
            if not billed:
                billed = True
                await self.start_tts_usage_metrics(markup)
        except asyncio.CancelledError:
            if stream is not None and not billed:
                billed = True
                await self.start_tts_usage_metrics(markup)  # cut short after it was sent: Google has it
            raise
        except Exception as exc:  # the stream's gRPC error, said once as the pipeline's error
            yield ErrorFrame(error=f"Google streaming TTS failed: {exc}")
            return
        finally:
            # An interrupted sentence (barge-in) cancels its stream instead of leaving it to run.
            if stream is not None and hasattr(stream, "cancel"):
                stream.cancel()
        if buffer:
            await self.stop_ttfb_metrics()
            yield TTSAudioRawFrame(buffer, self.sample_rate, 1, context_id=context_id)


class EndpointGoogleSTTService(GoogleSTTService):
    """Pipecat's streaming Google STT, reached at `endpoint` when one is given, that tells
    a foresight the words of an interim result covering the speech before a pause (see the
    module docstring)."""

    def __init__(self, *, endpoint: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._foresight: Foresight | None = None
        # Seconds of audio queued for Google, and how much of it went to streams before the
        # newest one (a result's offsets count from its own stream's start).
        self._queued_s = 0.0
        self._streamed_s = 0.0
        self._stream_base_s = 0.0
        # Paused: an interim reaching this far into the newest stream covers the speech.
        self._covers_from_s: float | None = None
        self._interim: tuple[str, float] | None = None  # the newest interim: words, end offset
        self._told = ""  # the words told to the foresight since the person last spoke
        if endpoint is None:
            return
        if is_loopback(endpoint):
            channel = grpc.aio.insecure_channel(endpoint, options=_KEEPALIVE)
            self._client = speech_v2.SpeechAsyncClient(transport=SpeechGrpcAsyncIOTransport(channel=channel))
        else:
            self._client = speech_v2.SpeechAsyncClient(
                credentials=_credentials(kwargs.get("credentials"), kwargs.get("credentials_path")),
                client_options=ClientOptions(api_endpoint=endpoint),
            )

    def set_foresight(self, foresight: Foresight) -> None:
        """Tell `foresight` an interim's words once they cover the speech before a pause."""
        self._foresight = foresight

    def speech_paused(self) -> None:
        """The person fell quiet: the newest interim, or the next, may hold all they said."""
        self._covers_from_s = self._queued_s - self._stream_base_s - PAUSE_REACH_S
        self._consider()

    def speech_resumed(self) -> None:
        """The person went on: what was told no longer covers them."""
        self._covers_from_s = None
        if self._told and self._foresight is not None:
            self._told = ""
            self._foresight.resumed()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, VADUserStartedSpeakingFrame):
            self.speech_resumed()  # speaking again after the VAD's stop, not only after a pause
        await super().process_frame(frame, direction)

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        if self._streaming_task and self.sample_rate:
            self._queued_s += len(audio) / (2 * self.sample_rate)
        async for frame in super().run_stt(audio):
            yield frame

    async def _request_generator(self) -> AsyncIterator[speech_v2.StreamingRecognizeRequest]:
        # A new stream (Pipecat reconnects past Google's stream limit or after an error):
        # its results' offsets count from the audio it is sent first.
        self._stream_base_s = self._streamed_s
        requests: AsyncIterator[speech_v2.StreamingRecognizeRequest] = super()._request_generator()  # type: ignore[no-untyped-call]  # untyped in Pipecat 1.14
        async for request in requests:
            if request.audio and self.sample_rate:
                self._streamed_s += len(request.audio) / (2 * self.sample_rate)
            yield request

    async def push_frame(self, frame: Frame, direction: FrameDirection = FrameDirection.DOWNSTREAM) -> None:
        if isinstance(frame, InterimTranscriptionFrame) and frame.text.strip():
            end = getattr(frame.result, "result_end_offset", None)
            # No end offset: where the words reach is unknown, so they are never told.
            end_s = end.total_seconds() if end else -1.0
            self._interim = (frame.text.strip(), end_s)
            self._consider()
        elif isinstance(frame, TranscriptionFrame):
            # The final: the turn takes the words from here (voice.turn_end).
            self._interim, self._covers_from_s, self._told = None, None, ""
        await super().push_frame(frame, direction)

    def _consider(self) -> None:
        """Tell the newest interim's words if the person has paused and they reach the pause."""
        if self._foresight is None or self._covers_from_s is None or self._interim is None:
            return
        words, end_s = self._interim
        if end_s < self._covers_from_s or words == self._told:
            return
        self._told = words
        self._foresight.heard(words)


def google_stt(
    credentials_path: str, languages: Sequence[str], *, endpoint: str | None = None, **kwargs: Any
) -> EndpointGoogleSTTService:
    """Pipecat's streaming Google STT (v2) for the given BCP-47 codes (e.g. "en-US",
    "id-ID"), at `endpoint` if given."""
    assert languages, "at least one language"
    return EndpointGoogleSTTService(
        endpoint=endpoint,
        credentials_path=credentials_path,
        settings=GoogleSTTService.Settings(languages=[Language(code) for code in languages]),
        **kwargs,
    )


def _credentials(credentials: str | None, credentials_path: str | None) -> service_account.Credentials:
    if credentials:
        import json

        account: service_account.Credentials = service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
            json.loads(credentials)
        )
        return account
    if credentials_path:
        from_file: service_account.Credentials = service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call]
            credentials_path
        )
        return from_file
    raise ValueError("a service account is needed to reach Google speech")
