"""What every live OAuth adapter shares: a person's bearer token, one retry after the
vendor says the token is no longer good, bounded time, and vendor status codes turned
into the agents' hints. Each adapter adds only its own reading of error bodies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import httpx

from agents.errors import ToolError
from agents.integrations.hints import (
    InputInvalid,
    NotAllowed,
    NotFound,
    rate_limited,
    retry_after_s,
    token_expired,
    unavailable,
)


class TokenSource(Protocol):
    async def token(self, person_id: str) -> str: ...

    def forget(self, person_id: str) -> None: ...


# (response) -> a more precise hint for this vendor, or None for the generic one
Refine = Callable[[httpx.Response], ToolError | None]


class BearerApi:
    def __init__(
        self, *, http: httpx.AsyncClient, base_url: str, tokens: TokenSource, service: str, refine: Refine
    ) -> None:
        self._http = http
        self._base_url = base_url.rstrip("/")
        self._tokens = tokens
        self._service = service
        self._refine = refine

    async def request(
        self, method: str, path: str, *, person_id: str, params: dict[str, Any] | None = None, json: Any = None
    ) -> httpx.Response:
        for attempt in range(2):
            token = await self._tokens.token(person_id)
            try:
                response = await self._http.request(
                    method,
                    self._base_url + path,
                    params=params,
                    json=json,
                    headers={"Authorization": f"Bearer {token}"},
                )
            except httpx.HTTPError as exc:
                raise unavailable(self._service) from exc
            if response.status_code == 401 and attempt == 0:
                self._tokens.forget(person_id)  # expired early or revoked: refresh once, then give up
                continue
            if response.status_code < 300:
                return response
            raise self._error(response)
        raise token_expired(self._service)

    def _error(self, response: httpx.Response) -> ToolError:
        refined = self._refine(response)
        if refined is not None:
            return refined
        status = response.status_code
        if status == 401:
            return token_expired(self._service)
        if status == 429:
            return rate_limited(self._service, retry_after_s=retry_after_s(response.headers.get("retry-after")))
        if status == 403:
            # Both vendors document 403 as a refusal that asking again will not change.
            return NotAllowed(f"{self._service} refused this for this account; do not retry.")
        if status == 404:
            return NotFound(f"{self._service} has no such item; check the id from a listing tool.")
        if status == 400:
            return InputInvalid(f"{self._service} refused the request as malformed; check the arguments.")
        return unavailable(self._service)


def error_body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}
