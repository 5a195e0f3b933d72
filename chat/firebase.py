"""Firebase ID tokens, verified with `firebase-admin` (docs/http.md#authentication).

`FirebaseTokens` is the `TokenVerifier` for a server configured with a Firebase project: a
token is genuine when Google's key signed it (RS256, a `kid` among the published
certificates), for this project (audience and issuer), and it is current (`iat`, `exp`).
The SDK's own errors, whatever they are, become our `Unauthorized`, which says nothing of
why. What it names is the provider's subject (the Firebase uid); the person it belongs
to is found (or made, with the signup grant, once per subject) by the chat.

The SDK's verification is blocking (it may fetch the certificates), so it runs in a
worker thread. The certificate address can be pointed elsewhere (`certs_url`): the tests
serve certificates of a key they made, so verification runs offline, unchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import firebase_admin
from firebase_admin import auth
from google.auth.credentials import AnonymousCredentials

from chat.errors import Unauthorized
from chat.identity import TOKEN_CHARS_MAX, Session, Sessions
from chat.people import People, Person

# An ID token is a few hundred bytes to a couple of kilobytes; longer is not one.
ID_TOKEN_CHARS_MAX = 4096
# Tokens verified lately, remembered (by digest, until they expire) so a client's every
# request does not pay for the RS256 check again (bench/identity_cost.py measures both).
VERIFIED_REMEMBERED_MAX = 10_000
# firebase-admin keeps its apps by name for the whole process: each verifier takes a name
# of its own, so two servers of one project in one process (the web app's tests run one
# beside another) do not collide.
_app_numbers = itertools.count(1)


@dataclass(frozen=True, slots=True)
class ProviderIdentity:
    """Who a verified provider token names, and the session it is (for signing out)."""

    subject: str
    name: str
    session_id: str
    expires_at: int


class FirebaseTokens:
    def __init__(self, project_id: str, *, certs_url: str | None = None, app_name: str | None = None) -> None:
        self._app = firebase_admin.initialize_app(
            credential=_NoCredential(),
            options={"projectId": project_id},
            name=app_name or f"avagenc-{project_id}-{next(_app_numbers)}",
        )
        self._verified: OrderedDict[str, ProviderIdentity] = OrderedDict()
        if certs_url is not None:
            # The SDK reads the certificates' address once, into its verifier; there is no
            # public option for it, so a test (or a mirror) sets it here.
            auth._get_client(self._app)._token_verifier.id_token_verifier.cert_url = certs_url

    def close(self) -> None:
        firebase_admin.delete_app(self._app)

    def _claims(self, token: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = auth.verify_id_token(token, app=self._app)
        except Exception as exc:  # every failure (bad token, fetch error) is a refusal, said the same way
            raise Unauthorized("The token is not valid.") from exc
        return claims

    async def identity(self, token: str) -> ProviderIdentity:
        if not token or len(token) > ID_TOKEN_CHARS_MAX or not token.isascii() or token.count(".") != 2:
            raise Unauthorized("The token is not valid.")
        digest = hashlib.sha256(token.encode()).hexdigest()
        known = self._verified.get(digest)
        if known is not None and known.expires_at > time.time():
            self._verified.move_to_end(digest)
            return known
        claims = await asyncio.to_thread(self._claims, token)
        name = str(claims.get("name") or claims.get("email") or "Friend")[:100].strip() or "Friend"
        found = ProviderIdentity(
            subject=str(claims["sub"]), name=name, session_id=f"fb_{digest[:40]}", expires_at=int(claims["exp"])
        )
        self._verified[digest] = found
        while len(self._verified) > VERIFIED_REMEMBERED_MAX:
            self._verified.popitem(last=False)
        return found

    async def verify(self, token: str) -> str:
        """The Firebase uid the token names; raises `Unauthorized` otherwise."""
        return (await self.identity(token)).subject

    async def session(self, token: str) -> Session:
        """The token as a session (signed out by its digest; Firebase tokens carry no id)."""
        found = await self.identity(token)
        return Session(person_id=found.subject, session_id=found.session_id, expires_at=found.expires_at)


class FirebasePeople:
    """The `TokenVerifier` of a server signing people in with Firebase: a verified token,
    not signed out, names the person its subject belongs to; the first token of a subject
    makes the person and gives the signup grant (`on_signup`), once per verified identity
    however the name in the token changes."""

    def __init__(
        self,
        tokens: FirebaseTokens,
        sessions: Sessions,
        people: People,
        *,
        on_signup: Callable[[Person], Awaitable[None]] | None = None,
    ) -> None:
        self._tokens = tokens
        self._sessions = sessions
        self._people = people
        self._on_signup = on_signup

    async def verify(self, token: str) -> str:
        found = await self._tokens.identity(token)
        await self._sessions.check(
            Session(person_id=found.subject, session_id=found.session_id, expires_at=found.expires_at)
        )
        person, created = await self._people.sign_in_provided(found.subject, found.name)
        if created and self._on_signup is not None:
            await self._on_signup(person)
        return person.id


class _NoCredential(firebase_admin.credentials.Base):  # type: ignore[misc]  # the SDK is untyped
    """Verifying ID tokens needs only Google's public certificates, never a credential:
    the SDK is given an anonymous one, so no service account is asked for or sent."""

    def get_credential(self) -> Any:
        return AnonymousCredentials()  # type: ignore[no-untyped-call]


assert TOKEN_CHARS_MAX < ID_TOKEN_CHARS_MAX
