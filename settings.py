"""Every setting the product reads, in one pydantic-settings class.

Only the command line (`cli`) and the composition roots (`app`) construct `Settings`; domains
receive plain values from them and never read the environment themselves, so a test can
build the whole app from one object.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

S = TypeVar("S", bound=BaseSettings)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


# The Firebase sign-in methods the web app knows how to offer (docs/webapp.md#firebase-sign-in).
FirebaseProvider = Literal["password", "google.com"]
# host:port (or a bracketed IPv6 address and port): a gRPC endpoint, never a URL.
_HOST_PORT = r"^[^\s/:\[\]]+(:\d+)?$|^\[[0-9a-fA-F:]+\](:\d+)?$"


class Settings(BaseSettings):
    """Configuration from the environment (or a `.env` file in the working directory)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    # Where the server listens. Loopback by default: a public bind is an explicit choice.
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)

    # All local state (the embedded database's files, the generated session secret).
    avagenc_home: Path = Path(".state")

    # PostgreSQL. Unset: an embedded server is started under AVAGENC_HOME.
    database_url: str | None = None
    database_pool_max: int = Field(default=20, ge=2, le=200)
    # Turns this process runs at once (each holds one extra connection for its thread lock).
    turns_concurrent_max: int = Field(default=32, ge=1, le=500)

    # Local sign-in tokens are HMAC-signed with this. Unset: generated once and kept
    # in AVAGENC_HOME/session_secret, so tokens survive restarts.
    session_secret: SecretStr | None = None
    session_ttl_s: int = Field(default=30 * 24 * 3600, ge=60)
    # Local sign-in (a display name is the account) suits one trusted machine. On a bind
    # anyone else can reach, `avagenc serve` refuses to start unless this says so.
    local_sign_in_on_public_bind: bool = False
    # A Firebase project: people sign in with Firebase ID tokens (verified with
    # firebase-admin against Google's published certificates) and local sign-in is off.
    firebase_project_id: str | None = Field(default=None, min_length=1, max_length=100)
    # Where Google's ID token certificates are fetched (a mirror; the tests serve their own).
    firebase_certs_url: str | None = None
    # What the web app signs in with (docs/webapp.md#firebase-sign-in): the project's web
    # API key (public by design: it names the project to Google's sign-in API), the two
    # REST services' addresses (the tests point them at an offline twin), and which of
    # Firebase's sign-in methods the app offers.
    firebase_api_key: str | None = Field(default=None, min_length=1, max_length=200)
    firebase_auth_url: str = Field(default="https://identitytoolkit.googleapis.com", pattern=r"^https?://[^/?#]+$")
    firebase_token_url: str = Field(default="https://securetoken.googleapis.com", pattern=r"^https?://[^/?#]+$")
    firebase_providers: list[FirebaseProvider] = Field(
        default_factory=lambda: list[FirebaseProvider](["password", "google.com"]), min_length=1, max_length=2
    )

    # The person's zone when a request carries no `time-zone` header and none is stored.
    default_time_zone: str = "UTC"

    # The specialists in the room: their packages, in the order the team is listed
    # (docs/adding-an-agent.md). Ava always leads.
    agent_packages: list[str] = Field(default_factory=lambda: ["agents.zee", "agents.yori", "agents.rafal"])
    # Each specialist's own settings (its vendor's credentials) are declared by its package
    # and read from the environment under their own names (README: GOOGLE_CLIENT_ID, ...);
    # values given here by handle win over the environment ({"rafal": {"google_client_id": ...}}).
    specialist_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)

    # Models. With a key, every agent runs on Gemini; without, on the offline model.
    gemini_api_key: SecretStr | None = None
    gemini_model: str = "gemini-3.5-flash"
    # A model per agent where it differs from GEMINI_MODEL, by handle: {"zee": "gemini-..."}.
    gemini_models: dict[str, str] = Field(default_factory=dict)
    gemini_timeout_s: float = Field(default=90.0, gt=0)
    gemini_retries_max: int = Field(default=3, ge=0, le=10)
    # Where the Gemini API is reached: Google unless set (the simulated cloud path of
    # bench/cloudsim, a proxy). Used by every Gemini caller, agents and knowledge alike.
    gemini_base_url: str | None = None

    # The token budget of thread history sent to the model on each call.
    history_tokens_max: int = Field(default=12_000, ge=500)

    # How long a request waits for the person's thread while another turn holds it.
    thread_wait_s: float = Field(default=120.0, gt=0)

    # On SIGTERM or SIGINT: how long turns in flight (and their charges) may take to finish
    # before the server stops anyway. A second signal stops at once.
    shutdown_grace_s: float = Field(default=30.0, gt=0, le=3600)

    # How often the running server settles what an outage or a crash left: runs left
    # running, calls not charged, messages no run answers (chat/recovery.py).
    sweep_interval_s: float = Field(default=5.0, gt=0, le=3600)

    # Retention (chat/retention.py): how often the serving process prunes, and how long each
    # kind of record is kept. EVENTS_KEEP_S is the live-event resume window.
    retention_interval_s: float = Field(default=3600.0, gt=0, le=86_400)
    events_keep_s: float = Field(default=7 * 86_400, ge=3600)
    tool_records_keep_s: float = Field(default=90 * 86_400, ge=3600)
    call_records_keep_s: float = Field(default=30 * 86_400, ge=3600)
    wake_notes_keep_s: float = Field(default=30 * 86_400, ge=3600)

    # Server-Sent Events: open streams per person, and the keep-alive comment interval.
    sse_streams_per_person_max: int = Field(default=5, ge=1, le=100)
    sse_keepalive_s: float = Field(default=15.0, gt=0)

    # Limits (docs/http.md#limits), each answered 429 with Retry-After and counted in the
    # database, so they hold across every instance: sign-in attempts per client address
    # per window; messages a person may post per minute, and have in flight at once.
    sign_ins_per_address_max: int = Field(default=10, ge=1, le=1_000_000)
    sign_in_window_s: int = Field(default=60, ge=1, le=86_400)
    runs_per_person_per_minute_max: int = Field(default=30, ge=1, le=1_000_000)
    runs_in_flight_per_person_max: int = Field(default=3, ge=1, le=100)

    # A request that has not begun its answer within this long answers 503 request_timeout
    # (docs/http.md#limits); longer than THREAD_WAIT_S plus a turn's model calls, so it
    # stops only what is truly stuck. Streams (live events) are not cut once they answer.
    request_time_max_s: float = Field(default=300.0, gt=0, le=3600)

    # Paired speakers (docs/http.md#devices): how long a pairing code lives, devices a
    # person may have, pairing attempts (starting one, approving one) per client address
    # per window, and wrong codes a person may type per 15 minutes (also the wrong codes one
    # waiting speaker's code takes before it is burnt).
    device_pairing_ttl_s: int = Field(default=600, ge=30, le=3600)
    devices_per_person_max: int = Field(default=10, ge=1, le=1000)
    pairings_per_address_max: int = Field(default=10, ge=1, le=1_000_000)
    pairing_window_s: int = Field(default=60, ge=1, le=86_400)
    pairing_wrong_codes_max: int = Field(default=5, ge=1, le=1000)

    # Verified phone callers (docs/http.md#phones): how long a code lives, wrong tries that
    # burn it, codes a person and a client address may ask for per hour, numbers a person
    # may have. Per address generously: many people share one carrier-grade NAT address.
    phone_code_ttl_s: int = Field(default=600, ge=30, le=3600)
    phone_wrong_codes_max: int = Field(default=5, ge=1, le=100)
    phone_codes_per_person_per_hour_max: int = Field(default=5, ge=1, le=1000)
    phone_codes_per_address_per_hour_max: int = Field(default=20, ge=1, le=1_000_000)
    phones_per_person_max: int = Field(default=3, ge=1, le=100)
    # Twilio: the auth token checks the voice webhook's signature (unset: the webhook answers
    # 404); with the account SID and a sending number too, codes go out as text messages
    # (unset: the offline twin writes them to the server's log).
    twilio_auth_token: SecretStr | None = None
    twilio_account_sid: str | None = None
    twilio_from_number: str | None = None

    # The wallet: what a new person starts with (Rp 5,000), and the operator's API key
    # for POST /v1/admin/topups (the endpoint answers 404 while this is unset).
    signup_grant_micros: int = Field(default=5_000_000_000, ge=0, le=10**15)
    admin_api_key: SecretStr | None = None

    # Voice calls (every door): limits, and how quickly the end of a turn is decided.
    call_duration_max_s: float = Field(default=15 * 60, gt=0)
    call_idle_s: float = Field(default=120.0, gt=0)
    calls_per_process_max: int = Field(default=16, ge=1, le=1000)
    voice_vad_stop_s: float = Field(default=0.2, gt=0, le=2)
    # After the VAD's stop: the wait for more when the words sound unfinished ("turn on the"),
    # and when they sound finished ("turn on the light."); see voice/turn_end.py.
    voice_speech_timeout_s: float = Field(default=0.8, gt=0, le=5)
    # The finished wait is 0: the VAD's own start (0.1 s of voice) already outlasts any
    # wait that short, so it guarded no pause and only held the answer (voice/turn_end.py).
    voice_finished_timeout_s: float = Field(default=0.0, ge=0, le=5)
    # Unbroken speech before the VAD believes someone talks (short words need it short).
    voice_vad_start_s: float = Field(default=0.1, gt=0, le=1)
    # Quiet after which Whisper starts transcribing speculatively; 0 (or >= VOICE_VAD_STOP_S) turns it off.
    voice_pause_s: float = Field(default=0.06, ge=0, le=2)
    # On a call, begin Ava's first model call on the speculative transcript while the turn
    # ends, adopted when the turn ends on the same words (chat/speculation.py).
    speculative_first_call: bool = True
    # Load the speech-to-text model at startup (in the background) instead of on the first call.
    voice_preload: bool = True
    # `avagenc serve` answers /readyz and text before the call doors (Pipecat, WebRTC, the
    # speech engines) are built, in the background; a call meanwhile waits for them. True
    # builds them first, as before (a slower start: bench/cold_start.py).
    voice_at_start: bool = False
    # Ava's offline voice: "neural" (hibari-tts, natural, English; Indonesian falls back to
    # espeak-ng) or "espeak" (espeak-ng for every language: robotic, but always there).
    voice_tts: Literal["neural", "espeak"] = "neural"
    # Utterances Whisper transcribes at once (simultaneous calls queue beyond this); the
    # cores are shared between the workers, so more than the core count only adds memory.
    voice_stt_workers: int = Field(default=1, ge=1, le=16)
    # The shortest window (seconds) Whisper hears full-band English through; below 10 it repeats
    # itself, 30 is its own (voice/engines/whisper.py). A phone line and Indonesian keep 15.
    voice_whisper_window_min_s: int = Field(default=10, ge=10, le=30)

    # Google Cloud speech for calls: a service-account JSON file switches STT and TTS on.
    google_speech_credentials: Path | None = None
    google_tts_voice: str = "en-US-Neural2-F"
    google_stt_languages: list[str] = Field(default_factory=lambda: ["en-US", "id-ID"])
    # Which engines hear and speak on calls (docs/sockets.md#google-speech). "auto": Google's
    # streaming STT and streaming TTS with credentials, offline without. Any mix is allowed,
    # e.g. offline hearing with Google's streaming voice.
    voice_hearing: Literal["auto", "offline", "google"] = "auto"
    voice_speech: Literal["auto", "offline", "google-http", "google-streaming"] = "auto"
    # The streaming voice (Chirp 3 HD or Journey: the only ones Google streams).
    google_streaming_voice: str = "en-US-Chirp3-HD-Charon"
    # Where Google's STT / TTS are reached as host:port (Google unless set): a regional
    # endpoint, or the simulated cloud path of bench/cloudsim on 127.0.0.1.
    google_stt_endpoint: str | None = Field(
        default=None, max_length=300, pattern=r"^[^\s/:]+(:\d+)?$|^\[[0-9a-fA-F:]+\](:\d+)?$"
    )
    google_tts_endpoint: str | None = Field(
        default=None, max_length=300, pattern=r"^[^\s/:]+(:\d+)?$|^\[[0-9a-fA-F:]+\](:\d+)?$"
    )

    # Reminders (wake notes). Deliveries one process runs at once; a claim older than the
    # lease is taken to be a crashed worker's; a note is tried at most this many times.
    reminders_concurrent_max: int = Field(default=8, ge=1, le=200)
    reminders_lease_s: float = Field(default=300.0, ge=1, le=3600)
    reminders_attempts_max: int = Field(default=5, ge=1, le=50)
    # HMAC key for signed delivery callbacks. Unset: derived from the session secret.
    reminders_callback_secret: SecretStr | None = None
    # Cloud Tasks switches the reminder queue from the embedded dispatcher: the queue's full
    # path (projects/P/locations/L/queues/Q), this service's public base URL (tasks call
    # it back), and the service account whose OIDC token the callback accepts.
    cloud_tasks_queue: str | None = None
    public_base_url: str | None = None
    cloud_tasks_service_account: str | None = None
    # Firebase Cloud Messaging for push notifications: a service-account JSON file.
    fcm_credentials: Path | None = None

    # Knowledge (docs/agents.md#memory). With a Zep key the graph lives in Zep Cloud; without, in our
    # own PostgreSQL (facts read by Gemini when GEMINI_API_KEY is set, by rules otherwise).
    zep_api_key: SecretStr | None = None
    zep_base_url: str | None = None
    zep_timeout_s: float = Field(default=10.0, gt=0)
    # The Gemini model that reads facts out of messages (default: GEMINI_MODEL).
    gemini_model_knowledge: str | None = None
    # Messages per ingestion batch, and how often the worker looks for a backlog anyway.
    knowledge_batch_max: int = Field(default=50, ge=1, le=500)
    knowledge_poll_s: float = Field(default=30.0, gt=0)
    # How long GET /v1/knowledge and forget me wait for the memory service (then 503).
    knowledge_timeout_s: float = Field(default=15.0, gt=0)
    # Integrations (docs/agents.md#linking). Without a vendor's credentials its agent uses the person's
    # sandbox only; with them, a person who links their account gets the live adapter.
    # Refresh tokens are sealed with this Fernet key (44 url-safe base64 characters, e.g.
    # from `python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`).
    # Unset: generated once and kept in AVAGENC_HOME/integration_key.
    integration_token_key: SecretStr | None = None
    # Where providers send the browser back: {base}/{integration}/callback (register each verbatim).
    oauth_redirect_base_url: str = "http://127.0.0.1:8000/link"
    # Every call to a vendor API (token, Gmail, Spotify, Tuya) is bounded by this.
    integration_timeout_s: float = Field(default=10.0, gt=0, le=120)

    # Operations (docs/operations.md). Log lines as one JSON object each (a log collector
    # reads them) or as plain text with their fields appended (a terminal).
    log_format: Literal["plain", "json"] = "plain"
    # GET /metrics (Prometheus text): served while this is on; with a token, only to
    # `Authorization: Bearer <token>` (on a public address, set one).
    metrics_enabled: bool = True
    metrics_token: SecretStr | None = Field(default=None, min_length=16)  # a guessable token guards nothing
    # The first product's routes (POST /ava, /zee, …; GET /wallet, /sessions/messages, …) for
    # its web, iOS and speaker clients (docs/first-product.md).
    first_product_routes: bool = False
    # OpenTelemetry traces (one per turn) to an OTLP/HTTP collector, e.g.
    # http://127.0.0.1:4318/v1/traces; unset: no span is recorded or sent.
    traces_otlp_endpoint: str | None = Field(default=None, max_length=500, pattern=r"^https?://[^\s]+$")

    @model_validator(mode="after")
    def _waits_in_order(self) -> Settings:
        if self.voice_finished_timeout_s > self.voice_speech_timeout_s:
            raise ValueError(
                "VOICE_FINISHED_TIMEOUT_S must not exceed VOICE_SPEECH_TIMEOUT_S: "
                "a request that sounds finished never waits longer than one that trails off"
            )
        return self

    @model_validator(mode="after")
    def _google_speech_has_credentials(self) -> Settings:
        if self.google_speech_credentials is None and (
            self.voice_hearing == "google" or self.voice_speech.startswith("google")
        ):
            raise ValueError("VOICE_HEARING / VOICE_SPEECH name Google, which needs GOOGLE_SPEECH_CREDENTIALS")
        return self

    @model_validator(mode="after")
    def _cloud_tasks_complete(self) -> Settings:
        # Cloud Tasks calls the server back at its public address, as a service account
        # whose ID token the callback checks: a queue without either could never deliver.
        if self.cloud_tasks_queue:
            missing = [
                name
                for name, value in (
                    ("PUBLIC_BASE_URL", self.public_base_url),
                    ("CLOUD_TASKS_SERVICE_ACCOUNT", self.cloud_tasks_service_account),
                )
                if not value
            ]
            if missing:
                raise ValueError(f"CLOUD_TASKS_QUEUE needs {' and '.join(missing)}")
        return self

    def public_local_sign_in(self) -> str | None:
        """Why serving would be unsafe: local sign-in on a bind other machines can reach
        without LOCAL_SIGN_IN_ON_PUBLIC_BIND; None when it is not."""
        if self.firebase_project_id or self.local_sign_in_on_public_bind or _is_loopback(self.host):
            return None
        return (
            f"LOCAL_SIGN_IN_ON_PUBLIC_BIND: HOST={self.host} can be reached from other machines, where "
            "local sign-in lets anyone sign in as anyone by typing their name; bind to 127.0.0.1, "
            "or set LOCAL_SIGN_IN_ON_PUBLIC_BIND=true if every client is trusted"
        )

    def model_for(self, agent: str) -> str:
        """The Gemini model name for one agent, falling back to GEMINI_MODEL."""
        return self.gemini_models.get(agent) or self.gemini_model

    def for_specialist(self, name: str, model: type[S]) -> S:
        """A specialist package's own settings: the environment (and `.env`), under what
        `specialist_settings` gives for it."""
        return model(**self.specialist_settings.get(name, {}))
