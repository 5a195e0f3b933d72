"""Firebase sign-in through the whole app, offline: the server is configured with a
Firebase project and verifies RS256 ID tokens with firebase-admin against certificates the
test serves. A person is their verified subject, never a typed name: the first token makes
the person and gives the signup grant once; local sign-in is off; signing out holds."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from google.auth import crypt, jwt

from app.server import running
from settings import Settings
from tests.contract.test_token_verifier_contract import _key_and_cert, certificate_endpoint

PROJECT = "avagenc-e2e"


@pytest.fixture
def signer() -> Iterator[tuple[bytes, str]]:
    key, cert = _key_and_cert()
    with certificate_endpoint({"kid-1": cert}) as url:
        yield key, url


@pytest.fixture
async def client(settings: Settings, signer: tuple[bytes, str]) -> AsyncIterator[httpx.AsyncClient]:
    configured = settings.model_copy(
        update={"firebase_project_id": PROJECT, "firebase_certs_url": signer[1], "voice_preload": False}
    )
    async with running(configured) as (_, app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
            yield http


def id_token(key: bytes, subject: str, name: str, *, issued_at: int | None = None) -> str:
    now = issued_at or int(time.time())
    claims = {
        "iss": f"https://securetoken.google.com/{PROJECT}",
        "aud": PROJECT,
        "sub": subject,
        "name": name,
        "auth_time": now - 5,
        "iat": now - 1,
        "exp": now + 3600,
    }
    signer = crypt.RSASigner.from_string(key, key_id="kid-1")  # type: ignore[no-untyped-call]
    token: bytes = jwt.encode(signer, claims)  # type: ignore[no-untyped-call]
    return token.decode()


async def test_a_verified_identity_is_one_person_with_one_grant(
    client: httpx.AsyncClient, signer: tuple[bytes, str]
) -> None:
    key = signer[0]
    first = {"Authorization": f"Bearer {id_token(key, 'uid-1', 'Budi')}"}
    renamed = {"Authorization": f"Bearer {id_token(key, 'uid-1', 'Budi Santoso', issued_at=int(time.time()) - 30)}"}
    namesake = {"Authorization": f"Bearer {id_token(key, 'uid-2', 'Budi')}"}
    me = (await client.get("/v1/me", headers=first)).json()
    assert (await client.get("/v1/me", headers=renamed)).json()["id"] == me["id"]
    other = (await client.get("/v1/me", headers=namesake)).json()
    assert other["id"] != me["id"], "the same name is not the same person"
    wallet = (await client.get("/v1/wallet/entries", headers=renamed)).json()
    grants = [e for e in wallet["entries"] if e["type"] == "signup_grant"]
    assert len(grants) == 1, wallet
    assert (await client.post("/v1/auth/local", json={"name": "Budi"})).status_code == 404
    assert (await client.post("/v1/auth/sign-out", headers=first)).status_code == 204
    assert (await client.get("/v1/me", headers=first)).status_code == 401
    assert (await client.get("/v1/me", headers=renamed)).status_code == 200
    forged_key, _ = _key_and_cert()
    forged = {"Authorization": f"Bearer {id_token(forged_key, 'uid-1', 'Budi')}"}
    assert (await client.get("/v1/me", headers=forged)).status_code == 401
