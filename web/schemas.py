"""The text API's request and response bodies, as the OpenAPI document shows them.

Requests are strict (no extra fields, no type coercion) so a wrong type is a clear 4xx
instead of a guess; limits that have their own problem type (message length) are checked
in the domain, not here, so they keep that type.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from chat import is_unkeepable


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _keepable(text: str) -> str:
    if is_unkeepable(text):
        raise ValueError("NUL characters and lone surrogates cannot be kept")
    return text


# A string the database can store and JSON can send back (a 422 otherwise, never a 500).
KeepableStr = Annotated[str, AfterValidator(_keepable)]


class LocalSignIn(_Strict):
    name: KeepableStr = Field(
        min_length=1, max_length=100, pattern=r"\S", description="Display name; the same name signs in again."
    )


class PostMessage(_Strict):
    text: str = Field(description="What the person says; at most 4,000 characters.")
    client_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9._:-]+$",
        description="A retry with the same client_id returns the first result instead of running again.",
    )


class PersonOut(BaseModel):
    id: str
    name: str
    time_zone: str
    created_at: str


class AgentOut(BaseModel):
    name: str  # the handle written after @
    display_name: str
    role: str
    domain: str


class AgentsOut(BaseModel):
    agents: list[AgentOut]


class FirebaseSignIn(BaseModel):
    """What a browser needs to sign in with Firebase Authentication's REST API."""

    project_id: str
    api_key: str | None = Field(description="the project's web API key; null: the server has none to offer")
    auth_url: str = Field(description="Identity Toolkit: accounts:signInWithPassword, signUp, createAuthUri, ...")
    token_url: str = Field(description="Secure Token: ID tokens refreshed with the refresh token")
    providers: list[str] = Field(description="the sign-in methods offered: password, google.com")


class SignInMethods(BaseModel):
    local: bool = Field(description="POST /v1/auth/local signs in by name")
    firebase: FirebaseSignIn | None = Field(description="set: sign in with Firebase and send its ID token")


class SignedIn(BaseModel):
    token: str
    user: PersonOut


class MessageOut(BaseModel):
    id: str
    seq: int
    author: str
    text: str
    created_at: str
    channel: str
    run_id: str | None
    emotions: list[str]


class RunError(BaseModel):
    type: str
    detail: str | None


class RunOut(BaseModel):
    id: str
    agent: str
    trigger: str
    parent_run_id: str | None
    trigger_message_id: str
    channel: str
    status: str
    model: str | None
    model_calls: int
    tool_calls: int
    usage: dict[str, int]
    cost_micros: int
    error: RunError | None
    started_at: str
    finished_at: str | None


class TurnOut(BaseModel):
    messages: list[MessageOut]
    runs: list[RunOut]


class MessagesPage(BaseModel):
    messages: list[MessageOut]
    has_more: bool


class TicketOut(BaseModel):
    ticket: str
    expires_in_s: int


class Problem(BaseModel):
    type: str
    title: str
    status: int
    detail: str | None = None
    errors: list[dict[str, Any]] | None = None
    # On a 500: the id the server's log line about it carries.
    correlation_id: str | None = None
