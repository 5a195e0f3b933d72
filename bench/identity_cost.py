"""What identity and limits cost a request, against a request with no auth in the same run.

The whole app (`app.server.running`) is driven in-process through httpx's ASGI transport,
so the network does not drown the difference. Rounds alternate, so machine noise hits
every kind alike:

- **baseline**: `GET /healthz` (no auth, no database);
- **authenticated**: `GET /v1/me` with a session token (parse, HMAC, the signed-out
  lookup, the person's row);
- the parts on their own: `LocalTokens.verify` (HMAC only), `Sessions.verify` (HMAC and
  the signed-out lookup), `Limits.hit` (one counting upsert, as a sign-in or a message
  pays), `Limits.take` + `release` (a live-event stream's lease).

Target: verification and the limiter each cost <= 0.5 ms p50 per request (their own
timings, and /v1/me over /healthz for verification with the person's row).

Run: .venv/bin/python -m bench.identity_cost [ROUNDS]   (DATABASE_URL: use that server
instead of an embedded one; the bench migrates it and leaves its rows behind).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from pydantic import SecretStr

from app.server import running
from chat import Limits, Rate, RateLimited
from database import EmbeddedPostgres
from settings import Settings

ROUNDS = 2_000
WARMUP = 200
RESULTS = Path(__file__).parent / "results" / "identity.md"


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
    async with running(settings) as (services, app):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
        async with client:
            signed = (await client.post("/v1/auth/local", json={"name": "Bench"})).json()
            token = signed["token"]
            headers = {"Authorization": f"Bearer {token}"}
            limits = Limits(services.pool)
            rate = Rate(max=1_000_000_000, window_s=3600)

            async def healthz() -> None:
                assert (await client.get("/healthz")).status_code == 200

            async def me() -> None:
                assert (await client.get("/v1/me", headers=headers)).status_code == 200

            async def hmac_only() -> None:
                await services.local_tokens.verify(token)

            async def sessions() -> None:
                await services.sessions.verify(token)

            async def hit() -> None:
                await limits.hit("bench:hit", rate, what="bench hits")

            async def lease() -> None:
                held = await limits.take("bench:lease", cap=1_000, ttl_s=60, refused=RateLimited("full"))
                await limits.release(held)

            kinds: dict[str, Callable[[], Awaitable[None]]] = {
                "GET /healthz (baseline, no auth)": healthz,
                "GET /v1/me (session token)": me,
                "LocalTokens.verify (HMAC)": hmac_only,
                "Sessions.verify (HMAC + signed-out lookup)": sessions,
                "Limits.hit (rate: one upsert)": hit,
                "Limits.take + release (lease)": lease,
            }
            timings: dict[str, list[float]] = {name: [] for name in kinds}
            for n in range(WARMUP + rounds):
                for name, run in kinds.items():
                    started = time.perf_counter()
                    await run()
                    if n >= WARMUP:
                        timings[name].append((time.perf_counter() - started) * 1e6)
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
    url = os.environ.get("DATABASE_URL")
    embedded: EmbeddedPostgres | None = None
    if not url:
        embedded = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="avagenc-bench-")) / "pg")
        url = embedded.start()
    try:
        text = asyncio.run(bench(url, "DATABASE_URL" if embedded is None else "embedded (pgserver)", rounds))
    finally:
        if embedded is not None:
            embedded.stop()
    text += f"Whole run: {time.perf_counter() - started:.0f} s.\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    print(text)
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
