"""`SandboxHome`: a simulated smart home per person, kept in PostgreSQL.

Every person gets the same five devices on first use: a bedroom light, a living-room
light, an air conditioner, a curtain and the front door's lock (commands to it wait for
the person's yes). Commands are validated the way the Tuya cloud
validates them (known codes, right types, ranges), and their effect persists, so the
whole handoff path can be seen working offline and survives restarts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from agents.zee.home import Command, CommandInvalid, Device, DeviceNotFound


@dataclass(frozen=True, slots=True)
class _Range:
    low: int
    high: int


# What each category accepts: bool, an integer range, or a set of words.
_Rule = type[bool] | _Range | frozenset[str]
_RULES: dict[str, dict[str, _Rule]] = {
    "dj": {"switch_led": bool, "bright_value": _Range(10, 1000), "temp_value": _Range(0, 1000)},
    "kt": {
        "switch": bool,
        "temp_set": _Range(16, 30),
        "mode": frozenset({"cold", "wind", "dry", "auto"}),
        "fan_speed_enum": frozenset({"low", "middle", "high", "auto"}),
    },
    "cl": {"percent_control": _Range(0, 100), "control": frozenset({"open", "close", "stop"})},
    "ms": {"lock_motor_state": bool},  # a door lock: true is locked (Tuya's residential lock)
}

_SEED: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("sbx-light-bedroom", "Bedroom light", "dj", {"switch_led": False, "bright_value": 800, "temp_value": 500}),
    ("sbx-light-living", "Living room light", "dj", {"switch_led": False, "bright_value": 1000, "temp_value": 300}),
    ("sbx-ac-bedroom", "Bedroom AC", "kt", {"switch": False, "temp_set": 24, "mode": "cold", "fan_speed_enum": "auto"}),
    ("sbx-curtain-living", "Living room curtain", "cl", {"percent_control": 100, "control": "stop"}),
    # A lock, so the confirmation a risky command needs (docs/agents.md#risky-actions) is seen offline too.
    ("sbx-lock-front", "Front door", "ms", {"lock_motor_state": True}),
)
# What the sandbox home's devices are called (measured as words for the recogniser; voice/vocabulary.py).
DEVICE_NAMES: tuple[str, ...] = tuple(name for _, name, _, _ in _SEED)

_SEED_SQL = """
INSERT INTO sandbox_devices (person_id, device_id, name, category, status)
SELECT $1, d.device_id, d.name, d.category, d.status
FROM jsonb_to_recordset($2::jsonb) AS d(device_id TEXT, name TEXT, category TEXT, status JSONB)
ON CONFLICT DO NOTHING
"""
_LIST_SQL = """
SELECT device_id, name, category, status FROM sandbox_devices WHERE person_id = $1 ORDER BY name
"""
_GET_SQL = "SELECT category, status FROM sandbox_devices WHERE person_id = $1 AND device_id = $2"
_UPDATE_SQL = """
UPDATE sandbox_devices SET status = status || $3::jsonb, updated_at = now()
WHERE person_id = $1 AND device_id = $2
"""


def _validated(category: str, commands: Sequence[Command]) -> dict[str, Any]:
    rules = _RULES[category]
    change: dict[str, Any] = {}
    for command in commands:
        rule = rules.get(command.code)
        value = command.value
        if rule is None:
            raise CommandInvalid(f"This device has no data point {command.code!r}; use one of {sorted(rules)}.")
        if rule is bool:
            ok = isinstance(value, bool)
        elif isinstance(rule, _Range):
            ok = isinstance(value, int) and not isinstance(value, bool) and rule.low <= value <= rule.high
        else:
            assert isinstance(rule, frozenset)
            ok = value in rule
        if not ok:
            raise CommandInvalid(f"{value!r} is not a valid value for {command.code!r}.")
        change[command.code] = value
    # A curtain's word commands move it, as a real motor would.
    if category == "cl" and change.get("control") in ("open", "close"):
        change["percent_control"] = 0 if change["control"] == "open" else 100
    return change


class SandboxHome:
    """A per-person simulated home; a real, stateful twin of the Tuya adapter."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def _seed(self, person_id: str) -> None:
        rows = [{"device_id": d, "name": n, "category": c, "status": s} for d, n, c, s in _SEED]
        await self._pool.execute(_SEED_SQL, person_id, rows)

    # Seeded on a miss rather than before every call: a home request reads the home two or
    # three times, and a statement that writes nothing still costs a round trip on the
    # turn's path. A person with no home yet (or whose data was erased) gets it on the
    # first miss; an unknown device id costs one seed that writes nothing.
    async def _device(self, person_id: str, device_id: str) -> asyncpg.Record | None:
        row = await self._pool.fetchrow(_GET_SQL, person_id, device_id)
        if row is None:
            await self._seed(person_id)
            row = await self._pool.fetchrow(_GET_SQL, person_id, device_id)
        return row

    async def list_devices(self, *, person_id: str) -> list[Device]:
        rows = await self._pool.fetch(_LIST_SQL, person_id)
        if not rows:
            await self._seed(person_id)
            rows = await self._pool.fetch(_LIST_SQL, person_id)
        return [Device(r["device_id"], r["name"], r["category"], True, dict(r["status"]), {}) for r in rows]

    async def device_status(self, *, person_id: str, device_id: str) -> dict[str, Any]:
        row = await self._device(person_id, device_id)
        if row is None:
            raise DeviceNotFound(f"There is no device {device_id!r} in this home; check the id with list_devices.")
        return dict(row["status"])

    async def send_commands(self, *, person_id: str, device_id: str, commands: Sequence[Command]) -> None:
        row = await self._device(person_id, device_id)
        if row is None:
            raise DeviceNotFound(f"There is no device {device_id!r} in this home; check the id with list_devices.")
        if not commands:
            raise CommandInvalid("Send at least one command.")
        change = _validated(row["category"], commands)
        await self._pool.execute(_UPDATE_SQL, person_id, device_id, change)
