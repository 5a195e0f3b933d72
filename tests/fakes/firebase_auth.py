"""Firebase Authentication, offline: a stateful twin of the REST services a browser signs in
with (Identity Toolkit's accounts:signUp, signInWithPassword, update, createAuthUri and
signInWithIdp; Secure Token's refresh), Google's consent step, and the certificate
endpoint the server's firebase-admin verifies against.

It keeps accounts (email, password, display name, Google identity), issues RS256 ID tokens
of a key it made, signed as Google signs them (issuer and audience of the project, `kid`
in the header), and answers errors in Firebase's shape (`{"error": {"message": "EMAIL_EXISTS"}}`),
so the web app and the server run unchanged against it (docs/webapp.md#firebase-sign-in).
The browser reaches it from the app's page, so it answers CORS as Google's services do.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, RedirectResponse, Response
from google.auth import crypt, jwt

from tests.contract.test_token_verifier_contract import _key_and_cert
from tests.fakes.servers import serve_in_process

KID = "twin-key-1"
PASSWORD_CHARS_MIN = 6  # Firebase's own minimum (WEAK_PASSWORD below it)


@dataclass
class Account:
    uid: str
    email: str
    password: str | None
    name: str
    provider: str  # password, google.com


@dataclass
class FirebaseAuthTwin:
    project_id: str
    api_key: str
    # The Google account the consent step signs in as (a person already signed in to Google).
    google_name: str = "Siti Google"
    google_email: str = "siti@example.com"
    token_lifetime_s: int = 3600
    google_declines: bool = False  # the person presses Cancel on Google's consent page
    accounts: dict[str, Account] = field(default_factory=dict)  # by uid
    refreshes: int = 0
    _key: bytes = b""
    _cert: str = ""
    _refresh: dict[str, str] = field(default_factory=dict)  # refresh token -> uid
    _idp_sessions: dict[str, str] = field(default_factory=dict)  # sessionId -> state
    _codes: dict[str, str] = field(default_factory=dict)  # code -> state

    def __post_init__(self) -> None:
        self._key, self._cert = _key_and_cert()

    def _by_email(self, email: str) -> Account | None:
        return next((a for a in self.accounts.values() if a.email == email.lower()), None)

    def id_token(self, account: Account) -> str:
        now = int(time.time())
        claims = {
            "iss": f"https://securetoken.google.com/{self.project_id}",
            "aud": self.project_id,
            "auth_time": now,
            "user_id": account.uid,
            "sub": account.uid,
            "iat": now,
            "exp": now + self.token_lifetime_s,
            "email": account.email,
            "email_verified": account.provider != "password",
            "name": account.name,
            "firebase": {"identities": {"email": [account.email]}, "sign_in_provider": account.provider},
        }
        if not account.name:
            del claims["name"]
        signer = crypt.RSASigner.from_string(self._key, key_id=KID)  # type: ignore[no-untyped-call]
        token: bytes = jwt.encode(signer, claims)  # type: ignore[no-untyped-call]
        return token.decode()

    def _signed_in(self, account: Account, **extra: Any) -> dict[str, Any]:
        refresh = secrets.token_urlsafe(24)
        self._refresh[refresh] = account.uid
        return {
            "kind": "identitytoolkit#VerifyPasswordResponse",
            "localId": account.uid,
            "email": account.email,
            "displayName": account.name,
            "idToken": self.id_token(account),
            "refreshToken": refresh,
            "expiresIn": str(self.token_lifetime_s),
            "registered": True,
            **extra,
        }

    def app(self, base_url: str) -> FastAPI:
        twin = self
        app = FastAPI()
        app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["*"], allow_headers=["*"])

        def error(message: str, status: int = 400) -> JSONResponse:
            return JSONResponse({"error": {"code": status, "message": message}}, status_code=status)

        def keyed(request: Request) -> bool:
            return request.query_params.get("key") == twin.api_key

        @app.post("/v1/accounts:signUp")
        async def sign_up(request: Request) -> Response:
            if not keyed(request):
                return error("API key not valid. Please pass a valid API key.")
            body = await request.json()
            email, password = str(body.get("email", "")).lower(), str(body.get("password", ""))
            if "@" not in email:
                return error("INVALID_EMAIL")
            if len(password) < PASSWORD_CHARS_MIN:
                return error("WEAK_PASSWORD : Password should be at least 6 characters")
            if twin._by_email(email) is not None:
                return error("EMAIL_EXISTS")
            account = Account(secrets.token_hex(14), email, password, "", "password")
            twin.accounts[account.uid] = account
            return JSONResponse(twin._signed_in(account))

        @app.post("/v1/accounts:signInWithPassword")
        async def sign_in_with_password(request: Request) -> Response:
            if not keyed(request):
                return error("API key not valid. Please pass a valid API key.")
            body = await request.json()
            account = twin._by_email(str(body.get("email", "")))
            if account is None or account.password != body.get("password"):
                return error("INVALID_LOGIN_CREDENTIALS")
            return JSONResponse(twin._signed_in(account))

        @app.post("/v1/accounts:update")
        async def update(request: Request) -> Response:
            if not keyed(request):
                return error("API key not valid. Please pass a valid API key.")
            body = await request.json()
            try:
                claims = jwt.decode(str(body.get("idToken", "")), certs={KID: twin._cert}, audience=twin.project_id)  # type: ignore[no-untyped-call]
            except ValueError:
                return error("INVALID_ID_TOKEN")
            account = twin.accounts[claims["sub"]]
            if "displayName" in body:
                account.name = str(body["displayName"])[:100]
            return JSONResponse(twin._signed_in(account))

        @app.post("/v1/accounts:createAuthUri")
        async def create_auth_uri(request: Request) -> Response:
            if not keyed(request):
                return error("API key not valid. Please pass a valid API key.")
            body = await request.json()
            if body.get("providerId") != "google.com":
                return error("INVALID_PROVIDER_ID")
            session_id, state = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
            twin._idp_sessions[session_id] = state
            query = urlencode({"redirect_uri": body["continueUri"], "state": state, "response_type": "code"})
            return JSONResponse(
                {"authUri": f"{base_url}/o/oauth2/auth?{query}", "providerId": "google.com", "sessionId": session_id}
            )

        @app.get("/o/oauth2/auth")
        async def consent(redirect_uri: str, state: str) -> Response:
            # Google's account chooser, for a person already signed in who already agreed
            # (or who cancels: Google sends back an error instead of a code).
            if twin.google_declines:
                return RedirectResponse(
                    f"{redirect_uri}?{urlencode({'state': state, 'error': 'access_denied'})}", status_code=302
                )
            code = secrets.token_urlsafe(16)
            twin._codes[code] = state
            return RedirectResponse(f"{redirect_uri}?{urlencode({'state': state, 'code': code})}", status_code=302)

        @app.post("/v1/accounts:signInWithIdp")
        async def sign_in_with_idp(request: Request) -> Response:
            if not keyed(request):
                return error("API key not valid. Please pass a valid API key.")
            body = await request.json()
            answer = parse_qs(urlsplit(str(body.get("requestUri", ""))).query)
            code, state = answer.get("code", [""])[0], answer.get("state", [""])[0]
            expected = twin._idp_sessions.pop(str(body.get("sessionId", "")), None)
            if expected is None or twin._codes.pop(code, None) != state or state != expected:
                return error("INVALID_IDP_RESPONSE")
            account = twin._by_email(twin.google_email)
            if account is None:
                account = Account(secrets.token_hex(14), twin.google_email, None, twin.google_name, "google.com")
                twin.accounts[account.uid] = account
            return JSONResponse(twin._signed_in(account, providerId="google.com", federatedId=f"g-{account.uid}"))

        @app.post("/v1/token")
        async def refresh(request: Request) -> Response:
            if not keyed(request):
                return error("API key not valid. Please pass a valid API key.")
            form = parse_qs((await request.body()).decode())
            uid = twin._refresh.pop(form.get("refresh_token", [""])[0], None)
            if form.get("grant_type") != ["refresh_token"] or uid is None:
                return error("INVALID_REFRESH_TOKEN")
            twin.refreshes += 1
            signed = twin._signed_in(twin.accounts[uid])
            return JSONResponse(
                {
                    "id_token": signed["idToken"],
                    "refresh_token": signed["refreshToken"],
                    "expires_in": signed["expiresIn"],
                    "token_type": "Bearer",
                    "user_id": uid,
                    "project_id": twin.project_id,
                }
            )

        @app.get("/certs")
        async def certs() -> Response:
            return JSONResponse({KID: twin._cert}, headers={"Cache-Control": "public, max-age=60"})

        return app


@contextlib.asynccontextmanager
async def firebase_auth_twin(project_id: str, api_key: str) -> AsyncIterator[tuple[FirebaseAuthTwin, str]]:
    """The twin served on loopback by a real uvicorn; yields it and its base URL."""
    twin = FirebaseAuthTwin(project_id, api_key)
    # Its consent step names its own address, known only once it listens: the app is
    # made then, behind a dispatcher that uvicorn is given first.
    inner: dict[str, FastAPI] = {}

    async def dispatch(scope: Any, receive: Any, send: Any) -> None:
        await inner["app"](scope, receive, send)

    async with serve_in_process(dispatch) as url:  # type: ignore[arg-type]  # any ASGI app serves
        inner["app"] = twin.app(url)
        yield twin, url
