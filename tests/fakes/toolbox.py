"""The deployment's toolbox as the composition root wires it, built with no database and no network.

Describing tools does no I/O (agents/toolbox.py), so unit tests can read what each agent
really has — the team layer, the persona-versus-tools check — without a running product.
"""

from __future__ import annotations

import base64
from datetime import datetime

from agents import Toolbox, build_specialists
from app.specialists import build_toolbox


async def _nobody_said(_: str) -> tuple[str, datetime] | None:
    return None


def described_toolbox() -> Toolbox:
    specialists = build_specialists(
        pool=None,  # type: ignore[arg-type]  # never reached: nothing is called
        http=None,  # type: ignore[arg-type]  # no vendor credentials, so no client is built
        settings={},  # each package's defaults: no vendor credentials, sandboxes only
        redirect_base_url="http://127.0.0.1:8000/link",
        token_key=base64.urlsafe_b64encode(b"k" * 32),  # a Fernet key
        state_key=b"s" * 32,
        person_said=_nobody_said,
    )
    return build_toolbox(specialists=specialists)
