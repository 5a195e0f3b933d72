"""What identity and limits cost a request, against a request with no auth in the same run.

The whole app (`app.server.running`) is driven in-process through httpx's ASGI transport,
so the network does not drown the difference. Rounds alternate, so machine noise hits
every kind alike:

- **baseline**: `GET /healthz` (no auth, no database);
- **authenticated**: `GET /v1/me` with a session token (parse, HMAC, the signed-out
  lookup, the person's row);
- the parts on their own: `LocalTokens.verify` (HMAC only), `Sessions.verify` (HMAC and
  the signed-out lookup), `FirebaseTokens.verify` (firebase-admin's RS256 check of an ID
  token, signed by a key made here, its certificate served from loopback and cached by
  the SDK after the first fetch; a fresh token each time, as a first request pays, and the
  same token again, as a client's later requests pay), `Limits.hit` (one counting upsert, as a sign-in or a message
  pays) on the server's limiter (a pool of its own, no reset round trip) and, for
  comparison in the same run, on the statement pool as before, `Limits.take` + `release`
  (a live-event stream's lease), `Devices.caller` (a paired speaker's device token at the
  speaker door: remembered by the process after its first use, chat.device_tokens; and,
  for comparison, looked up every time as before: one digest lookup, "last seen" written
  at most once a minute).

Target: verification and the limiter each cost <= 0.5 ms p50 per request (their own
timings, and /v1/me over /healthz for verification with the person's row).

Run: .venv/bin/python -m bench.identity_cost [ROUNDS]   (DATABASE_URL: use that server
instead of an embedded one; the bench migrates it and leaves its rows behind).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import http.server
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from google.auth import crypt, jwt
from pydantic import SecretStr

from app.server import running
from bench.report import write
from bench.servers import postgres
from chat import Devices, Limits, Rate, RateLimited
from chat.firebase import FirebaseTokens
from settings import Settings

ROUNDS = 2_000
WARMUP = 200


def _firebase_certificates() -> tuple[bytes, str, Callable[[], None]]:
    """A key, and its certificate served the way Google serves its own (with caching)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench-securetoken")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    body = json.dumps({"k1": cert.public_bytes(serialization.Encoding.PEM).decode()}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "public, max-age=3600")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return pem, f"http://127.0.0.1:{server.server_address[1]}/certs", stop


def _id_token(signer: Any, project: str) -> str:
    now = int(time.time())
    claims = {
        "iss": f"https://securetoken.google.com/{project}",
        "aud": project,
        "sub": "uid-bench",
        "nonce": time.perf_counter_ns(),  # every token new, as every first request's is
        "iat": now - 5,
        "exp": now + 3600,
    }
    token: bytes = jwt.encode(signer, claims)  # type: ignore[no-untyped-call]
    return token.decode()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench(url: str, source: str, rounds: int) -> str:
    state = Path(tempfile.mkdtemp(prefix="avagenc-bench-identity-"))
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        avagenc_home=state,
        session_secret=SecretStr("bench-secret-" + "x" * 40),
        voice_preload=False,
        sign_ins_per_address_max=1_000_000,
    )
    key, certs_url, stop_certs = _firebase_certificates()
    firebase_tokens = FirebaseTokens("avagenc-bench", certs_url=certs_url, app_name="bench")
    signer = crypt.RSASigner.from_string(key, key_id="k1")  # type: ignore[no-untyped-call]
    id_token = _id_token(signer, "avagenc-bench")
    # Signed before the clock runs: the bench times verifying, not making, tokens.
    fresh_tokens = [_id_token(signer, "avagenc-bench") for _ in range(WARMUP + rounds)]
    async with running(settings) as (services, app):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
        async with client:
            signed = (await client.post("/v1/auth/local", json={"name": "Bench"})).json()
            token = signed["token"]
            headers = {"Authorization": f"Bearer {token}"}
            pairing = (await client.post("/v1/devices/pairing")).json()
            await client.post("/v1/devices/pair", json={"code": pairing["code"]}, headers=headers)
            polled = await client.post("/v1/devices/pairing/poll", json={"poll_secret": pairing["poll_secret"]})
            device_token = polled.json()["device_token"]
            devices = services.devices
            assert devices is not None
            assert services.limits is not None
            limits = services.limits
            # As before: every use looked up, every hit on the statement pool.
            looked_up = Devices(services.pool, pairing_ttl_s=600, devices_per_person_max=10)
            pooled = Limits(services.pool)
            rate = Rate(max=1_000_000_000, window_s=3600)

            async def healthz() -> None:
                assert (await client.get("/healthz")).status_code == 200

            async def me() -> None:
                assert (await client.get("/v1/me", headers=headers)).status_code == 200

            async def hmac_only() -> None:
                await services.local_tokens.verify(token)

            async def sessions() -> None:
                await services.sessions.verify(token)

            async def device() -> None:
                await devices.caller(device_token)

            async def device_looked_up() -> None:
                await looked_up.caller(device_token)

            async def hit() -> None:
                await limits.hit("bench:hit", rate, what="bench hits")

            async def hit_pooled() -> None:
                await pooled.hit("bench:hit-pooled", rate, what="bench hits")

            async def firebase_first() -> None:
                await firebase_tokens.verify(fresh_tokens.pop())

            async def firebase() -> None:
                await firebase_tokens.verify(id_token)

            async def lease() -> None:
                held = await limits.take("bench:lease", cap=1_000, ttl_s=60, refused=RateLimited("full"))
                await limits.release(held)

            kinds: dict[str, Callable[[], Awaitable[None]]] = {
                "GET /healthz (baseline, no auth)": healthz,
                "GET /v1/me (session token)": me,
                "LocalTokens.verify (HMAC)": hmac_only,
                "Sessions.verify (HMAC + signed-out lookup)": sessions,
                "FirebaseTokens.verify, a new token (RS256, firebase-admin)": firebase_first,
                "FirebaseTokens.verify, a token seen before": firebase,
                "Devices.caller (a speaker's device token, remembered)": device,
                "Devices.caller, looked up every time (as before: one digest lookup)": device_looked_up,
                "Limits.hit (rate: one upsert, the limiter's own pool)": hit,
                "Limits.hit on the statement pool (as before)": hit_pooled,
                "Limits.take + release (lease)": lease,
            }
            timings: dict[str, list[float]] = {name: [] for name in kinds}
            for n in range(WARMUP + rounds):
                for name, run in kinds.items():
                    started = time.perf_counter()
                    await run()
                    if n >= WARMUP:
                        timings[name].append((time.perf_counter() - started) * 1e6)
    firebase_tokens.close()
    stop_certs()
    base = statistics.median(timings["GET /healthz (baseline, no auth)"])
    lines = [
        "# Identity and limits: cost per request",
        "",
        f"Database: {source}. {rounds} rounds after {WARMUP} warm-up rounds, kinds alternating; in-process ASGI.",
        "",
        "| What | p50 µs | p95 µs | p50 over baseline µs |",
        "|---|---:|---:|---:|",
    ]
    for name, values in timings.items():
        p50 = statistics.median(values)
        over = f"{p50 - base:.0f}" if name.startswith("GET") else "—"
        lines.append(f"| {name} | {p50:.0f} | {_percentile(values, 0.95):.0f} | {over} |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    started = time.perf_counter()
    with postgres() as (url, source):
        text = asyncio.run(bench(url, source, rounds))
    text += f"Whole run: {time.perf_counter() - started:.0f} s.\n"
    print(text)
    print(f"written to {write('identity_cost', text)}")


if __name__ == "__main__":
    main()
