"""The `SmartHome` port Zee acts through, and the errors it speaks.

Adapters: `SandboxHome` (a simulated home per person, kept in PostgreSQL, the default)
and `TuyaHome` (the Tuya Cloud OpenAPI). Data point codes follow Tuya's standard instruction set so
the same tool descriptions fit both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agents.errors import ToolError

# Tuya's category codes for door locks (ms, jtmspro, jtmsbh), access controllers (mk),
# garage door openers (ckmkzq) and safes (bxx): commanding one unlocks or opens something,
# so it needs the person's confirmation first (docs/agents.md#risky-actions).
RISKY_CATEGORIES = frozenset({"ms", "jtmspro", "jtmsbh", "mk", "ckmkzq", "bxx"})


@dataclass(frozen=True, slots=True)
class Device:
    id: str
    name: str
    category: str
    online: bool
    status: dict[str, Any]
    # Human names of switch channels on multi-gang devices ("switch_1" -> "Fan").
    channel_names: dict[str, str]


@dataclass(frozen=True, slots=True)
class Command:
    code: str
    value: Any


class SmartHome(Protocol):
    async def list_devices(self, *, person_id: str) -> list[Device]: ...

    async def device_status(self, *, person_id: str, device_id: str) -> dict[str, Any]: ...

    async def send_commands(self, *, person_id: str, device_id: str, commands: Sequence[Command]) -> None: ...


class DeviceNotFound(ToolError):
    type = "device_not_found"


class CommandInvalid(ToolError):
    type = "command_invalid"
