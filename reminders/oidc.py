"""`GoogleIdTokens`: Cloud Tasks' OIDC tokens checked with google-auth (the only module of
reminders that imports it). Google's signing keys are fetched and cached by google-auth;
the check runs in a worker thread under a timeout, and every failure is the same
`CallbackRefused`, never the library's own text."""

from __future__ import annotations

import asyncio
from typing import Any

from google.auth import exceptions as auth_exceptions
from google.auth.transport import requests as auth_requests
from google.oauth2 import id_token

from reminders.errors import CallbackRefused


class GoogleIdTokens:
    """`request` is google-auth's HTTP transport, used to fetch Google's public certificates
    (a test passes one serving certificates of its own)."""

    def __init__(self, *, timeout_s: float = 10.0, request: Any = None) -> None:
        self._timeout_s = timeout_s
        self._request = request if request is not None else auth_requests.Request()

    async def verify(self, *, token: str, audience: str) -> str:
        if len(token) > 4096:
            raise CallbackRefused("The ID token is not valid.")
        try:
            async with asyncio.timeout(self._timeout_s):
                claims: dict[str, Any] = await asyncio.to_thread(
                    id_token.verify_oauth2_token, token, self._request, audience
                )
        except (TimeoutError, ValueError, auth_exceptions.GoogleAuthError) as exc:
            raise CallbackRefused("The ID token is not valid.") from exc
        if claims.get("email_verified") is not True or not isinstance(claims.get("email"), str):
            raise CallbackRefused("The ID token names no verified caller.")
        return str(claims["email"])
