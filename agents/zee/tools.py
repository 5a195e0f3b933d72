"""Zee's tools, bound to one person's home (sandbox or Tuya) for one run.

Every result says which home it came from (`"account": "sandbox"` or `"live"`). Commands
to a lock, an access controller, a garage door or a safe are risky (docs/agents.md#risky-actions): they are
only proposed, and carried out by `confirm_action` after the person's own yes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agents.errors import ToolError
from agents.integrations.accounts import Account
from agents.integrations.confirmations import CONFIRMATION_SPECS, ConfirmingTools, PendingAction, PendingActions
from agents.integrations.outside import as_data
from agents.model import ToolSpec
from agents.tools import Tool, object_schema
from agents.zee.home import RISKY_CATEGORIES, Command, DeviceNotFound, SmartHome

Choose = Callable[[], Awaitable[Account[SmartHome]]]
_COMMANDS_MAX = 10


def _commands(raw: object) -> list[Command]:
    if not isinstance(raw, list) or not all(isinstance(c, dict) and "code" in c for c in raw):
        raise ToolError('commands must be a list like [{"code": "switch_led", "value": true}].')
    if len(raw) > _COMMANDS_MAX:
        raise ToolError(f"Send at most {_COMMANDS_MAX} commands at once.")
    return [Command(code=str(c["code"]), value=c.get("value")) for c in raw]


class _Zee(ConfirmingTools[SmartHome]):
    agent = "zee"

    async def list_devices(self, _: dict[str, Any]) -> dict[str, Any]:
        account = await self.choose()
        devices = await account.port.list_devices(person_id=self.person_id)
        return {
            "account": account.kind,
            "devices": [
                {
                    "id": d.id,
                    "name": as_data(d.name),
                    "category": d.category,
                    "online": d.online,
                    "status": [{"code": k, "value": v} for k, v in d.status.items()],
                    "channel_names": {k: as_data(v) for k, v in d.channel_names.items()},
                }
                for d in devices
            ],
        }

    async def device_status(self, args: dict[str, Any]) -> dict[str, Any]:
        device_id = args.get("device_id")
        if not isinstance(device_id, str) or not device_id:
            raise ToolError("device_id is required.")
        account = await self.choose()
        status = await account.port.device_status(person_id=self.person_id, device_id=device_id)
        return {"account": account.kind, "status": [{"code": k, "value": v} for k, v in status.items()]}

    async def send_commands(self, args: dict[str, Any]) -> dict[str, Any]:
        device_id = args.get("device_id")
        if not isinstance(device_id, str) or not device_id:
            raise ToolError("device_id is required.")
        commands = _commands(args.get("commands"))
        account = await self.choose()
        devices = {d.id: d for d in await account.port.list_devices(person_id=self.person_id)}
        device = devices.get(device_id)
        if device is None:
            raise DeviceNotFound(f"There is no device {device_id!r} in this home; check the id with list_devices.")
        if device.category in RISKY_CATEGORIES:
            payload = {
                "device_id": device_id,
                "device_name": as_data(device.name),
                "commands": [{"code": c.code, "value": c.value} for c in commands],
            }
            return await self.propose(account, "device_commands", payload, what="the device and what will change")
        await account.port.send_commands(person_id=self.person_id, device_id=device_id, commands=commands)
        return {"account": account.kind, "ok": True}

    async def _carry_out(self, account: Account[SmartHome], action: PendingAction) -> dict[str, Any]:
        payload = action.payload
        commands = [Command(code=str(c["code"]), value=c.get("value")) for c in payload["commands"]]
        await account.port.send_commands(person_id=self.person_id, device_id=payload["device_id"], commands=commands)
        return {"ok": True, "device_id": payload["device_id"]}


_VALUE = {"anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "string"}]}
# What the model reads; each name is a method of `_Zee`.
SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "list_devices",
        "List every device in the person's home with its id, category, online state, "
        "current status data points and the names of its switch channels.",
        object_schema({}),
    ),
    ToolSpec(
        "device_status",
        "Read the current status data points of one device, by its exact id from list_devices.",
        object_schema({"device_id": {"type": "string"}}, ("device_id",)),
    ),
    ToolSpec(
        "send_commands",
        "Send one or more data point commands to one device, e.g. "
        '[{"code": "switch_led", "value": true}] or [{"code": "percent_control", "value": 0}]. '
        "Use the exact device id from list_devices. Commands to a lock, a door or gate opener or a safe are "
        "only proposed: ask the person and call confirm_action after their yes.",
        object_schema(
            {
                "device_id": {"type": "string"},
                "commands": {
                    "type": "array",
                    "items": object_schema({"code": {"type": "string"}, "value": _VALUE}, ("code", "value")),
                },
            },
            ("device_id", "commands"),
        ),
    ),
    *CONFIRMATION_SPECS,
)


def zee_tools(
    choose: Choose, pending: PendingActions, *, person_id: str, run_id: str, by_wake_note: bool
) -> list[Tool]:
    zee = _Zee(choose, pending, person_id=person_id, run_id=run_id, by_wake=by_wake_note)
    # Zee's first step is always the device list, whose ids every other tool needs.
    return [Tool(spec, getattr(zee, spec.name), primed=spec.name == "list_devices") for spec in SPECS]
